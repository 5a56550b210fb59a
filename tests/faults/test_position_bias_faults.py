"""Fault injection at the symmetric window mask and T5's relative position buckets (issue 29's ``ext`` entries).

A wrong mask or bias is refuted at its smallest witness by the all-sizes level, never proved; a construct it does not
trace is "outside" with the reason; a bad bucket or window parameter is one ``ShapeError`` naming it.
"""

from __future__ import annotations

import pytest
import sympy

from symuat import SIGMA, Identity, ShapeError, dims_grid
from symuat.allsizes import decide
from symuat.layers.attention_scores import (
    masked_weights,
    relative_position_bias,
    relative_position_bucket,
    sliding_window_mask,
    symmetric_window_mask,
)

DIMS = dims_grid(N=(1, 2, 3), w=(1, 2))


def _shapes(d):
    return {"S": (d["N"], d["N"]), "z": (d["N"], 1)}


def _weights(e, mask):
    return masked_weights(e["S"], mask, e["z"], SIGMA)


def _decide(rhs_mask):
    return decide(Identity(shapes=_shapes, lhs=lambda e, d: _weights(e, symmetric_window_mask(d["N"], d["w"])),
                           rhs=lambda e, d: _weights(e, rhs_mask(d)), dims=DIMS))


def test_the_symmetric_window_is_proved_equal_to_itself_for_every_size():
    d = _decide(lambda d: symmetric_window_mask(d["N"], d["w"]))
    assert d.evidence.holds is True and "for every N, w >= 1" in d.evidence.detail


@pytest.mark.parametrize(("mask", "dims"), [
    (lambda d: sliding_window_mask(d["N"], d["w"]), {"N": 2, "w": 2}),  # the causal window: w = 1 is the diagonal
    (lambda d: symmetric_window_mask(d["N"], d["N"]), {"N": 2, "w": 1}),  # the global layer for a local one
])
def test_a_wrong_mask_is_refuted_at_its_smallest_witness(mask, dims):
    d = _decide(mask)
    assert d.evidence.holds is False and d.evidence.counterexample["dims"] == dims


def test_a_concrete_padding_count_is_outside_the_fragment():
    d = _decide(lambda d: symmetric_window_mask(d["N"], d["w"], 1))
    assert not d.inside and "with 1 padded tokens (only 0 or N minus a dimension)" in d.reason


@pytest.mark.parametrize(("call", "match"), [
    (lambda: symmetric_window_mask(3, 0), r"window=0 must be >= 1"),
    (lambda: symmetric_window_mask(3, 2, 3), r"padded_right=3 in 0\.\.2"),
    (lambda: relative_position_bucket(1, True, 2, 16), r"num_buckets=2 must be >= 4"),
    (lambda: relative_position_bucket(1, False, 1, 16), r"num_buckets=1 must be >= 2"),
    (lambda: relative_position_bucket(1, False, 8, 0), r"max_distance=0 >= 1"),
    (lambda: relative_position_bias(sympy.Matrix([1, 2]), 3, True, 16), r"num_buckets=2 must be >= 4"),
])
def test_a_bad_parameter_is_one_shape_error(call, match):
    with pytest.raises(ShapeError, match=match):
        call()
