"""Concrete partition indicators: partition number P of N indices, all 2^N of them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.algebra.partitions import partition_indicator
from symuat.errors import ShapeError


@settings(max_examples=20, deadline=None)
@given(N=st.integers(1, 5))
def test_the_numbers_run_through_every_subset(N):
    subsets = {tuple(partition_indicator(N, P)) for P in range(1, 2 ** N + 1)}
    assert len(subsets) == 2 ** N and all(set(s) <= {0, 1} for s in subsets)
    assert tuple(partition_indicator(N, 2 ** N + 1)) == tuple(partition_indicator(N, 1)) == (0,) * N


def test_errors():
    with pytest.raises(ShapeError, match=r"p=0 must be a positive integer"):
        partition_indicator(2, 0)
