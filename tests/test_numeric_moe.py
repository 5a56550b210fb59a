"""MoEFFNWeights in every layout: the DUAT form (Eq. 20 with the routing diagonal in W'_3) reproduces the direct
forward pass; routing picks top-k per token; a non-selected expert's weights do not enter the value."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from moe_support import random_moe_stack

from symuat.errors import InvalidValueError
from symuat.numeric import (
    LAYOUTS,
    AttentionWeights,
    GatedFFNWeights,
    MoEFFNWeights,
    apply_norm,
    duat_form,
    duat_relative_error,
    multi_head_attention,
    routing_gates,
    stack_output,
)

M, F, N, E = 8, 6, 7, 4


def _stack(kind, shared, seed=0):
    rng = np.random.default_rng(seed)
    stack = random_moe_stack(rng, kind, shared, M=M, F=F, E=E)
    return stack, rng.standard_normal((N, M))


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("kind", LAYOUTS)
def test_form_reproduces_the_forward_pass(kind, shared):
    stack, X = _stack(kind, shared)
    form = duat_form(stack, X)
    assert duat_relative_error(form) <= 1e-13
    assert "W3" in form.params[0].dynamic


def test_routing_is_top_k_per_token():
    stack, X = _stack("pre_ln", True)
    G, s = routing_gates(stack.blocks[0].ffn, X)
    assert np.all((G > 0).sum(axis=1) == 2) and np.allclose(G.sum(axis=1), 1.5) and np.all((s > 0) & (s < 1))


def test_a_non_selected_expert_does_not_enter():
    """One token selects 2 of the 4 experts; scaling a non-selected expert's weights changes nothing, a selected
    one's changes the output."""
    from symuat.numeric.stack import ffn_input

    stack, X = _stack("standard", False, seed=3)
    X = X[:1]
    moe = stack.blocks[0].ffn
    G, _ = routing_gates(moe, ffn_input(stack.blocks[0], "standard", X, None))
    unused, used = int(np.flatnonzero(G[0] == 0)[0]), int(np.flatnonzero(G[0])[0])

    def scaled(e):
        experts = list(moe.experts)
        experts[e] = dataclasses.replace(experts[e], W_down=experts[e].W_down * 7.0)
        block = dataclasses.replace(stack.blocks[0], ffn=dataclasses.replace(moe, experts=tuple(experts)))
        return stack_output(dataclasses.replace(stack, blocks=(block,) + stack.blocks[1:]), X)

    assert np.array_equal(scaled(unused), stack_output(stack, X))
    assert np.max(np.abs(scaled(used) - stack_output(stack, X))) > 1e-3


@pytest.mark.parametrize("by", ["term", "source", "layer", "head", "neuron", "expert"])
@pytest.mark.parametrize("kind", LAYOUTS)
def test_attributions_hold_the_routing_gates(kind, by):
    """form.frozen() holds the routing diagonal D(u) (issue 32): every attribution of a mixture of experts sums to
    the output, in every layout."""
    stack, X = _stack(kind, True)
    form = duat_form(stack, X)
    a = form.attribution(by)
    assert np.max(np.abs(a.values.sum(0) + a.rest - form.output)) <= 1e-12


def _llama4_moe(rng, M=8, F=5, E=4, k=2, shared=True):
    ex = [GatedFFNWeights(*(rng.standard_normal(s) / 3 for s in ((M, F), (M, F), (F, M)))) for _ in range(E)]
    sh = GatedFFNWeights(*(rng.standard_normal(s) / 3 for s in ((M, 3), (M, 3), (3, M)))) if shared else None
    return MoEFFNWeights(tuple(ex), rng.standard_normal((M, E)), k, normalize=False, routing="sigmoid", shared=sh,
                         input_scaled=True)


def _llama4_reference(w, U):
    """Llama 4's MoE written out: top-k of the logits, sigmoid of the chosen, each expert fed ``s * u``."""
    silu = lambda z: z / (1 + np.exp(-z))  # noqa: E731
    out = np.zeros_like(U)
    for n, u in enumerate(U):
        logits = u @ w.router
        for e in np.argsort(-logits)[: w.top_k]:
            s, f = 1 / (1 + np.exp(-logits[e])), w.experts[e]
            x = s * u
            out[n] += (silu(x @ f.W_gate) * (x @ f.W_up)) @ f.W_down
        if w.shared is not None:
            f = w.shared
            out[n] += (silu(u @ f.W_gate) * (u @ f.W_up)) @ f.W_down
    return out


@pytest.mark.parametrize("shared", [True, False])
def test_input_scaled_experts_are_llama4s_and_their_form_is_exact(shared):
    from symuat.numeric import BlockWeights, RMSNormWeights, TransformerStack, activation_function
    from symuat.numeric.ffn import _ffn

    rng = np.random.default_rng(7)
    w = _llama4_moe(rng, shared=shared)
    U = rng.standard_normal((6, 8))
    want = _llama4_reference(w, U)
    assert np.max(np.abs(_ffn(U, w, activation_function("silu")) - want)) <= 1e-13 * np.max(np.abs(want))
    a = AttentionWeights(*(rng.standard_normal((8, 8)) / 3 for _ in range(4)), n_heads=2, causal=True)
    norm = RMSNormWeights(1 + 0.2 * rng.standard_normal(8), eps=1e-6)
    stack = TransformerStack((BlockWeights(a, w, norm, norm),), "pre_ln", "silu")
    X = rng.standard_normal((6, 8))
    form = duat_form(stack, X)
    H = X + multi_head_attention(apply_norm(X, norm), a)
    direct = H + _llama4_reference(w, apply_norm(H, norm))  # the block written out, not the stack's code
    assert np.max(np.abs(form.output - direct)) <= 1e-12 * np.max(np.abs(direct))
    a = form.attribution("neuron", target=np.ones(8), position=5)  # the held network holds D_in(u) too
    assert abs(float(a.values.sum() + a.rest) - float(direct[5].sum())) <= 1e-12 * np.max(np.abs(direct))


def test_input_scaled_experts_refuse_what_they_do_not_take():
    rng = np.random.default_rng(0)
    ex = GatedFFNWeights(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)), b_gate=np.ones(2))
    with pytest.raises(InvalidValueError, match=r"input_scaled \(Llama 4's experts, whose input is scaled by the "
                                                r"routing weight\) takes no gate or up biases"):
        MoEFFNWeights((ex, ex), rng.standard_normal((2, 2)), 1, routing="sigmoid", input_scaled=True)
    with pytest.raises(InvalidValueError, match=r"input_scaled must be a bool, got 'yes'"):
        MoEFFNWeights((ex, ex), rng.standard_normal((2, 2)), 1, input_scaled="yes")
