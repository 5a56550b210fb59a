"""The DUAT form of every block model, evaluated from the derived tables, equals the direct forward pass."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.errors import InvalidValueError, ShapeError, UnsupportedError
from symuat.numeric import (
    LAYOUTS,
    BlockWeights,
    FFNWeights,
    TransformerStack,
    duat_form,
    random_stack,
    stack_output,
    vec_r,
)


def rel(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def make(seed, kind, norm, gated, rot, kv, masked, N=4, M=8, H=2, F=6, L=3):
    rng = np.random.default_rng(seed)
    stack = random_stack(rng, L, M, H, F, kind=kind, activation="silu" if gated else "gelu", causal=masked,
                         norm=norm, gated=gated, n_kv_heads=kv, rotary_dim=None if rot is None else 2,
                         rotary_style=rot or "half", qk_norm=("head" if kv else "full") if masked else None,
                         position_embeddings=masked, input_scale=1.5 if gated else None,
                         input_norm=(norm == "layer" and not gated), final_norm=(norm == "rms" or masked))
    X = rng.standard_normal((N, M))
    mask = (rng.random(N) < 0.7).astype(float) if masked else None
    if mask is not None:
        mask[0] = 1.0  # causal row 0 must see a token
    return stack, X, mask


COMBOS = list(itertools.product(LAYOUTS, ("layer", "rms"), (False, True), (None, "half", "interleaved"),
                                (None, 1), (False, True)))


@pytest.mark.parametrize("kind,norm,gated,rot,kv,masked", COMBOS)
def test_duat_form_equals_forward_for_every_combination(kind, norm, gated, rot, kv, masked):
    stack, X, mask = make(COMBOS.index((kind, norm, gated, rot, kv, masked)), kind, norm, gated, rot, kv, masked)
    form = duat_form(stack, X, mask)
    direct = stack_output(stack, X, mask)
    assert rel(form.output, direct) <= 1e-12
    # the terms really are the form: linear + bias + one term per layer
    assert len(form.terms.sigma_terms) == stack.depth
    total = form.terms.linear_term + form.terms.bias_term + sum(form.terms.sigma_terms)
    assert np.allclose(total, vec_r(direct), rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), N=st.integers(1, 5), H=st.integers(1, 3), d=st.sampled_from([2, 4]),
       F=st.integers(1, 5), L=st.integers(1, 3), kind=st.sampled_from(LAYOUTS), gated=st.booleans(),
       norm=st.sampled_from(["layer", "rms"]), rot=st.sampled_from([None, "half", "interleaved"]),
       causal=st.booleans(), mqa=st.booleans())
def test_duat_form_over_random_shapes(seed, N, H, d, F, L, kind, gated, norm, rot, causal, mqa):
    rng = np.random.default_rng(seed)
    M = H * d
    stack = random_stack(rng, L, M, H, F, kind=kind, activation="gelu_tanh", causal=causal, norm=norm,
                         gated=gated, n_kv_heads=1 if mqa else None, rotary_dim=None if rot is None else 2,
                         rotary_style=rot or "half", final_norm=True)
    X = rng.standard_normal((N, M))
    mask = np.ones(N)
    if N > 1 and not causal:
        mask[rng.integers(N)] = 0.0
    assert rel(duat_form(stack, X, mask).output, stack_output(stack, X, mask)) <= 1e-12


def test_gated_terms_use_the_gate_and_parameters_are_inspectable():
    stack, X, _ = make(7, "pre_ln", "rms", True, "half", 1, False)
    form = duat_form(stack, X)
    assert form.ext.gated and form.is_dynamic("W'_{1,4}") and form.is_dynamic("b'_{2,4}")
    assert not form.is_dynamic("W'_{1,3}")
    assert form.parameter("W'_{0,1}").shape == (32, 32)  # input transform box
    assert set(form.final) == {"W'_{4,1}", "b'_{4,3}"}
    r = repr(form.params[0])
    assert len(r) < 200 and "array" not in r and "gated=True" in r
    assert "array" not in repr(form) and "array" not in repr(stack)


def test_bad_input_to_duat_form():
    stack, X, _ = make(1, "pre_ln", "layer", False, None, None, False)
    with pytest.raises(ShapeError, match="input width must be the stack's width"):
        duat_form(stack, X[:, :5])
    with pytest.raises(InvalidValueError, match="X must be finite"):
        duat_form(stack, np.full_like(X, np.nan))
    with pytest.raises(ShapeError, match=r"attention_mask must have shape \(4,\)"):
        duat_form(stack, X, np.ones(3))
    causal, Xc, _ = make(2, "pre_ln", "layer", False, None, None, True)
    with pytest.raises(InvalidValueError, match=r"attention in layer 1: rows \[0\] are fully masked"):
        duat_form(causal, Xc, np.array([0.0, 1.0, 1.0, 1.0]))
    with pytest.raises(InvalidValueError, match="attention in layer 1 head 0: .* overflow"):
        duat_form(random_stack(np.random.default_rng(3), 2, 8, 2, 3, kind="standard"), np.full_like(X, 1e160))
    plain, gated = random_stack(np.random.default_rng(0), 1, 4, 2, 3), random_stack(np.random.default_rng(0), 1, 4,
                                                                                   2, 3, gated=True)
    mixed = TransformerStack(plain.blocks + gated.blocks)
    with pytest.raises(UnsupportedError, match="mixing plain and gated"):
        duat_form(mixed, np.ones((2, 4)))
    with pytest.raises(InvalidValueError, match="W1 must be finite"):
        BlockWeights(plain.blocks[0].attention, FFNWeights(np.full((4, 3), np.nan), None, np.ones((3, 4)), None))
