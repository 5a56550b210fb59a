r"""All-sizes rules of rotary embeddings (``symuat/allsizes/rotary.py``): the rotary width ``r`` traced as ``r/2``
planes, the head width ``d`` as ``r + (d - r)``; the four rotary ledger entries proved for every size."""

from __future__ import annotations

import dataclasses

import pytest
import sympy
from symuat_paper import ext_attention, ext_attention_variants, ext_layers

from symuat import Identity, vec_r
from symuat.allsizes import decide
from symuat.allsizes.index_types import Atom, Part, size_of
from symuat.allsizes.outside import OutsideFragment
from symuat.allsizes.splits import in_domain, rotary_pairs, split_dims
from symuat.errors import ShapeError
from symuat.evidence.identity import check_identity
from symuat.evidence.verdict import Level
from symuat.layers import rotary
from symuat.layers.rotary import rotate_half_apply

ROTARY = {"ext:rotary.operator": ext_layers.rotary_operator_identity,
          "ext:rotary.closed-form": ext_attention.rotary_closed_form_identity,
          "ext:rotary.interleaved": ext_attention_variants.interleaved_operator_identity,
          "ext:rotary.interleaved-closed-form": ext_attention_variants.interleaved_closed_form_identity}


@pytest.mark.parametrize("key", sorted(ROTARY))
def test_the_rotary_entries_are_proved_for_every_size(key):
    ev = decide(ROTARY[key]()).evidence
    assert ev is not None and ev.holds, key
    assert "d >= r, as r + (d-r)" in ev.detail and "r even" in ev.detail and "d-r possibly 0" in ev.detail
    assert ("planes (2i, 2i + 1)" if "interleaved" in key else "planes (i, i + r/2)") in ev.detail


def test_the_pairs_are_r_over_2_and_the_rest_may_be_empty():
    dims = split_dims({"r": Atom("r"), "d": Atom("d")}, {"r": "pairs", "d": "beyond r"})
    k = rotary_pairs(dims["r"], dims["d"])
    assert k == Part.of("r", "pairs", 1) and not k.empty_at_one
    rest = dims["d"].parts[-1]
    assert rest.empty_at_one and size_of(rest, {"d": 4, "r": 4}) == 0 and size_of(k, {"r": 6}) == 3
    assert size_of(dims["d"], {"d": 5, "r": 2}) == 5
    assert in_domain({"r": 2, "d": 2}, {"r": "pairs", "d": "beyond r"})
    assert not in_domain({"r": 4, "d": 3}, {"r": "pairs", "d": "beyond r"})
    assert not in_domain({"r": 3, "d": 3}, {"r": "adjacent pairs"})


def test_the_concrete_pairs_refuse_an_odd_or_too_wide_rotary_width():
    assert rotary.rotary_pairs(4, 6) == 2 and rotary.rotary_pairs(2, 2, "adjacent") == 1
    for r, d in ((3, 4), (4, 3), (0, 2), (True, 2)):
        with pytest.raises(ShapeError, match="must be even, at least 2 and at most the head width"):
            rotary.rotary_pairs(r, d)
    with pytest.raises(ShapeError, match="layout='diagonal' must be 'half' or 'adjacent'"):
        rotary.rotary_pairs(2, 2, "diagonal")


def test_a_layout_that_does_not_match_the_split_is_outside():
    dims = split_dims({"r": Atom("r"), "d": Atom("d")}, {"r": "pairs", "d": "beyond r"})
    with pytest.raises(OutsideFragment, match=r"rotary planes \(adjacent\) of a width"):
        rotary_pairs(dims["r"], dims["d"], "adjacent")
    with pytest.raises(OutsideFragment, match="rotary planes of layout 'x'"):
        rotary_pairs(dims["r"], dims["d"], "x")
    with pytest.raises(OutsideFragment, match="only of two dimensions of the identity"):
        rotary_pairs(Atom("d"), Atom("d"))


def _block_form(Q, c, s, d):
    """rotate_half written with blocks of the traced width (independent of the rule): (a c - b s, b c + a s, rest)."""
    k = rotary.rotary_pairs(d["r"], d["d"])
    a, b, rest = Q[:, :k], Q[:, k:k + k], Q[:, k + k:]
    return sympy.Matrix.hstack(a.multiply_elementwise(c) - b.multiply_elementwise(s),
                               b.multiply_elementwise(c) + a.multiply_elementwise(s), rest)


def _shapes(d):
    k = rotary.rotary_pairs(d["r"], d["d"])
    return {"Q": (d["N"], d["d"]), "c": (d["N"], k), "s": (d["N"], k)}


#: partial rotary only (d > r): a full-width block form has an empty rest, which SymPy's hstack cannot slice
_PARTIAL = ({"N": 1, "d": 3, "r": 2}, {"N": 2, "d": 3, "r": 2}, {"N": 2, "d": 5, "r": 4})


def test_the_rule_is_the_block_formula_for_every_size():
    """The rotate_half rule against the formula written with slices and Hadamard products (both traced)."""
    ident = Identity(shapes=_shapes, lhs=lambda e, d: rotate_half_apply(e["Q"], e["c"], e["s"]),
                     rhs=lambda e, d: _block_form(e["Q"], e["c"], e["s"], d), dims=_PARTIAL)
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds  # the concrete function, on the grid
    ev = decide(ident).evidence
    assert ev is not None and ev.holds


def test_the_operator_is_the_libraries_formula_transposed_only_at_one_plane():
    """R instead of Rᵀ (rotating the other way) holds while every sine is 0 only: refuted at the smallest size."""
    good = ext_layers.rotary_operator_identity()
    bad = dataclasses.replace(good, rhs=lambda e, d: rotary.rotary_operator(e["c"], e["s"], d["d"]).T
                              * vec_r(e["Q"]))
    ev = decide(bad).evidence
    assert ev.holds is False and ev.counterexample["dims"] == {"h": 1, "N": 1, "d": 2, "r": 2}


@pytest.mark.slow  # a mutation sweep: 7 mutants of a closed form of attention, ~3 min (CI's slow step)
def test_size_only_mutants_of_the_rotary_closed_form_are_killed():
    """Each size-only mutant holds on the grid and is refuted above it, at a rotary width r that is even and <= d."""
    from symuat.allsizes.size_mutants import size_only_mutants

    ident = ext_attention.rotary_closed_form_identity()
    mutants = dict(size_only_mutants(ident))
    assert sorted(mutants) == ["standard:N", "standard:h", "standard:r", "wedge:N", "wedge:d", "wedge:h", "wedge:r"]
    for name, mutant in mutants.items():
        assert check_identity(mutant, levels=[Level.SYMBOLIC]).holds, name
        ev = decide(mutant).evidence
        assert ev is not None and ev.holds is False, name
        at = ev.counterexample["dims"]
        assert at["r"] % 2 == 0 and at["r"] <= at["d"], (name, at)
