"""Attention, MHA operator form and LayerNorm against naive loop implementations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.errors import InvalidValueError, ShapeError
from symuat.numeric import (
    AttentionWeights,
    attention_weights,
    head_attention_weights,
    layer_norm,
    layer_norm_operator,
    mha_operator,
    multi_head_attention,
    softmax_rows,
    vec_r,
)
from symuat.numeric.layernorm import LayerNormWeights


# ---------------------------------------------------------------- naive references
def naive_head(X, WQ, WK, bQ, bK, s, causal):
    N = X.shape[0]
    Q = [[sum(X[i, k] * WQ[k, j] for k in range(X.shape[1])) + (bQ[j] if bQ is not None else 0.0)
          for j in range(WQ.shape[1])] for i in range(N)]
    K = [[sum(X[i, k] * WK[k, j] for k in range(X.shape[1])) + (bK[j] if bK is not None else 0.0)
          for j in range(WK.shape[1])] for i in range(N)]
    H = np.zeros((N, N))
    for i in range(N):
        cols = range(i + 1) if causal else range(N)
        sc = {j: s * sum(Q[i][t] * K[j][t] for t in range(len(Q[i]))) for j in cols}
        mx = max(sc.values())
        z = sum(math.exp(v - mx) for v in sc.values())
        for j, v in sc.items():
            H[i, j] = math.exp(v - mx) / z
    return H


def naive_mha(X, a: AttentionWeights):
    N, M = X.shape
    d = a.head_dim
    s = {"head": 1 / math.sqrt(d), "paper": 1 / math.sqrt(M)}.get(a.scale, a.scale)
    Y = np.zeros((N, M))
    for h in range(a.n_heads):
        sl = slice(h * d, (h + 1) * d)
        H = naive_head(X, a.W_Q[:, sl], a.W_K[:, sl],
                       None if a.b_Q is None else a.b_Q[sl], None if a.b_K is None else a.b_K[sl], s, a.causal)
        V = X @ a.W_V[:, sl] + (0 if a.b_V is None else a.b_V[sl])
        for i in range(N):
            for m in range(M):
                Y[i, m] += sum(H[i, j] * V[j, t] * a.W_O[h * d + t, m] for j in range(N) for t in range(d))
    return Y + (0 if a.b_O is None else a.b_O)


def rand_attn(rng, M, h, scale="head", causal=False, biases=True):
    W = [rng.standard_normal((M, M)) / math.sqrt(M) for _ in range(4)]
    b = [rng.standard_normal(M) * 0.3 if biases else None for _ in range(4)]
    return AttentionWeights(*W, *b, n_heads=h, scale=scale, causal=causal)


# ---------------------------------------------------------------- softmax / single head
def test_softmax_rows_stable_and_masked():
    S = np.array([[1000.0, 1000.0, -np.inf], [-1e4, 0.0, 1.0]])
    P = softmax_rows(S)
    assert np.allclose(P[0], [0.5, 0.5, 0.0])
    assert np.allclose(P.sum(axis=1), 1.0)
    with pytest.raises(InvalidValueError, match="entirely -inf"):
        softmax_rows(np.array([[-np.inf, -np.inf]]))
    with pytest.raises(InvalidValueError, match="NaN or \\+inf"):
        softmax_rows(np.array([[np.nan, 0.0]]))
    with pytest.raises(ShapeError, match="S must be 2-D"):
        softmax_rows(np.zeros(3))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scale", ["head", "paper", 0.37])
def test_attention_weights_vs_naive(causal, scale):
    rng = np.random.default_rng(1)
    N, M, d = 5, 6, 3
    X = rng.standard_normal((N, M))
    WQ, WK = rng.standard_normal((M, d)), rng.standard_normal((M, d))
    bQ, bK = rng.standard_normal(d), rng.standard_normal(d)
    s = {"head": 1 / math.sqrt(d), "paper": 1 / math.sqrt(M)}.get(scale, scale)
    H = attention_weights(X, WQ, WK, bQ, bK, scale=scale, causal=causal)
    assert np.allclose(H, naive_head(X, WQ, WK, bQ, bK, s, causal), rtol=1e-12, atol=1e-14)
    assert np.allclose(H.sum(axis=1), 1.0)
    if causal:
        assert np.all(np.triu(H, 1) == 0.0)


def test_attention_weights_bad_inputs():
    X, W = np.ones((3, 4)), np.ones((4, 2))
    with pytest.raises(ShapeError, match=r"W_Q must have shape \(4, \*\), got \(3, 2\)"):
        attention_weights(X, np.ones((3, 2)), W)
    with pytest.raises(ShapeError, match=r"W_K must have shape \(4, 2\), got \(4, 3\)"):
        attention_weights(X, W, np.ones((4, 3)))
    with pytest.raises(InvalidValueError, match="X must be finite"):
        attention_weights(np.full((3, 4), np.nan), W, W)
    with pytest.raises(ShapeError, match=r"b_Q must have shape \(2,\), got \(4,\)"):
        attention_weights(X, W, W, b_Q=np.ones(4))
    with pytest.raises(InvalidValueError, match="scale must be 'head', 'paper'"):
        attention_weights(X, W, W, scale="sqrt")
    with pytest.raises(InvalidValueError, match="scale must be > 0"):
        attention_weights(X, W, W, scale=-1.0)
    with pytest.raises(InvalidValueError, match="causal must be a bool"):
        attention_weights(X, W, W, causal="yes")
    with pytest.raises(ShapeError, match="X.shape\\[0\\]=.* must be a positive integer"):
        attention_weights(np.ones((0, 4)), W, W)


# ---------------------------------------------------------------- multi-head
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scale", ["head", "paper", 0.5])
@pytest.mark.parametrize("biases", [False, True])
def test_mha_vs_naive_and_operator(causal, scale, biases):
    rng = np.random.default_rng(2)
    N, M, h = 4, 6, 3
    a = rand_attn(rng, M, h, scale, causal, biases)
    X = rng.standard_normal((N, M))
    Y = multi_head_attention(X, a)
    assert np.allclose(Y, naive_mha(X, a), rtol=1e-11, atol=1e-12)
    op, b = mha_operator(X, a)
    assert op.shape == (N * M, N * M)
    # structured matvec against the direct layer
    assert np.allclose(op.matvec(vec_r(X)) + b, vec_r(Y), rtol=1e-12, atol=1e-12)
    # dense form of the paper's W'_HVO built independently with np.kron
    Hs = head_attention_weights(X, a)
    d = M // h
    dense = sum(np.kron(Hs[k], (a.W_V[:, k * d:(k + 1) * d] @ a.W_O[k * d:(k + 1) * d]).T) for k in range(h))
    assert np.allclose(op.to_dense(), dense, atol=1e-13)
    # static bias: 1_N ⊗ (W_O^T b_V + b_O)
    c = (a.W_O.T @ a.b_V + a.b_O) if biases else np.zeros(M)
    assert np.allclose(b, np.kron(np.ones(N), c))


@settings(max_examples=25, deadline=None)
@given(N=st.integers(1, 6), d=st.integers(1, 3), h=st.integers(1, 3), causal=st.booleans(),
       seed=st.integers(0, 2**31))
def test_mha_operator_random_shapes(N, d, h, causal, seed):
    rng = np.random.default_rng(seed)
    M = d * h
    a = rand_attn(rng, M, h, "head", causal)
    X = rng.standard_normal((N, M))
    op, b = mha_operator(X, a)
    Y = multi_head_attention(X, a)
    assert np.allclose(op.matvec(vec_r(X)) + b, vec_r(Y), rtol=1e-12, atol=1e-12)


def test_attention_weights_dataclass_validation():
    M = 4
    W = np.eye(M)
    with pytest.raises(ShapeError, match="n_heads=3 must divide the width M=4"):
        AttentionWeights(W, W, W, W, n_heads=3)
    with pytest.raises(ShapeError, match="n_heads=.* must be a positive integer"):
        AttentionWeights(W, W, W, W, n_heads=0)
    with pytest.raises(ShapeError, match=r"W_O must have shape \(4, 4\), got \(4, 3\)"):
        AttentionWeights(W, W, W, np.ones((4, 3)))
    with pytest.raises(InvalidValueError, match="W_V must be finite"):
        AttentionWeights(W, W, np.full((4, 4), np.inf), W)
    with pytest.raises(ShapeError, match=r"b_V must have shape \(4,\), got \(5,\)"):
        AttentionWeights(W, W, W, W, b_V=np.ones(5))
    with pytest.raises(InvalidValueError, match="scale must be"):
        AttentionWeights(W, W, W, W, scale="bogus")
    with pytest.raises(InvalidValueError, match="causal must be a bool"):
        AttentionWeights(W, W, W, W, causal=1)
    a = AttentionWeights(W, W, W, W, n_heads=2)
    with pytest.raises(ShapeError, match=r"X must have shape \(\*, 4\), got \(3, 5\)"):
        multi_head_attention(np.ones((3, 5)), a)
    with pytest.raises(InvalidValueError, match="attn must be an AttentionWeights"):
        multi_head_attention(np.ones((3, 4)), "attn")
    with pytest.raises(ShapeError, match="heads must hold n_heads=2"):
        mha_operator(np.ones((3, 4)), a, heads=[np.eye(3)])
    with pytest.raises(Exception):
        a.n_heads = 4  # frozen
    with pytest.raises(ValueError):
        a.W_Q[0, 0] = 1.0  # read-only array


# ---------------------------------------------------------------- LayerNorm
def naive_layer_norm(X, g, b, eps):
    out = np.zeros_like(X)
    for i, row in enumerate(X):
        mu = sum(row) / len(row)
        var = sum((v - mu) ** 2 for v in row) / len(row)
        out[i] = [g[j] * (row[j] - mu) / math.sqrt(var + eps) + b[j] for j in range(len(row))]
    return out


@settings(max_examples=25, deadline=None)
@given(N=st.integers(1, 5), M=st.integers(1, 6), seed=st.integers(0, 2**31))
def test_layer_norm_direct_and_operator(N, M, seed):
    rng = np.random.default_rng(seed)
    X = 3 * rng.standard_normal((N, M)) + 1
    g, b = rng.standard_normal(M), rng.standard_normal(M)
    Y = layer_norm(X, g, b, 1e-5)
    assert np.allclose(Y, naive_layer_norm(X, g, b, 1e-5), rtol=1e-11, atol=1e-12)
    op, bias = layer_norm_operator(X, g, b, 1e-5)
    assert np.allclose(op.matvec(vec_r(X)) + bias, vec_r(Y), rtol=1e-11, atol=1e-12)
    D = 1 / np.sqrt(X.var(axis=1) + 1e-5)
    C = np.eye(M) - np.ones((M, M)) / M
    dense = np.kron(np.diag(D), np.diag(g)) @ np.kron(np.eye(N), C)
    assert np.allclose(op.to_dense(), dense, atol=1e-12)
    assert np.allclose(bias, np.kron(np.ones(N), b))


def test_layer_norm_bad_inputs():
    X = np.ones((2, 3))
    with pytest.raises(ShapeError, match=r"gamma must have shape \(3,\), got \(2,\)"):
        layer_norm(X, np.ones(2), np.zeros(3))
    with pytest.raises(InvalidValueError, match="eps must be > 0"):
        layer_norm(X, np.ones(3), np.zeros(3), eps=0.0)
    with pytest.raises(InvalidValueError, match="beta must be finite"):
        layer_norm_operator(X, np.ones(3), np.array([0, np.nan, 0]))
    with pytest.raises(ShapeError, match=r"beta must have shape \(3,\)"):
        LayerNormWeights(np.ones(3), np.ones(4))
    with pytest.raises(InvalidValueError, match="eps must be finite"):
        LayerNormWeights(np.ones(3), np.ones(3), eps=float("inf"))
