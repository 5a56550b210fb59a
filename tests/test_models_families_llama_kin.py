"""Llama's relatives (Ministral, Seed-OSS, Helium, ERNIE-4.5, GLM, Arcee, OLMo-3, EXAONE-4, Nemotron): tiny random
float64 checkpoints saved and re-read; every token and layer within 1e-12 of the library under
``library_float64``, right padding, left- and right-padded id batches; the interleaved rotary, the sliding windows,
OLMo-3's per-type rotary tables, Nemotron's 1+w LayerNorm gain and EXAONE-4's NoPE full-attention layers are read
from the model and live."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from models_support import assert_padded_batch, assert_reproduces, randomize, require_torch

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.models import load  # noqa: E402
from symuat.numeric import stack_output  # noqa: E402

V, N = 30, 9
_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=3, intermediate_size=12, vocab_size=V,
          max_position_embeddings=32, num_key_value_heads=1, pad_token_id=0, head_dim=8)
_W = dict(sliding_window=3, layer_types=["sliding_attention", "full_attention", "sliding_attention"])

FAMILIES = {
    "ministral": lambda T: T.MinistralModel(T.MinistralConfig(**_S, **_W)),
    "seed_oss": lambda T: T.SeedOssModel(T.SeedOssConfig(**_S, attention_bias=True, attention_out_bias=True)),
    "helium": lambda T: T.HeliumModel(T.HeliumConfig(**_S)),
    "ernie4_5": lambda T: T.Ernie4_5Model(T.Ernie4_5Config(**_S, use_bias=True)),
    "glm": lambda T: T.GlmModel(T.GlmConfig(**_S)),
    "arcee": lambda T: T.ArceeModel(T.ArceeConfig(**_S)),
    "olmo3": lambda T: T.Olmo3Model(T.Olmo3Config(**_S, **_W)),
    "exaone4": lambda T: T.Exaone4Model(T.Exaone4Config(**_S, **_W)),
    "nemotron": lambda T: T.NemotronModel(T.NemotronConfig(**_S, attention_bias=True)),
}
#: family → (layout, rotary style, windows, rotating layers, activation)
EXPECTED = {
    "ministral": ("pre_ln", "half", [3, None, 3], [True] * 3, "silu"),
    "seed_oss": ("pre_ln", "half", [None] * 3, [True] * 3, "silu"),
    "helium": ("pre_ln", "interleaved", [None] * 3, [True] * 3, "silu"),
    "ernie4_5": ("pre_ln", "interleaved", [None] * 3, [True] * 3, "silu"),
    "glm": ("pre_ln", "interleaved", [None] * 3, [True] * 3, "silu"),
    "arcee": ("pre_ln", "half", [None] * 3, [True] * 3, "relu2"),
    "olmo3": ("sublayer_post_ln", "half", [3, None, 3], [True] * 3, "silu"),
    "exaone4": ("sublayer_post_ln", "half", [3, None, 3], [True, False, True], "silu"),
    "nemotron": ("pre_ln", "half", [None] * 3, [True] * 3, "relu2"),
}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def saved(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param)
    randomize(FAMILIES[request.param](transformers), seed=len(request.param)).save_pretrained(path)
    model = load(path)
    return request.param, model.library, model.stack, model


def _X(seed, M=16):
    return np.random.default_rng(seed).standard_normal((N, M))


def test_every_token_every_layer(saved):
    family, library, stack, _ = saved
    assert_reproduces(library, stack, _X(1))
    assert_reproduces(library, stack, _X(2), mask=[1] * (N - 2) + [0, 0])


def test_structure_is_read(saved):
    family, _, stack, _ = saved
    layout, style, windows, rotating, act = EXPECTED[family]
    a = [b.attention for b in stack.blocks]
    assert stack.kind == layout and stack.activation == act
    assert [x.sliding_window for x in a] == windows
    assert [x.rotary is not None for x in a] == rotating
    assert {x.rotary.style for x in a if x.rotary is not None} == {style}


@pytest.mark.parametrize("side", ["left", pytest.param("right", marks=pytest.mark.slow)])  # decoders pad left
def test_token_ids_padded_batch(saved, side):
    family, _, _, model = saved
    assert_padded_batch(model, side, N, V)


def _replace(stack, i, **attn):
    blocks = list(stack.blocks)
    blocks[i] = dataclasses.replace(blocks[i], attention=dataclasses.replace(blocks[i].attention, **attn))
    return dataclasses.replace(stack, blocks=tuple(blocks))


@pytest.mark.parametrize("saved", ["glm", "helium"], indirect=True)
def test_interleaved_pairs_are_live(saved):
    family, _, stack, _ = saved
    rot = dataclasses.replace(stack.blocks[0].attention.rotary, style="half")
    X = _X(3)
    assert np.max(np.abs(stack_output(stack, X) - stack_output(_replace(stack, 0, rotary=rot), X))) > 1e-3


@pytest.mark.parametrize("saved", ["exaone4"], indirect=True)
def test_exaone4_nope_layer_is_live(saved):
    family, _, stack, _ = saved
    X = _X(3)
    rot = stack.blocks[0].attention.rotary
    assert np.max(np.abs(stack_output(stack, X) - stack_output(_replace(stack, 1, rotary=rot), X))) > 1e-3


@pytest.mark.parametrize("saved", ["nemotron"], indirect=True)
def test_nemotron_norm_gain_is_one_plus_w(saved):
    family, library, stack, _ = saved
    w = library.layers[0].input_layernorm.weight.detach().numpy()
    assert np.array_equal(stack.blocks[0].ln1.gamma, 1.0 + w) and stack.blocks[0].attention.rotary.dim == 4


def test_exaone4_without_a_window_rotates_every_layer():
    model = load(randomize(transformers.Exaone4Model(transformers.Exaone4Config(
        **_S, sliding_window=None, layer_types=["full_attention"] * 3))))
    assert all(b.attention.rotary is not None for b in model.stack.blocks)
    assert_reproduces(model.library, model.stack, _X(4))
