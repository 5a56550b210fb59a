"""Fault injection at the all-sizes level's indexed families of modern attention: rotary planes (the width traced as
r/2 pairs) and grouped heads (H traced as G groups of H/G).

Each false variant of a newly decided ledger entry is refuted at its smallest witness (inside the builders' domain:
an even rotary width r <= d, G dividing H), or undecided with the reason: never proved.
"""

from __future__ import annotations

import dataclasses

import pytest
import sympy
from symuat_paper import ext_attention, ext_attention_variants, ext_layers

from symuat import vec_r
from symuat.algebra.families import col_block, family_member, family_of, family_sum, row_block
from symuat.algebra.matrices import kron
from symuat.allsizes import decide
from symuat.evidence.identity import check_identity
from symuat.evidence.verdict import Level
from symuat.layers import grouped_attention as ga
from symuat.layers.rotary import rotary_operator, rotate_half_apply
from symuat.layers.rotary_interleaved import interleaved_rotary_operator, rotate_every_two_apply


def _refuted(ident, dims):
    ev = decide(ident).evidence
    assert ev is not None and ev.holds is False, decide(ident)
    assert ev.counterexample["dims"] == dims and ev.witness is not None
    at = dataclasses.replace(ident, dims=(dims,))  # the witness, re-checked by the explicit level alone
    assert check_identity(at, levels=[Level.SYMBOLIC]).holds is False


def _undecided(ident, match):
    d = decide(ident)
    assert not d.inside and match in d.reason, d.reason


# --- rotary: the wrong table, the wrong direction, the wrong pair -----------------------------------

ROPE = ext_layers.rotary_operator_identity()
ONE = {"h": 1, "N": 1, "d": 2, "r": 2}


@pytest.mark.parametrize("rhs", [
    lambda e, d: rotary_operator(e["s"], e["c"], d["d"]) * vec_r(e["Q"]),  # cos and sin swapped
    lambda e, d: rotary_operator(e["c"], e["s"], d["d"]).T * vec_r(e["Q"]),  # rotated the other way (R, not Rᵀ)
    lambda e, d: rotary_operator(e["c"], -e["s"], d["d"]) * vec_r(e["Q"]),  # the sine's sign
    lambda e, d: rotary_operator(e["c"], e["c"], d["d"]) * vec_r(e["Q"]),  # the cosine for both
])
def test_a_wrong_rotation_is_refuted_at_one_plane(rhs):
    _refuted(dataclasses.replace(ROPE, rhs=rhs), ONE)


def test_the_rest_of_a_partial_rotary_head_left_out_is_refuted_where_d_exceeds_r():
    """Rotating then keeping only the rotated planes: the features beyond r lost (holds while d = r)."""
    def rhs(e, d):
        R = rotary_operator(e["c"], e["s"], d["d"])
        return R * vec_r(e["Q"]) - R * vec_r(rotate_half_apply(e["Q"], e["c"] * 0, e["s"] * 0))
    full = dataclasses.replace(ROPE, rhs=rhs, dims=tuple(x for x in ROPE.dims if x["d"] == x["r"]))
    assert check_identity(full, levels=[Level.SYMBOLIC]).holds  # the grid of full rotary accepts it
    _refuted(full, {"h": 1, "N": 1, "d": 3, "r": 2})


def test_the_wrong_pairing_is_undecided_never_proved():
    """Interleaved planes (2i, 2i+1) for the libraries' rotate_half (i, i + r/2): the layouts differ from r = 4."""
    ident = dataclasses.replace(ROPE, rhs=lambda e, d: interleaved_rotary_operator(e["c"], e["s"], d["d"])
                                * vec_r(e["Q"]))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds is False  # the grid's d = r = 4 point
    _undecided(ident, "a adjacent rotation of the planes of r/2 in a width r/2+r/2+(d-r)")


def test_rotate_every_two_with_the_half_operator_is_undecided():
    ident = dataclasses.replace(ext_attention_variants.interleaved_operator_identity(),
                                lhs=lambda e, d: vec_r(rotate_every_two_apply(e["Q"], e["c"], e["s"])),
                                rhs=lambda e, d: rotary_operator(e["c"], e["s"], d["d"]) * vec_r(e["Q"]))
    _undecided(ident, "a half rotation of the planes of r/2 in a width r/2*(1+1)+(d-r)")


def test_a_closed_form_with_unrotated_keys_is_refuted():
    """ext:rotary.closed-form with the keys' rotation dropped on the right-hand side."""
    good = ext_attention.rotary_closed_form_identity()

    def rhs(e, d):
        return good.rhs(dict(e, c=e["c"], s=e["s"] * 0), d)
    _refuted(dataclasses.replace(good, rhs=rhs), {"h": 1, "N": 1, "d": 2, "r": 2})


# --- grouped-query attention: the wrong grouping --------------------------------------------------

GQA = ext_attention.gqa_identity()


def _grouped(e, d, group):
    dd = d["d"]

    def head(h):
        return kron(family_member(e, "H", h), (group(e, h, d) * row_block(e["WO"], h, dd)).T)
    return family_sum(head, d["H"]) * vec_r(e["X"])


def test_every_head_reading_every_group_is_refuted_at_two_groups():
    """The value groups summed for each head: true while G = 1 (MQA), false at H = G = 2."""
    bad = dataclasses.replace(GQA, rhs=lambda e, d: _grouped(
        e, d, lambda e, h, d: family_sum(lambda g: col_block(e["WV"], g, d["d"]), d["G"])))
    _refuted(bad, {"H": 2, "G": 2, "N": 1, "M": 1, "d": 1})


def test_heads_grouped_round_robin_are_undecided_never_proved():
    """Head h reading group h mod G (round-robin, not repeat_kv's consecutive blocks): refused by name."""
    def rhs(e, d):
        if isinstance(d["H"], int):
            heads = family_of(e, "H", d["H"])
            return sum((kron(heads[h], (col_block(e["WV"], h % d["G"], 1) * row_block(e["WO"], h, 1)).T)
                        for h in range(d["H"])), sympy.zeros(d["N"] * d["M"])) * vec_r(e["X"])
        return _grouped(e, d, lambda e, h, d: col_block(e["WV"], h % d["G"], d["d"]))
    bad = dataclasses.replace(GQA, rhs=rhs)
    assert check_identity(bad, levels=[Level.SYMBOLIC]).holds is False  # H = 4, G = 2 on the grid
    _undecided(bad, "arithmetic on the family index over G*H/G")


def test_a_closed_form_for_another_number_of_groups_is_undecided():
    """The grouped form with G = 1 (multi-query) for G key/value groups: not the same grouping."""
    bad = dataclasses.replace(GQA, rhs=lambda e, d: ga.grouped_closed_form(family_of(e, "H", d["H"]), e["WV"],
                                                                           e["WO"], 1) * vec_r(e["X"]))
    _undecided(bad, "query heads in 1 groups")


# --- per-head loops as families: latent attention and cross-attention ----------------------------

def test_latent_attention_without_the_latent_norm_in_the_heads_is_refuted():
    """ext:mla.mv-form with H_h for H_h D on the right: the latent norm's diagonal dropped (true while d = 1)."""
    from symuat_paper import ext_mla

    good = ext_mla.mla_identity()
    bad = dataclasses.replace(good, rhs=lambda e, d: good.rhs(dict(e, d=e["d"] * 0 + sympy.ones(d["N"], 1)), d))
    _refuted(bad, {"h": 1, "N": 1, "M": 1, "r": 1, "v": 1})


def test_cross_attention_rows_that_do_not_sum_to_one_are_refuted():
    """ext:cross-attention.mv-form with the free H_h on the left (no row completed): the static bias is then wrong."""
    from symuat_paper import ext_cross_attention as xa

    good = xa.cross_identity()

    def lhs(e, d):
        def head(h):
            WV, WO, bV = xa._head(e, d, h)
            return family_member(e, "H", h) * (e["E"] * WV + sympy.ones(d["Ne"], 1) * bV.T) * WO
        return vec_r(sympy.ones(d["N"], 1) * e["bO"].T + family_sum(head, d["h"]))
    _refuted(dataclasses.replace(good, lhs=lhs), {"h": 1, "N": 1, "Ne": 1, "d": 1})


# --- mixtures of experts: the choice traced as an arbitrary one-hot tensor ----------------------

def _moe():
    from symuat_paper import ext_moe

    return ext_moe, ext_moe.routing_identity(True)


def test_two_different_choices_are_two_tensors_and_refuted():
    """The libraries' dispatch under choice c against the gates of choice 1: equal while c = 1 only."""
    ext_moe, good = _moe()

    def rhs(e, d):
        return good.rhs(e, dict(d, c=1))
    bad = dataclasses.replace(good, rhs=rhs)
    ev = decide(bad).evidence
    assert ev is not None and ev.holds is False and ev.counterexample["dims"]["c"] == 2
    _refuted(bad, ev.counterexample["dims"])


def test_gates_on_every_expert_are_refuted_where_a_token_skips_one():
    """Every expert on every token with the router's probabilities (the choice dropped): refuted once E > k."""
    from symuat.algebra.matrices import identity_matrix
    from symuat.evidence.fields import SIGMA
    from symuat.layers.moe import gated_experts_matrix_vector

    ext_moe, good = _moe()
    raw = ext_moe.routing_identity(False)

    def rhs(e, d):
        N, M, h = d["N"], d["M"], vec_r(e["H"])
        P = e["s"] * ext_moe._probs(e)
        routed = gated_experts_matrix_vector(h, N, M, lambda j: col_block(P, j, 1), lambda j: ext_moe._expert(e, j),
                                             d["E"], SIGMA)
        shared = kron(ga_diag(e["t"]), identity_matrix(M)) * ext_moe._expert(e, 0, "s").apply_matrix_vector(h, N,
                                                                                                             SIGMA)
        return routed + shared
    _refuted(dataclasses.replace(raw, rhs=rhs), {"N": 1, "M": 1, "F": 1, "E": 2, "k": 1, "c": 1})


def ga_diag(v):
    from symuat.algebra.families import diag_vector

    return diag_vector(v)


def test_an_expert_mixed_up_is_refuted():
    """The gate form with each routed expert's gate and up projections swapped (another expert's function)."""
    from symuat.layers.gated_ffn import GatedFFN

    ext_moe, good = _moe()

    def rhs(e, d):  # the routed experts' W_g and W_u exchanged (declared families and their members alike)
        other = {"Wg": "Wu", "Wu": "Wg"}
        return good.rhs({k: e[other[k[:2]] + k[2:]] if k[:2] in other and k[2:].isdigit() | (k[2:] == "") else v
                         for k, v in e.items()}, d)
    assert GatedFFN  # the experts are gated FFNs: σ(h W_g) ⊙ (h W_u), not symmetric in W_g, W_u
    _refuted(dataclasses.replace(good, rhs=rhs), {"N": 1, "M": 1, "F": 1, "E": 1, "k": 1, "c": 1})


@pytest.mark.slow  # a mutation sweep: the 10 size-only mutants of the MoE routing entry, ~1 min (CI's slow step)
def test_size_only_mutants_of_the_routing_entry_are_killed():
    from symuat.allsizes.size_mutants import size_only_mutants

    _, good = _moe()
    mutants = dict(size_only_mutants(good))
    assert len(mutants) == 10
    for name, mutant in mutants.items():
        assert check_identity(mutant, levels=[Level.SYMBOLIC]).holds, name
        ev = decide(mutant).evidence
        assert ev is not None and ev.holds is False and ev.witness is not None, name
