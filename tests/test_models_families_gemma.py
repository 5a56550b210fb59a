"""Gemma-2 and Gemma-3 (text): sandwich norms, attention soft-capping, local/global layers read from
``config.layer_types``, per-type rotary tables, the embedding scale; every token and layer within 1e-12 of the
library (float64 under ``library_float64``), inputs longer than the window, left- and right-padded id batches."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from models_support import assert_padded_batch, assert_reproduces, randomize, require_torch

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import UnsupportedError  # noqa: E402
from symuat.models import from_module, load  # noqa: E402
from symuat.numeric import stack_output  # noqa: E402

V, N = 30, 9
_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=3, intermediate_size=24, head_dim=8,
          max_position_embeddings=32, vocab_size=V, num_key_value_heads=1, sliding_window=3, query_pre_attn_scalar=12)
#: a layer order that is not the default alternation (read from the config, never assumed)
ORDER = ["full_attention", "sliding_attention", "sliding_attention"]

FAMILIES = {
    "gemma2": lambda T: T.Gemma2Model(T.Gemma2Config(**_S, attn_logit_softcapping=1.5)),
    "gemma2-order": lambda T: T.Gemma2Model(T.Gemma2Config(**_S, attn_logit_softcapping=1.5, layer_types=ORDER)),
    "gemma3_text": lambda T: T.Gemma3TextModel(T.Gemma3TextConfig(**_S, layer_types=ORDER)),
}
WINDOWS = {"gemma2": [3, None, 3], "gemma2-order": [None, 3, 3], "gemma3_text": [None, 3, 3]}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def saved(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param.replace("-", "_"))
    randomize(FAMILIES[request.param](transformers), seed=len(request.param)).save_pretrained(path)
    model = load(path)  # the library's float64 model (eager experts), its stack (sharing its weights), the Model
    return request.param, model.library, model.stack, model


def _X(seed, M):
    return 3.0 * np.random.default_rng(seed).standard_normal((N, M))  # large scores: the cap is active


def test_every_token_every_layer(saved):
    family, library, stack, _ = saved
    assert stack.kind == "sandwich"
    assert_reproduces(library, stack, _X(1, stack.width))
    assert_reproduces(library, stack, _X(2, stack.width), mask=[1] * (N - 1) + [0])


def test_layer_types_and_cap_are_read_from_the_config(saved):
    family, library, stack, _ = saved
    assert [b.attention.sliding_window for b in stack.blocks] == WINDOWS[family]
    assert {b.attention.softcap for b in stack.blocks} == {None if family == "gemma3_text" else 1.5}
    assert stack.blocks[0].attention.scale == pytest.approx(12 ** -0.5)


def test_cap_and_window_change_the_output(saved):
    """Both are live: removing either changes the output (inputs longer than the window)."""
    family, _, stack, _ = saved
    X = _X(3, stack.width)
    for field in ("softcap", "sliding_window"):
        if all(getattr(b.attention, field) is None for b in stack.blocks):
            continue
        off = dataclasses.replace(stack, blocks=tuple(dataclasses.replace(
            b, attention=dataclasses.replace(b.attention, **{field: None})) for b in stack.blocks))
        assert np.max(np.abs(stack_output(stack, X) - stack_output(off, X))) > 1e-3, field


@pytest.mark.parametrize("side", ["left", "right"])
def test_token_ids_padded_batch(saved, side):
    family, _, _, model = saved
    assert model.word_scale == pytest.approx(16 ** 0.5)
    assert_padded_batch(model, side, N, V)


def test_bidirectional_gemma3_is_refused():
    model = randomize(transformers.Gemma3TextModel(transformers.Gemma3TextConfig(
        **_S, use_bidirectional_attention=True)))
    with pytest.raises(UnsupportedError, match="use_bidirectional_attention"):
        from_module(model)


def test_patching_matches_library_hooks(saved):
    """Re-computed activation patching (residual stream, sublayers, heads, neurons, experts) equals the library run
    with the same patch done by torch hooks (tests/patching_support.py) within 1e-12."""
    from patching_support import assert_patching_matches_library

    assert_patching_matches_library(saved[3])
