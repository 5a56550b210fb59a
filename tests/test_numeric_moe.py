"""MoEFFNWeights in every layout: the DUAT form (Eq. 20 with the routing diagonal in W'_3) reproduces the direct
forward pass; routing picks top-k per token; a non-selected expert's weights do not enter the value."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from moe_support import random_moe_stack

from symuat.numeric import (
    LAYOUTS,
    duat_form,
    duat_relative_error,
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
