"""Interventions on a mixture of experts (issue 32): a routed expert scaled frozen (its routing gate and every later
layer's routing held) and re-computed (routing live).  Checked against other code paths: the frozen direct effect
against the "expert" attribution, the re-computed output against the stack's plain forward pass with that expert's
down projection scaled, affinity in the scale; the library comparisons are in tests/test_models_families_moe.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from moe_support import random_moe_stack

from symuat.analysis import frozen, intervene
from symuat.errors import InvalidValueError, UnsupportedError
from symuat.numeric import duat_form, routing_gates, stack_output
from symuat.numeric.stack import ffn_input

N, M = 5, 8


@pytest.fixture(scope="module", params=[("pre_ln", False), ("sandwich", True)], ids=["pre_ln", "sandwich-shared"])
def form(request):
    rng = np.random.default_rng(7)
    stack = random_moe_stack(rng, *request.param, final_norm=True)
    return duat_form(stack, rng.standard_normal((N, M)))


def _scaled_forward(form, k, e, scale):
    """The plain forward pass with expert e's down projection scaled: another code path than intervene's."""
    st = form.stack
    f = st.blocks[k].ffn
    ex = list(f.experts)
    ex[e] = dataclasses.replace(ex[e], W_down=scale * ex[e].W_down)
    b = dataclasses.replace(st.blocks[k], ffn=dataclasses.replace(f, experts=tuple(ex)))
    return stack_output(dataclasses.replace(st, blocks=tuple(b if i == k else x for i, x in enumerate(st.blocks))),
                        form.X0)


@pytest.mark.parametrize("k", [0, 1])
def test_expert_interventions(form, k):
    a = form.attribution("expert")
    for e in range(4):
        iv = intervene(form, ("expert", k, e), 0.25)
        part = a.values[a.parts.index(f"L{k}.E{e}")]
        assert np.max(np.abs(iv.frozen_direct - (form.output - 0.75 * part))) <= 1e-12
        assert np.max(np.abs(iv.recomputed - _scaled_forward(form, k, e, 0.25))) <= 1e-12
        if k == 1:  # nothing but the final norm (held) after the last layer: frozen is the direct effect
            assert np.max(np.abs(iv.frozen - iv.frozen_direct)) <= 1e-12
        two = intervene(form, ("expert", k, e), 2.0)  # frozen: affine in the scale
        assert np.max(np.abs(3 * (two.frozen - form.output) + 4 * (iv.frozen - form.output))) <= 1e-12
        assert np.max(np.abs(intervene(form, ("expert", k, e), 1.0).recomputed - form.output)) <= 1e-12


def test_an_expert_no_token_picks_changes_nothing():
    """One token picks 2 of 4 experts in layer 0: scaling one of the two others changes nothing, either way."""
    rng = np.random.default_rng(1)
    stack = random_moe_stack(rng, "pre_ln", False)
    form = duat_form(stack, rng.standard_normal((1, M)))
    G, _ = routing_gates(stack.blocks[0].ffn, ffn_input(stack.blocks[0], "pre_ln", form.X0, None))
    idle = [e for e in range(4) if G[0, e] == 0.0]
    assert len(idle) == 2
    for e in idle:
        iv = intervene(form, ("expert", 0, e))
        assert np.max(np.abs(iv.frozen - form.output)) <= 1e-15
        assert np.max(np.abs(iv.recomputed - form.output)) <= 1e-15 and iv.dynamic_share == 0.0


def test_frozen_scales_experts_by_their_columns(form):
    F = frozen(form, "held")
    Fh = form.stack.blocks[1].ffn.experts[0].hidden
    by_expert = F(form.X0, {("expert", 1, 2): 0.0})
    by_neurons = F(form.X0, {("neuron", 1, n): 0.0 for n in range(2 * Fh, 3 * Fh)})
    assert np.max(np.abs(by_expert - by_neurons)) <= 1e-12 and np.max(np.abs(by_expert - form.output)) > 1e-6


@pytest.mark.parametrize("unit, error, match", [
    (("expert", 1, 4), InvalidValueError, r"unknown unit \('expert', 1, 4\).*\('expert', layer, e\)"),
    (("expert", 2, 0), InvalidValueError, "unknown unit"),
    (("expert", 1, 1.0), InvalidValueError, "unknown unit"),
    (("neuron", 0, 3), UnsupportedError, r"layer 0 is a mixture of experts.*\('expert', layer, e\) instead"),
])
def test_hostile_expert_units(form, unit, error, match):
    with pytest.raises(error, match=match):
        intervene(form, unit)
