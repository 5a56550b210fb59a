"""Concrete matrices stated entry by entry over pair indices (seed 004 Eq. 15)."""

from __future__ import annotations

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.algebra.entrywise import kronecker_delta, pair_matrix
from symuat.algebra.matrices import symbolic_matrix
from symuat.errors import ShapeError


@settings(max_examples=20, deadline=None)
@given(N=st.integers(1, 3), M=st.integers(1, 3))
def test_printed_eq15_is_w_transpose_kron_identity(N, M):
    W = symbolic_matrix("w", N, N)
    printed = pair_matrix(lambda r, c: W[c[0], r[0]] * kronecker_delta(r[1], c[1]), (N, M), (N, M))
    expected = sympy.Matrix(N * M, N * M, lambda a, b: W[b // M, a // M] if a % M == b % M else 0)
    assert printed == expected


def test_row_major_positions():
    A = pair_matrix(lambda r, c: sympy.Integer(100 * r[0] + 10 * r[1] + c[0]), (2, 3), (1,))
    assert list(A) == [0, 10, 20, 100, 110, 120]


def test_errors():
    with pytest.raises(ShapeError, match="non-empty tuples of sizes"):
        pair_matrix(lambda r, c: 0, 2, (2,))
    with pytest.raises(ShapeError, match=r"rows=0 must be a positive integer"):
        pair_matrix(lambda r, c: 0, (0,), (2,))
    with pytest.raises(ShapeError, match="an int is expected"):
        kronecker_delta(sympy.Symbol("i"), 0)
