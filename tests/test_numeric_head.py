"""The output head (symuat.numeric.head): its logits against a direct evaluation, and the held head's identity
``L(x) + k == logits(x)`` with ``L`` linear, over random shapes (hypothesis)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.numeric import Head, HeadTransform, LayerNormWeights


def _direct(head: Head, x: np.ndarray) -> np.ndarray:
    """The head written out with NumPy and math only (not the held form under test)."""
    t = x
    tr = head.transform
    if tr is not None:
        z = x @ tr.W + (0.0 if tr.b is None else tr.b)
        if tr.activation == "tanh":
            a = np.tanh(z)
        elif tr.activation == "relu":
            a = np.maximum(z, 0.0)
        else:
            a = 0.5 * z * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))
        if tr.norm is not None:
            mu = a.mean(-1, keepdims=True)
            a = (a - mu) / np.sqrt(((a - mu) ** 2).mean(-1, keepdims=True) + tr.norm.eps) * tr.norm.gamma \
                + tr.norm.beta
        t = a
    z = (t @ head.U.T + (0.0 if head.b is None else head.b)) * head.scale
    return z if head.softcap is None else head.softcap * np.tanh(z / head.softcap)


@settings(max_examples=30, deadline=None)
@given(N=st.integers(1, 4), M=st.integers(1, 5), V=st.integers(1, 6), act=st.sampled_from(["gelu", "relu", "tanh"]),
       norm=st.booleans(), cap=st.sampled_from([None, 0.3, 5.0]), seed=st.integers(0, 2 ** 16))
def test_held_head_reproduces_the_logits_and_is_linear(N, M, V, act, norm, cap, seed):
    rng = np.random.default_rng(seed)
    tr = HeadTransform(rng.standard_normal((M, M)), rng.standard_normal(M), act,
                       LayerNormWeights(rng.standard_normal(M), rng.standard_normal(M), 1e-5) if norm else None)
    head = Head(rng.standard_normal((V, M)), rng.standard_normal(V), tr, scale=0.25, softcap=cap)
    x = rng.standard_normal((N, M))
    want = _direct(head, x)
    assert np.max(np.abs(head.logits(x) - want)) <= 1e-12 * max(1.0, np.abs(want).max())
    L, k = head.held(x)
    parts = rng.standard_normal((3, N, M))
    parts[-1] = x - parts[:-1].sum(0)  # parts that sum to x: their images and k sum to the logits
    assert np.max(np.abs(L(parts).sum(0) + k - want)) <= 1e-11 * max(1.0, np.abs(want).max())
    row = rng.integers(V)
    Lr, kr = head.held(x, np.array([row]))
    assert np.max(np.abs(Lr(x) + kr - want[:, [row]])) <= 1e-12 * max(1.0, np.abs(want).max())


def test_an_affine_head_is_its_matrix():
    U, b = np.arange(6.0).reshape(3, 2), np.array([1.0, 0.0, -1.0])
    head = Head(U, b)
    x = np.array([[1.0, 2.0]])
    assert head.affine and np.array_equal(head.logits(x), x @ U.T + b)


@settings(max_examples=20, deadline=None)
@given(N=st.integers(1, 4), M=st.integers(1, 5), V=st.integers(1, 4), act=st.sampled_from(["gelu", "relu", "tanh"]),
       norm=st.booleans(), cap=st.sampled_from([None, 0.3]), seed=st.integers(0, 2 ** 16))
def test_direction_is_the_held_logits_linear_functional(N, M, V, act, norm, cap, seed):
    from symuat.numeric.head import direction

    rng = np.random.default_rng(seed)
    tr = HeadTransform(rng.standard_normal((M, M)), rng.standard_normal(M), act,
                       LayerNormWeights(rng.standard_normal(M), rng.standard_normal(M), 1e-5) if norm else None)
    head = Head(rng.standard_normal((V, M)), rng.standard_normal(V), tr, scale=0.5, softcap=cap)
    x = rng.standard_normal((N, M))
    target = int(rng.integers(V))
    L, _ = head.held(x, np.array([target]))
    t = rng.standard_normal((N, M))
    want = L(t)[:, 0]
    got = np.einsum("nm,nm->n", t, direction(head, x, target))
    assert np.max(np.abs(got - want)) <= 1e-12 * max(1.0, np.abs(want).max())
