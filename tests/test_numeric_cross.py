"""A decoder block's cross-attention (symuat.numeric.cross): the sublayer is the closed form of
``ext:cross-attention.mv-form`` (sum over heads of H_h kron (W_Vh W_Oh)^T applied to e', plus the static bias, computed
here from the heads with Kronecker products), and the DUAT form of a pre_ln stack with cross-attentions equals its
direct forward pass over random shapes (plain and gated FFNs); the cross-attention term sits in the dynamic b'_3."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.numeric import (
    AttentionWeights,
    RMSNormWeights,
    duat_form,
    duat_relative_error,
    multi_head_attention,
    random_stack,
    vec_r,
)
from symuat.numeric.cross import CrossAttention, cross_attention, cross_heads
from symuat.numeric.norms import apply_norm


def _cross(rng, M, H, Ne, biases=True):
    W = [rng.standard_normal((M, M)) / np.sqrt(M) for _ in range(4)]
    b = [rng.standard_normal(M) if biases else None for _ in range(4)]
    a = AttentionWeights(*W, *b, n_heads=H, scale=0.7)
    return CrossAttention(a, RMSNormWeights(1 + 0.1 * rng.standard_normal(M)), rng.standard_normal((Ne, M)))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2 ** 16), H=st.sampled_from([1, 2]), d=st.integers(1, 3), N=st.integers(1, 4),
       Ne=st.integers(1, 5))
def test_the_sublayer_is_the_entrys_closed_form(seed, H, d, N, Ne):
    rng = np.random.default_rng(seed)
    M = H * d
    ca, X = _cross(rng, M, H, Ne), rng.standard_normal((N, M))
    a = ca.attention
    Hs = cross_heads(ca, apply_norm(X, ca.norm))
    assert all(np.allclose(Hh.sum(axis=1), 1.0, rtol=0, atol=1e-15) for Hh in Hs)
    rhs = np.kron(np.ones(N), a.W_O.T @ a.b_V + a.b_O)
    for h, Hh in enumerate(Hs):
        s = a.head_slice(h)
        rhs = rhs + np.kron(Hh, (a.W_V[:, s] @ a.W_O[s, :]).T) @ vec_r(ca.memory)
    got = vec_r(cross_attention(ca, X))
    assert np.max(np.abs(got - rhs)) <= 1e-12 * max(1.0, np.max(np.abs(rhs)))


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2 ** 16), gated=st.booleans(), L=st.integers(1, 3), N=st.integers(1, 5),
       Ne=st.integers(1, 4))
def test_the_duat_form_of_a_decoder_stack_is_its_forward_pass(seed, gated, L, N, Ne):
    rng = np.random.default_rng(seed)
    stack = random_stack(rng, L, 4, 2, 6, kind="pre_ln", causal=True, norm="rms", gated=gated, final_norm=True)
    blocks = tuple(dataclasses.replace(b, cross=_cross(rng, 4, 2, Ne)) for b in stack.blocks)
    decoder = dataclasses.replace(stack, blocks=blocks)
    form = duat_form(decoder, rng.standard_normal((N, 4)))
    assert duat_relative_error(form) <= 1e-13
    assert {"b2", "b3"} <= form.params[0].dynamic  # the cross-attention's output joins b'_3 (and b'_2 behind it)


def test_the_cross_term_is_in_the_bias_not_in_w1():
    rng = np.random.default_rng(0)
    stack = random_stack(rng, 1, 4, 2, 6, kind="pre_ln", causal=True, norm="rms", final_norm=False)
    b, ca, X = stack.blocks[0], _cross(rng, 4, 2, 3), rng.standard_normal((3, 4))
    plain = duat_form(stack, X).params[0]
    dec = duat_form(dataclasses.replace(stack, blocks=(dataclasses.replace(b, cross=ca),)), X).params[0]
    x = vec_r(X)
    assert np.array_equal(plain.W1 @ x, dec.W1 @ x)  # W'_1 reads the decoder stream only
    h1 = X + multi_head_attention(apply_norm(X, b.ln1), b.attention)  # the direct pass, not the form's operators
    assert np.max(np.abs((dec.b3 - plain.b3) - vec_r(cross_attention(ca, h1)))) <= 1e-13
