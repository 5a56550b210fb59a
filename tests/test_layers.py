"""Linear and FFN layers: definitions versus matrix–vector forms, checked numerically with NumPy."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat import FFN, FeatureLinear, ShapeError, TokenLinear, vec_r


def _num(M):
    return np.array(M, dtype=float)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 4), m=st.integers(1, 4), f=st.integers(1, 4), seed=st.integers(0, 999))
def test_feature_linear_matches_numpy(n, m, f, seed):
    rng = np.random.default_rng(seed)
    W, b, X = rng.standard_normal((f, m)), rng.standard_normal((f, 1)), rng.standard_normal((n, m))
    layer = FeatureLinear(sympy.Matrix(W), sympy.Matrix(b))
    form = layer.matrix_vector_form(n)
    got = _num(form.apply(vec_r(sympy.Matrix(X)))).ravel()
    assert np.allclose(got, (X @ W.T + b.T).ravel())
    assert np.allclose(_num(form.W_prime), np.kron(np.eye(n), W))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 4), m=st.integers(1, 4), seed=st.integers(0, 999))
def test_token_linear_matches_numpy_and_density(n, m, seed):
    rng = np.random.default_rng(seed)
    W, X = rng.standard_normal((n, n)), rng.standard_normal((n, m))
    form = TokenLinear(sympy.Matrix(W)).matrix_vector_form(m)
    assert np.allclose(_num(form.apply(vec_r(sympy.Matrix(X)))).ravel(), (W @ X).ravel())
    assert np.count_nonzero(_num(form.W_prime)) / (n * m) ** 2 == pytest.approx(1 / m)


def test_shape_errors_name_the_argument():
    W = sympy.ones(2, 3)
    with pytest.raises(ShapeError, match="bias b has shape"):
        FeatureLinear(W, sympy.ones(3, 1))
    with pytest.raises(ShapeError, match="expected 3 columns"):
        FeatureLinear(W).apply(sympy.ones(2, 2))
    with pytest.raises(ShapeError, match="expected 3 rows"):
        TokenLinear(W).apply(sympy.ones(2, 2))
    with pytest.raises(ShapeError, match="same axis"):
        FFN(TokenLinear(W), FeatureLinear(W))
    with pytest.raises(ShapeError, match="x' has shape"):
        TokenLinear(sympy.eye(2)).matrix_vector_form(2).apply(sympy.ones(3, 1))
