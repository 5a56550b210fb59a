r"""All-sizes rules of grouped-query attention (``symuat/allsizes/groups.py``): H query heads traced as G groups of
H/G, head (g, q) reading group g; ``ext:gqa.closed-form`` proved for every size."""

from __future__ import annotations

import pytest
import sympy
from symuat_paper import ext_attention

from symuat import Identity, dims_grid, vec_r
from symuat.algebra.families import family_hstack, family_member, family_of, family_shapes
from symuat.allsizes import decide
from symuat.allsizes.families import PairIndex
from symuat.allsizes.index_types import Atom, Part, Prod, size_of
from symuat.allsizes.outside import OutsideFragment
from symuat.allsizes.splits import heads_per_group, in_domain, split_dims
from symuat.errors import ShapeError
from symuat.evidence.identity import check_identity
from symuat.evidence.verdict import Level
from symuat.layers import grouped_attention as ga


def test_the_gqa_entry_is_proved_for_every_size():
    ev = decide(ext_attention.gqa_identity()).evidence
    assert ev is not None and ev.holds
    assert "H as G·(H/G), G dividing H (head g·(H/G) + q reads group g)" in ev.detail


def test_heads_are_groups_times_places():
    dims = split_dims({"H": Atom("H"), "G": Atom("G")}, {"H": "per G"})
    assert dims["H"] == Prod((Atom("G"), Part.of("H", "per G", 1)))
    per = heads_per_group(dims["H"], dims["G"])
    assert per.name == "H/G" and not per.empty_at_one and size_of(dims["H"], {"H": 6, "G": 3}) == 6
    assert in_domain({"H": 4, "G": 2}, {"H": "per G"}) and not in_domain({"H": 3, "G": 2}, {"H": "per G"})
    with pytest.raises(OutsideFragment, match="query heads in 1 groups"):
        heads_per_group(dims["H"], 1)


def test_the_concrete_functions_are_the_libraries_grouping():
    V = sympy.Matrix([[1, 2, 3]])
    assert ga.repeat_kv(V, 6, 3, 1) == tuple(sympy.Matrix([[g]]) for g in (1, 1, 2, 2, 3, 3))
    assert [ga.kv_group(h, 6, 3) for h in range(6)] == [0, 0, 1, 1, 2, 2]
    with pytest.raises(ShapeError, match="must be positive and divide n_heads=3"):
        ga.heads_per_group(3, 2)
    with pytest.raises(ShapeError, match="not 2 groups of width d=1"):
        ga.repeat_kv(V, 4, 2, 1)


_DIMS = dims_grid(H=(1, 2), G=(1,), N=(1, 2), M=(1,), d=(1,)) + ({"H": 2, "G": 2, "N": 1, "M": 1, "d": 1},)


def _shapes(d):
    return {"X": (d["N"], d["M"]), "WV": (d["M"], d["G"] * d["d"]), "WO": (d["H"] * d["d"], d["M"]),
            **family_shapes("A", d["H"], d["N"], d["N"])}


def _lhs(e, d):
    heads = ga.repeat_kv(e["X"] * e["WV"], d["H"], d["G"], d["d"])
    return vec_r(family_hstack(lambda h: family_member(e, "A", h) * heads[h], d["H"]) * e["WO"])


def test_the_pair_index_is_the_row_major_head():
    """Σ_h A_h ⊗ (W_{V,g(h)} W_{O,h})ᵀ x' against the libraries' concatenation, with a family named A."""
    ident = Identity(shapes=_shapes, lhs=_lhs, dims=_DIMS,
                     rhs=lambda e, d: ga.grouped_closed_form(family_of(e, "A", d["H"]), e["WV"], e["WO"], d["G"])
                     * vec_r(e["X"]))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    assert decide(ident).evidence.holds


def test_a_pair_index_refuses_arithmetic():
    from symuat.allsizes.families import FamilyIndex

    h = PairIndex(FamilyIndex("a", "G"), FamilyIndex("b", "H/G"))
    with pytest.raises(OutsideFragment, match=r"arithmetic on the family index over G\*H/G"):
        h % 2
    with pytest.raises(OutsideFragment, match="compares the family index over G"):
        h == 0  # noqa: B015 - the comparison itself is the fault


def _gqa_mutants() -> dict:
    from symuat.allsizes.size_mutants import size_only_mutants

    return dict(size_only_mutants(ext_attention.gqa_identity()))


@pytest.mark.slow  # a mutation sweep over 6 size-only mutants of the GQA entry (CI's slow step)
@pytest.mark.parametrize("name", ["standard:M", "standard:N", "standard:d", "wedge:M", "wedge:N", "wedge:d"])
def test_size_only_mutants_of_the_gqa_entry_are_killed_where_g_divides_h(name):
    """The mutants in N, M, d (grids up to 2 and 1); the wedges in H and G (grids up to 4: a wedge of 5 vectors of
    length 4 on every grid point) are measured by benchmarks/bench_all_sizes.py --ids ext:gqa.closed-form."""
    mutants = _gqa_mutants()
    assert sorted(mutants) == ["standard:M", "standard:N", "standard:d", "wedge:G", "wedge:H", "wedge:M", "wedge:N",
                               "wedge:d"]
    mutant = mutants[name]
    assert check_identity(mutant, levels=[Level.SYMBOLIC]).holds, name
    ev = decide(mutant).evidence
    assert ev is not None and ev.holds is False, name
    at = ev.counterexample["dims"]
    assert at["H"] % at["G"] == 0, (name, at)
