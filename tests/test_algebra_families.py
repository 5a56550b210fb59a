"""Concrete family combinators: the explicit loop, member blocks and diag."""

from __future__ import annotations

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.algebra.families import col_block, diag_vector, family_sum, row_block
from symuat.algebra.matrices import symbolic_matrix
from symuat.errors import ShapeError


@settings(max_examples=25, deadline=None)
@given(N=st.integers(1, 4), m=st.integers(1, 3), n=st.integers(1, 3))
def test_block_sum_is_the_matrix_product(N, m, n):
    W, x = symbolic_matrix("w", N * m, n), symbolic_matrix("x", N * m, 1)
    total = family_sum(lambda j: row_block(W, j, m).T * row_block(x, j, m), N)
    assert (total - W.T * x).expand() == sympy.zeros(n, 1)


@settings(max_examples=20, deadline=None)
@given(N=st.integers(1, 4), m=st.integers(1, 3))
def test_columns_blocks_and_diag(N, m):
    W = symbolic_matrix("w", m, N * m)
    assert sympy.Matrix.hstack(*(col_block(W, j, m) for j in range(N))) == W
    v = symbolic_matrix("v", m, 1)
    assert diag_vector(v) * sympy.ones(m, 1) == v
    assert all(diag_vector(v)[r, c] == 0 for r in range(m) for c in range(m) if r != c)


def test_errors():
    W = symbolic_matrix("w", 4, 2)
    with pytest.raises(ShapeError, match="does not lie in the 4 rows"):
        row_block(W, 2, 2)
    with pytest.raises(ShapeError, match="are not blocks of 3"):
        row_block(W, 0, 3)
    with pytest.raises(ShapeError, match="does not lie in the 2 columns"):
        col_block(W, -1, 1)
    with pytest.raises(ShapeError, match="column vector"):
        diag_vector(W)
    with pytest.raises(ShapeError, match="n"):
        family_sum(lambda j: W, 0)
