"""Structured operators on vec_r vectors against dense np.kron / explicit matrices."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.errors import InvalidValueError, ShapeError, SymuatError, UnsupportedError
from symuat.numeric import (
    DENSE_LIMIT,
    Compose,
    Dense,
    Diagonal,
    IdentityOperator,
    Kron,
    KronSum,
    Scaled,
    Sum,
    unvec_r,
    vec_r,
)
from symuat.numeric._validate import as_finite_array, check_positive_dim, check_shape

dims = st.integers(min_value=1, max_value=5)


def test_vec_r_is_row_major():
    X = np.arange(6.0).reshape(2, 3)
    assert vec_r(X).tolist() == [0, 1, 2, 3, 4, 5]
    assert np.array_equal(unvec_r(vec_r(X), 2, 3), X)


@settings(max_examples=40, deadline=None)
@given(p=dims, q=dims, r=dims, s=dims, seed=st.integers(0, 2**31))
def test_kron_matches_np_kron_and_vec_identity(p, q, r, s, seed):
    rng = np.random.default_rng(seed)
    A, B = rng.standard_normal((p, q)), rng.standard_normal((r, s))
    X = rng.standard_normal((q, s))
    K = Kron(A, B)
    assert K.shape == (p * r, q * s)
    assert np.allclose(K.to_dense(), np.kron(A, B), rtol=1e-13, atol=1e-13)
    # vec_r(A X B^T) = (A ⊗ B) vec_r(X)
    assert np.allclose(K.matvec(vec_r(X)), vec_r(A @ X @ B.T), rtol=1e-12, atol=1e-12)
    # SPEC key identity: vec_r(A X C) = (A ⊗ C^T) vec_r(X)
    C = rng.standard_normal((s, r))
    assert np.allclose(np.kron(A, C.T) @ vec_r(X), vec_r(A @ X @ C), rtol=1e-12, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(n=dims, m=dims, k=dims, seed=st.integers(0, 2**31))
def test_kron_factored_and_structured_factors(n, m, k, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    B1, B2 = rng.standard_normal((m, k)), rng.standard_normal((k, m))
    d = rng.standard_normal(n)
    g = rng.standard_normal(m)
    v = rng.standard_normal(n * m)
    K = Kron(A, (B1, B2))
    assert np.allclose(K.to_dense(), np.kron(A, B1 @ B2), atol=1e-12)
    assert np.allclose(K.matvec(v), np.kron(A, B1 @ B2) @ v, atol=1e-12)
    K2 = Kron(Diagonal(d), Diagonal(g))
    assert np.allclose(K2.matvec(v), np.kron(np.diag(d), np.diag(g)) @ v, atol=1e-12)
    K3 = Kron(IdentityOperator(n), (B1, B2))
    assert np.allclose(K3.matvec(v), np.kron(np.eye(n), B1 @ B2) @ v, atol=1e-12)
    K4 = Kron((A, Diagonal(d)), IdentityOperator(m))
    assert np.allclose(K4.to_dense(), np.kron(A @ np.diag(d), np.eye(m)), atol=1e-12)
    assert np.allclose(K4.matvec(v), K4.to_dense() @ v, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(n=dims, m=dims, h=st.integers(1, 4), seed=st.integers(0, 2**31))
def test_kronsum_sum_compose_scaled(n, m, h, seed):
    rng = np.random.default_rng(seed)
    pairs = [(rng.standard_normal((n, n)), rng.standard_normal((m, m))) for _ in range(h)]
    ref = sum(np.kron(a, b) for a, b in pairs)
    v = rng.standard_normal(n * m)
    KS = KronSum(pairs)
    assert np.allclose(KS.to_dense(), ref, atol=1e-12)
    assert np.allclose(KS.matvec(v), ref @ v, atol=1e-12)
    assert np.allclose(KronSum([Kron(a, b) for a, b in pairs]).matvec(v), ref @ v, atol=1e-12)
    D = rng.standard_normal((n * m, n * m))
    S = Sum([IdentityOperator(n * m), Dense(D), KS])
    assert np.allclose(S.matvec(v), v + D @ v + ref @ v, atol=1e-12)
    C = Compose([Dense(D), KS, Diagonal(v)])
    assert np.allclose(C.to_dense(), D @ ref @ np.diag(v), atol=1e-11)
    assert np.allclose(C.matvec(v), D @ (ref @ (v * v)), atol=1e-11)
    assert np.allclose((Dense(D) @ KS).matvec(v), D @ ref @ v, atol=1e-11)
    assert np.allclose(Dense(D) @ v, D @ v)
    assert np.allclose(Scaled(-2.5, KS).to_dense(), -2.5 * ref)


def test_to_dense_limit():
    big = IdentityOperator(2001)  # 2001^2 > 4e6
    with pytest.raises(UnsupportedError, match="exceeds the limit"):
        big.to_dense()
    assert IdentityOperator(2000).shape[0] ** 2 <= DENSE_LIMIT
    k = Kron(np.ones((1000, 1000)), np.ones((3, 3)))
    with pytest.raises(UnsupportedError, match="9000000"):
        k.to_dense()
    assert k.matvec(np.ones(3000)).shape == (3000,)


def test_matvec_bad_inputs():
    K = Kron(np.eye(2), np.eye(3))
    with pytest.raises(ShapeError, match="v must have length 6"):
        K.matvec(np.ones(5))
    with pytest.raises(ShapeError, match="v must be 1-D"):
        K.matvec(np.ones((2, 3)))
    with pytest.raises(InvalidValueError, match="v must be finite"):
        K.matvec(np.array([1, 2, np.nan, 4, 5, 6.0]))
    with pytest.raises(InvalidValueError, match="v must be a real numeric array"):
        K.matvec(np.array(["a"] * 6))


def test_constructor_bad_inputs():
    with pytest.raises(ShapeError, match="A must be 2-D"):
        Kron(np.ones(3), np.eye(2))
    with pytest.raises(InvalidValueError, match="B must be finite"):
        Kron(np.eye(2), np.array([[np.inf]]))
    with pytest.raises(ShapeError, match="inner dimensions"):
        Kron(np.eye(2), (np.ones((2, 3)), np.ones((2, 2))))
    with pytest.raises(InvalidValueError, match="non-empty"):
        Kron(np.eye(2), ())
    with pytest.raises(InvalidValueError, match="Kronecker factors"):
        Kron(Dense(np.eye(2)), np.eye(2))
    with pytest.raises(ShapeError, match=r"ops\[1\] has shape \(4, 4\), expected \(2, 2\)"):
        Sum([IdentityOperator(2), IdentityOperator(4)])
    with pytest.raises(ShapeError, match="cannot compose"):
        Compose([IdentityOperator(2), IdentityOperator(3)])
    with pytest.raises(InvalidValueError, match="non-empty"):
        Compose([])
    with pytest.raises(InvalidValueError, match=r"ops\[0\] must be a LinearOperator"):
        Sum([np.eye(2)])
    with pytest.raises(InvalidValueError, match=r"terms\[0\] must be a Kron"):
        KronSum([np.eye(2)])
    with pytest.raises(ShapeError, match="n must be a positive dimension"):
        IdentityOperator(0)
    with pytest.raises(InvalidValueError, match="n must be an integer"):
        IdentityOperator(2.0)
    with pytest.raises(InvalidValueError, match="alpha must be finite"):
        Scaled(float("nan"), IdentityOperator(2))
    with pytest.raises(ShapeError, match=r"v must have length N\*M = 2\*3 = 6, got 5"):
        unvec_r(np.ones(5), 2, 3)
    with pytest.raises(ShapeError, match="X must be 2-D"):
        vec_r(np.ones(3))


def test_validate_helpers():
    assert as_finite_array("a", [1, 2]).dtype == np.float64
    with pytest.raises(InvalidValueError, match="a must be a real numeric array"):
        as_finite_array("a", "xyz")
    with pytest.raises(InvalidValueError, match="a must be a real numeric array"):
        as_finite_array("a", np.array([1 + 2j]))
    with pytest.raises(ShapeError, match=r"a must have shape \(2, \*\), got \(3, 1\)"):
        check_shape("a", np.ones((3, 1)), (2, None))
    with pytest.raises(ShapeError, match="n must be a positive dimension"):
        check_positive_dim("n", -1)
    with pytest.raises(InvalidValueError, match="n must be an integer, got bool"):
        check_positive_dim("n", True)
    assert check_positive_dim("n", np.int64(3)) == 3
    assert issubclass(ShapeError, SymuatError) and issubclass(ShapeError, ValueError)


def test_kron_nested_list_is_one_matrix():
    K = Kron([[1.0, 2.0], [3.0, 4.0]], [[0.0, 1.0]])
    assert np.array_equal(K.to_dense(), np.kron([[1.0, 2.0], [3.0, 4.0]], [[0.0, 1.0]]))


def test_batched_application_equals_one_vector_at_a_time():
    from symuat.numeric import random_stack
    from symuat.numeric.operators import Centering
    from symuat.numeric.residual_params import residual_params

    rng = np.random.default_rng(5)
    for kind in ("pre_ln", "post_ln", "sublayer_post_ln"):
        stack = random_stack(rng, 1, 6, 3, 4, kind=kind, causal=True, n_kv_heads=1, rotary_dim=2)
        p = residual_params(stack, rng.standard_normal((4, 6)))[0]
        for op in (p.W1, p.W2, p.W3, p.factors[0]):
            V = rng.standard_normal((3, op.shape[1]))
            assert np.allclose(op._matvecs(V), np.stack([op.matvec(v) for v in V]), rtol=1e-13, atol=1e-13)
    C = Centering(4)
    assert np.allclose(C.to_dense(), np.eye(4) - 0.25) and np.allclose(C.matvec(np.ones(4)), 0)
