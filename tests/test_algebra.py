"""Row-major vectorisation, Kronecker products and the Diamond product."""

from __future__ import annotations

import pytest
import sympy

from symuat import CHAIN_READINGS, ArgumentTypeError, ShapeError, chain, diamond, kron, symbolic_matrix, unvec_r, vec_r
from symuat.algebra.matrices import check_dim


def test_vec_r_is_row_major_and_invertible():
    X = symbolic_matrix("x", 2, 3)
    v = vec_r(X)
    assert list(v) == [X[0, 0], X[0, 1], X[0, 2], X[1, 0], X[1, 1], X[1, 2]]
    assert unvec_r(v, 2, 3) == X


def test_kron_entries():
    A, B = symbolic_matrix("a", 2, 3), symbolic_matrix("b", 2, 2)
    K = kron(A, B)
    assert K.shape == (4, 6)
    assert K[3, 5] == A[1, 2] * B[1, 1]
    assert K == sympy.kronecker_product(sympy.Matrix(A), sympy.Matrix(B)).as_explicit()


@pytest.mark.parametrize("bad", [0, -1])
def test_dimensions_must_be_positive_integers(bad):
    with pytest.raises(ShapeError, match="must be a positive integer"):
        check_dim("N", bad)
    with pytest.raises(ShapeError, match="positive integer"):
        symbolic_matrix("w", bad, 2)


@pytest.mark.parametrize("bad", [2.5, True, "3"])
def test_dimensions_must_be_integers(bad):
    with pytest.raises(ArgumentTypeError, match="N must be an integer, got"):
        check_dim("N", bad)
    with pytest.raises(ArgumentTypeError, match="rows must be an integer"):
        symbolic_matrix("w", bad, 2)


def test_unvec_r_rejects_wrong_length():
    with pytest.raises(ShapeError, match=r"expected shape \(6, 1\)"):
        unvec_r(sympy.Matrix([1, 2, 3]), 2, 3)


def test_diamond_definition_and_errors():
    W = sympy.Matrix([[1, 2, 3], [4, 5, 6]])
    x = sympy.Matrix([1, 10])
    assert diamond(W, x) == sympy.Matrix([41, 52, 63])
    assert diamond(x, W) == diamond(W, x)
    with pytest.raises(ShapeError, match="must have 3 rows"):
        diamond(W.T, x)
    with pytest.raises(ShapeError, match="column vector"):
        diamond(W, W)


def test_chain_readings_differ():
    A, B = symbolic_matrix("a", 2, 2), symbolic_matrix("b", 2, 2)
    x = symbolic_matrix("x", 2, 1)
    results = {r.name: chain(r, A, B, x).applyfunc(sympy.expand) for r in CHAIN_READINGS}
    assert results["right"] == (A.T * B.T * x).applyfunc(sympy.expand)
    assert results["left-TN"] == ((A.T * B).T * x).applyfunc(sympy.expand)
    assert results["left-NN"] == ((A * B).T * x).applyfunc(sympy.expand)
    with pytest.raises(ShapeError, match="at least one matrix"):
        chain(CHAIN_READINGS[0], x)
