"""Fault injection at the all-sizes level's new constructs: masks, soft-capping, elementwise maps, computed families.

Each false statement is refuted with its smallest witness, or undecided with the reason: never proved.
"""

from __future__ import annotations

import pytest
import sympy

from symuat import SIGMA, Identity, dims_grid, kron, vec_r
from symuat.algebra.families import family_from, family_member, family_shapes, family_sum
from symuat.algebra.matrices import identity_matrix
from symuat.allsizes import decide
from symuat.layers.attention_scores import masked_weights, sliding_window_mask, softcap

DIMS = dims_grid(N=(1, 2, 3), w=(1, 2))


def tanh(y):
    return 2 * SIGMA(2 * y) - 1


def _shapes(d):
    return {"S": (d["N"], d["N"]), "R": (d["N"], d["N"]), "z": (d["N"], 1), "y": (d["N"], 1),
            "X": (d["N"], d["N"]), "c": ()}


def _weights(e, d, S="S", z="z", mask=None, cap=None, f=tanh):
    allowed = sliding_window_mask(d["N"], d["w"]) if mask is None else mask(d)
    return masked_weights(softcap(e[S], e["c"] if cap is None else cap(e), f), allowed, e[z], SIGMA)


def _decide(lhs, rhs, shapes=_shapes, dims=DIMS):
    return decide(Identity(shapes=shapes, lhs=lhs, rhs=rhs, dims=dims))


def test_the_capped_windowed_weights_are_proved_for_every_size():
    """vec_r(A X) = (A ⊗ I) vec_r X with A the capped, windowed softmax numerator."""
    d = _decide(lambda e, d: vec_r(_weights(e, d) * e["X"]),
                lambda e, d: kron(_weights(e, d), identity_matrix(d["N"])) * vec_r(e["X"]))
    assert d.evidence.holds is True and "for every N, w >= 1" in d.evidence.detail


@pytest.mark.parametrize(("rhs", "dims"), [
    (lambda e, d: _weights(e, d, S="R"), {"N": 1, "w": 1}),  # other scores
    (lambda e, d: _weights(e, d, z="y"), {"N": 1, "w": 1}),  # other normalisers
    (lambda e, d: _weights(e, d, mask=lambda d: sliding_window_mask(d["N"], d["N"])), {"N": 2, "w": 1}),  # global
    (lambda e, d: _weights(e, d).T, {"N": 2, "w": 2}),  # the transposed mask (w = 1: diagonal, symmetric)
    (lambda e, d: _weights(e, d, cap=lambda e: 2 * e["c"]), {"N": 1, "w": 1}),  # another cap
    (lambda e, d: _weights(e, d, f=lambda y: SIGMA(2 * y) - 1), {"N": 1, "w": 1}),  # tanh misread
    (lambda e, d: softcap(e["S"], e["c"], tanh).applyfunc(SIGMA).multiply_elementwise(e["z"] * sympy.ones(1, d["N"])),
     {"N": 2, "w": 1}),  # the mask dropped
])
def test_a_false_masked_statement_is_refuted_at_its_smallest_witness(rhs, dims):
    d = _decide(lambda e, d: _weights(e, d), rhs)
    assert d.evidence.holds is False and d.evidence.counterexample["dims"] == dims
    assert d.evidence.witness is not None


def test_a_statement_that_needs_what_the_mask_says_is_undecided_never_proved():
    """χ² = χ holds for the 0/1 window but not for the arbitrary matrix the normal form traces: no witness exists,
    so the verdict is undecided (never proved, never refuted)."""
    A, B = (lambda e, d: _weights(e, d)), (lambda e, d: _weights(e, d, S="R", z="y"))
    def unmasked(e, d):
        return softcap(e["R"], e["c"], tanh).applyfunc(SIGMA).multiply_elementwise(e["y"] * sympy.ones(1, d["N"]))
    d = _decide(lambda e, d: A(e, d).multiply_elementwise(B(e, d)),
                lambda e, d: A(e, d).multiply_elementwise(unmasked(e, d)))
    assert not d.inside and "normal forms differ but no witness" in d.reason


@pytest.mark.parametrize(("rhs", "match"), [
    (lambda e, d: masked_weights(e["S"], sliding_window_mask(d["N"], d["w"], 1), e["z"], SIGMA),
     "with 1 padded tokens (only 0 or N minus a dimension)"),
    (lambda e, d: _weights(e, d, f=lambda y: 0 if y == 0 else tanh(y)), "0 maps elsewhere"),
    (lambda e, d: masked_weights(e["S"], sliding_window_mask(d["N"], d["w"]), e["z"], sympy.exp), "opaque function"),
    (lambda e, d: masked_weights(e["S"], lambda n, m: m <= n, e["z"], SIGMA), "only a traced mask predicate"),
    (lambda e, d: masked_weights(e["S"], sliding_window_mask(d["N"] * d["w"], d["w"]), e["z"], SIGMA),
     "is not a dimension"),
    (lambda e, d: e["S"].applyfunc(lambda t: 1 / (1 + t)), "uses Pow"),
])
def test_what_the_mask_and_map_rules_cannot_model_is_outside_with_the_reason(rhs, match):
    d = _decide(lambda e, d: _weights(e, d), rhs)
    assert not d.inside and match in d.reason


def _heads(d):
    return {"X": (d["N"], d["N"]), **family_shapes("G", d["h"], d["N"], d["N"]),
            **family_shapes("z", d["h"], d["N"], 1)}


HEAD_DIMS = dims_grid(h=(1, 2), N=(1, 2))


def test_a_computed_family_is_summed_for_every_size_and_a_wrong_member_is_refuted():
    def member(e, d, z="z"):
        return lambda j: family_member(e, "G", j) * family_member(e, z, j) * sympy.ones(1, d["N"])

    def total(e, d):
        return family_sum(member(e, d), d["h"])

    def from_family(e, d, swap=False):
        H = family_from(member(e, d), d["h"])
        return family_sum(lambda j: H[j].T if swap else H[j], d["h"])
    ok = decide(Identity(shapes=_heads, lhs=total, rhs=from_family, dims=HEAD_DIMS))
    assert ok.evidence.holds is True
    bad = decide(Identity(shapes=_heads, lhs=total, rhs=lambda e, d: from_family(e, d, swap=True), dims=HEAD_DIMS))
    assert bad.evidence.holds is False and bad.evidence.counterexample["dims"] == {"h": 1, "N": 2}
    stray = decide(Identity(shapes=_heads, lhs=total, rhs=lambda e, d: family_from(member(e, d), d["h"])[0],
                            dims=HEAD_DIMS))
    assert not stray.inside and "computed family" in stray.reason


def _sink(rhs=None, sign=-1):
    """ext:attention-sink.mv-form with its rows' normalisation or its right side corrupted."""
    from symuat_paper import ext_attention_sinks as sinks

    from symuat.algebra.families import family_from, family_member
    from symuat.algebra.matrices import ones
    from symuat.algebra.splits import but_last
    from symuat.layers.attention import MultiHeadAttention

    good = sinks.sink_identity()

    def heads(e, d):
        free = but_last(d["N"])

        def head(j):
            F = family_member(e, "H", j)[:, :free]
            return sympy.ImmutableMatrix.hstack(F, ones(d["N"]) - F * ones(d["N"])[:free, :]
                                                + sign * family_member(e, "pi", j))
        return family_from(head, d["h"])

    def lhs(e, d):
        return vec_r(MultiHeadAttention(heads(e, d), e["WV"], e["WO"], e["bV"], e["bO"]).apply(e["X"]))
    return decide(Identity(shapes=good.shapes, lhs=lhs, rhs=rhs or good.rhs, dims=good.dims))


def test_sinks_are_proved_for_every_size_and_a_wrong_row_normalisation_is_refuted():
    assert _sink().evidence.holds is True
    plus = _sink(sign=1)  # rows summing to 1 + π
    assert plus.evidence.holds is False and plus.evidence.counterexample["dims"] == {"h": 1, "N": 1, "d": 1}
    from symuat_paper.ext_attention_sinks import _mha

    static = _sink(rhs=lambda e, d: _mha(e, d).matrix_vector_form().apply(vec_r(e["X"])))  # row-stochastic's bias
    assert static.evidence.holds is False and static.evidence.counterexample["dims"] == {"h": 1, "N": 1, "d": 1}


def _stochastic(d, mask="causal"):
    from symuat.layers.grouped_attention import causal_padding_mask, row_stochastic_family

    allowed = (causal_padding_mask(d["N"], d["N"] - d["r"]) if mask == "causal"
               else sliding_window_mask(d["N"], d["N"], d["N"] - d["r"]))
    return row_stochastic_family("H", d["h"], d["N"], allowed)


PAD_DIMS = tuple({"h": h, "N": N, "r": r} for h in (1, 2) for N in (1, 2, 3) for r in range(1, N + 1))


def _padded(lhs, rhs, shapes=lambda d: {"x": (d["N"], 1), **family_shapes("G", d["h"], d["N"], d["N"])}):
    return decide(Identity(shapes=shapes, lhs=lhs, rhs=rhs, dims=PAD_DIMS))


def test_rows_of_a_masked_row_stochastic_family_sum_to_one_for_every_size():
    ok = _padded(lambda e, d: family_sum(lambda j: _stochastic(d)[j] * sympy.ones(d["N"], 1), d["h"]),
                 lambda e, d: family_sum(lambda j: sympy.ones(d["N"], 1), d["h"]))
    assert ok.evidence.holds is True and "with r <= N (the builders' domain)" in ok.evidence.detail


@pytest.mark.parametrize(("lhs", "rhs", "dims"), [
    # columns of a causal row-stochastic matrix do not sum to 1
    (lambda e, d: family_sum(lambda j: _stochastic(d)[j].T * sympy.ones(d["N"], 1), d["h"]),
     lambda e, d: family_sum(lambda j: sympy.ones(d["N"], 1), d["h"]), {"h": 1, "N": 2, "r": 1}),
    # a row sum weighted by x is no row sum (the summed index is used twice)
    (lambda e, d: family_sum(lambda j: _stochastic(d)[j] * e["x"], d["h"]),
     lambda e, d: family_sum(lambda j: e["x"], d["h"]), {"h": 1, "N": 2, "r": 1}),
    # a family that is not declared row-stochastic keeps its row sums
    (lambda e, d: family_sum(lambda j: family_member(e, "G", j) * sympy.ones(d["N"], 1), d["h"]),
     lambda e, d: family_sum(lambda j: sympy.ones(d["N"], 1), d["h"]), {"h": 1, "N": 1, "r": 1}),
    # two masks are two families: the window's rows are not the causal mask's
    (lambda e, d: family_sum(lambda j: _stochastic(d)[j] * e["x"], d["h"]),
     lambda e, d: family_sum(lambda j: _stochastic(d, "window")[j] * e["x"], d["h"]), {"h": 1, "N": 2, "r": 1}),
])
def test_a_false_row_sum_is_refuted_at_its_smallest_witness(lhs, rhs, dims):
    d = _padded(lhs, rhs)
    assert d.evidence.holds is False and d.evidence.counterexample["dims"] == dims


@pytest.mark.parametrize(("rhs", "match"), [
    (lambda e, d: sympy.zeros(d["N"] - d["r"], 1), "the difference of sizes N-r used as a size"),
    (lambda e, d: causal_padding(d["N"], d["N"] - d["N"]), "arithmetic or comparison on the symbolic size N"),
    (lambda e, d: causal_padding(d["N"], d["h"] - d["r"]), "only 0 or N minus a dimension"),
])
def test_a_difference_of_sizes_is_only_a_count_of_padded_tokens(rhs, match):
    d = _padded(lambda e, d: e["x"], rhs)
    assert not d.inside and match in d.reason


def causal_padding(N, padded):
    from symuat.layers.grouped_attention import causal_padding_mask

    return family_sum(lambda j: _rows(causal_padding_mask(N, padded), N)[j] * sympy.ones(N, 1), 1)


def _rows(allowed, N):
    from symuat.layers.grouped_attention import row_stochastic_family

    return row_stochastic_family("H", 1, N, allowed)


def test_a_size_only_mutant_in_the_padded_count_is_refuted_above_the_grid():
    """A wedge in r (zero while r <= 2) holds on the grid; the witness search raises N with r (N - r >= 0)."""
    from symuat.allsizes.size_mutants import size_only_mutants

    small = tuple(x for x in PAD_DIMS if x["N"] <= 2)
    ident = Identity(shapes=lambda d: {"x": (d["N"], 1)},
                     lhs=lambda e, d: family_sum(lambda j: _stochastic(d)[j] * sympy.ones(d["N"], 1), d["h"]),
                     rhs=lambda e, d: family_sum(lambda j: sympy.ones(d["N"], 1), d["h"]), dims=small)
    (mutant,) = [m for name, m in size_only_mutants(ident) if name == "wedge:r"]
    d = decide(mutant)
    assert d.evidence.holds is False and d.evidence.counterexample["dims"] == {"h": 1, "N": 3, "r": 3}
