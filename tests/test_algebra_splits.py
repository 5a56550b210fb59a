"""Concrete split sizes: Λ1 = the first ⌈N/2⌉ indices, Λ2 = the rest; all but the last index."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.algebra.splits import but_last, halves
from symuat.errors import ArgumentTypeError, ShapeError


@settings(max_examples=30, deadline=None)
@given(N=st.integers(1, 200))
def test_halves_partition_the_indices(N):
    n1, n2 = halves(N)
    assert n1 == math.ceil(N / 2) and n1 + n2 == N and n2 in (n1, n1 - 1)


def test_one_index_leaves_lambda2_empty():
    assert halves(1) == (1, 0)


def test_but_last():
    assert [but_last(n) for n in (1, 2, 7)] == [0, 1, 6]


def test_errors():
    with pytest.raises(ShapeError, match=r"n=0 must be a positive integer"):
        halves(0)
    with pytest.raises(ArgumentTypeError, match=r"n must be an integer, got float 2.5"):
        halves(2.5)
    with pytest.raises(ShapeError, match=r"n=-1 must be a positive integer"):
        but_last(-1)
