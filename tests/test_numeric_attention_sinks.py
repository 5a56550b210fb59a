"""Attention sinks in the numeric core (``AttentionWeights.sinks``, ``ext:attention-sink.mv-form``): each head's
sink logit joins the softmax of every row and is dropped, so rows of :math:`H_h` sum to :math:`1-\\pi_{h,n}`; the
Eq. 20 form (the value bias and :math:`A\\beta'_1` now dynamic) equals the direct forward pass for every residual
layout, LayerNorm with biases included; a wrong sink vector is refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.errors import ShapeError
from symuat.numeric import KINDS, AttentionWeights, duat_form, forward, head_attention_weights, random_stack


def _with_sinks(stack, rng):
    return dataclasses.replace(stack, blocks=tuple(dataclasses.replace(
        b, attention=dataclasses.replace(b.attention, sinks=2.0 * rng.standard_normal(b.attention.n_heads)))
        for b in stack.blocks))


@pytest.mark.parametrize("gated", [False, True], ids=["plain", "gated"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_form_equals_forward_with_sinks(kind, gated):
    rng = np.random.default_rng([sorted(KINDS).index(kind), int(gated)])
    stack = _with_sinks(random_stack(rng, n_layers=2, width=8, n_heads=2, ffn_width=12, kind=kind, causal=True,
                                     gated=gated, activation="silu" if gated else "gelu"), rng)
    X0 = rng.standard_normal((5, 8))
    form = duat_form(stack, X0, attention_mask=np.array([1.0, 1, 1, 1, 0]))
    want = forward(stack, X0, attention_mask=np.array([1.0, 1, 1, 1, 0]))[-1]
    assert np.max(np.abs(form.output - want)) <= 1e-12 * np.max(np.abs(want))
    if stack.blocks[0].attention.b_V is not None:
        assert form.is_dynamic("b'_{1,3}")


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.floats(-30, 30), st.integers(0, 2**32 - 1))
def test_rows_are_the_softmax_with_the_sink_dropped(N, z, seed):
    rng = np.random.default_rng(seed)
    W = [rng.standard_normal((4, 4)) for _ in range(4)]
    attn = AttentionWeights(*W, causal=True, sinks=np.array([z]))
    X = rng.standard_normal((N, 4))
    H = head_attention_weights(X, attn)[0]
    S = (X @ W[0]) @ (X @ W[1]).T / 2.0
    for n in range(N):
        logits = np.append(S[n, : n + 1], z)
        p = np.exp(logits - logits.max())
        p /= p.sum()
        assert np.allclose(H[n, : n + 1], p[:-1], rtol=1e-13, atol=1e-300)
        assert abs(H[n].sum() - (1 - p[-1])) <= 1e-14


def test_a_sink_vector_of_the_wrong_length_is_refused():
    W = np.eye(4)
    with pytest.raises(ShapeError, match="sinks"):
        AttentionWeights(W, W, W, W, n_heads=2, sinks=np.zeros(3))
