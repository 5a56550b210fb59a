"""Granite, GraniteMoE and GraniteMoeShared (a shared expert): the four Granite multipliers (embedding, attention,
residual, logits) read exactly; every token and layer within 1e-12 of the library (float64 under
``library_float64``), right padding, left- and right-padded id batches, the LM head's scaled logits; each
multiplier is live."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from models_support import assert_reproduces, randomize, require_torch

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import InvalidValueError  # noqa: E402
from symuat.models import from_module, library_float64, load  # noqa: E402
from symuat.numeric import stack_output  # noqa: E402
from symuat.numeric.head import as_head  # noqa: E402
from symuat.numeric.moe import MoEFFNWeights  # noqa: E402

V, N = 30, 9
_MULT = dict(embedding_multiplier=3.0, attention_multiplier=0.2, residual_multiplier=0.4, logits_scaling=2.5)
_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=24, vocab_size=V,
          max_position_embeddings=32, num_key_value_heads=1, **_MULT)

FAMILIES = {
    "granite": lambda T, **k: T.GraniteForCausalLM(T.GraniteConfig(**{**_S, **k})),
    "granitemoe": lambda T, **k: T.GraniteMoeForCausalLM(T.GraniteMoeConfig(
        **{**_S, **k}, num_local_experts=4, num_experts_per_tok=2)),
    "granitemoeshared": lambda T, **k: T.GraniteMoeSharedForCausalLM(T.GraniteMoeSharedConfig(
        **{**_S, **k}, num_local_experts=4, num_experts_per_tok=2, shared_intermediate_size=10)),
}


@pytest.fixture(scope="module", params=[pytest.param(f, marks=pytest.mark.slow) if f == "granitemoeshared" else f
                                        for f in sorted(FAMILIES)])
def saved(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param)
    randomize(FAMILIES[request.param](transformers), seed=len(request.param)).save_pretrained(path)
    model = load(path)
    return request.param, model.library.model, model.stack, model


def _X(seed, M=16):
    return np.random.default_rng(seed).standard_normal((N, M))


def test_every_token_every_layer(saved):
    family, base, stack, _ = saved
    assert_reproduces(base, stack, _X(1))
    assert_reproduces(base, stack, _X(2), mask=[1] * (N - 1) + [0])
    assert isinstance(stack.blocks[0].ffn, MoEFFNWeights) == (family != "granite")
    assert (getattr(stack.blocks[0].ffn, "shared", None) is not None) == (family == "granitemoeshared")


def test_multipliers_are_read(saved):
    family, _, stack, _ = saved
    assert stack.input_scale == 3.0
    assert {b.attention.scale for b in stack.blocks} == {0.2}


@pytest.mark.parametrize("option", sorted(set(_MULT) - {"logits_scaling"}))
def test_each_multiplier_is_live(option):
    """Changing one multiplier of the hidden states changes the stack (which follows the library: the tests above);
    ``logits_scaling`` acts on the head only (the logits tests)."""
    outs = []
    for value in (_MULT[option], 1.0):
        lib = randomize(FAMILIES["granite"](transformers, **{option: value}), seed=3)
        outs.append(stack_output(from_module(lib), _X(6)))
    assert np.max(np.abs(outs[0] - outs[1])) > 1e-3


@pytest.mark.parametrize("side", ["left", "right"])
def test_token_ids_padded_batch_and_logits(saved, side):
    family, _, _, model = saved
    ids = np.random.default_rng(5).integers(1, V, size=(3, N))
    mask = np.zeros_like(ids)
    for b, n in enumerate([N, 5, 2]):
        mask[b, slice(N - n, N) if side == "left" else slice(0, n)] = 1
    forms = model.duat_form(input_ids=ids, attention_mask=mask)
    with torch.no_grad(), library_float64():
        out = model.library(input_ids=torch.as_tensor(ids), attention_mask=torch.as_tensor(mask),
                            output_hidden_states=True)
    for b, form in enumerate(forms):
        keep = mask[b].astype(bool)
        w = out.hidden_states[-1][b].numpy()[keep]
        assert np.max(np.linalg.norm(form.output - w, axis=1) / np.linalg.norm(w, axis=1)) <= 1e-12
        logits = out.logits[b].numpy()[keep]
        got = as_head(form.unembedding).logits(form.output)  # the head with its 1/logits_scaling
        assert np.max(np.abs(got - logits)) <= 1e-12 * np.max(np.abs(logits))


def test_residual_multiplier_is_folded_into_the_output_maps(saved):
    family, base, stack, _ = saved
    W = base.layers[0].self_attn.o_proj.weight.detach().numpy().T
    assert np.allclose(stack.blocks[0].attention.W_O, 0.4 * W, rtol=1e-15, atol=0)
    unfolded = dataclasses.replace(stack, blocks=tuple(dataclasses.replace(
        b, attention=dataclasses.replace(b.attention, W_O=b.attention.W_O / 0.4)) for b in stack.blocks))
    X = _X(3)
    assert np.max(np.abs(stack_output(stack, X) - stack_output(unfolded, X))) > 1e-3


@pytest.mark.parametrize("option,value,match", [
    ("attention_multiplier", -0.5, "must be a positive number, got -0.5"),
    ("residual_multiplier", float("nan"), "must be a finite number, got nan"),
    ("logits_scaling", 0.0, "must be a non-zero finite number, got 0.0"),
])
def test_a_bad_multiplier_is_refused_by_name(option, value, match):
    from symuat.models.hf_granite import granite_head_scale

    lib = randomize(FAMILIES["granite"](transformers))
    setattr(lib.config, option, value)
    with pytest.raises(InvalidValueError, match=rf"config\.{option} {match}"):
        granite_head_scale(lib.config) if option == "logits_scaling" else from_module(lib)


def test_a_negative_residual_multiplier_is_exact():
    lib = randomize(FAMILIES["granite"](transformers, residual_multiplier=-0.7), seed=4)
    assert_reproduces(lib.model, from_module(lib), _X(4))
