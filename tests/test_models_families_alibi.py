"""BLOOM and MPT (ALiBi): tiny random float64 checkpoints saved and re-read; every token and layer within 1e-12 of the
library under ``library_float64`` (power-of-two and other head counts: the slopes differ), right padding, left- and
right-padded id batches, BLOOM's real-token positions with pads between real tokens; the bias is live; the options
the stack cannot hold are refused by name."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from models_support import assert_reproduces, randomize, require_torch

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import UnsupportedError  # noqa: E402
from symuat.models import from_module, library_float64, load  # noqa: E402
from symuat.numeric import activation_function, stack_output  # noqa: E402

V, N = 30, 9

FAMILIES = {
    "bloom": lambda T, **k: T.BloomModel(T.BloomConfig(hidden_size=16, n_head=2, n_layer=2, vocab_size=V, **k)),
    "bloom-3-heads": lambda T, **k: T.BloomModel(T.BloomConfig(hidden_size=18, n_head=3, n_layer=2, vocab_size=V,
                                                               **k)),
    "mpt": lambda T, **k: T.MptModel(T.MptConfig(d_model=16, n_heads=2, n_layers=2, expansion_ratio=2, max_seq_len=32,
                                                 vocab_size=V, **k)),
    "mpt-3-heads": lambda T, **k: T.MptModel(T.MptConfig(d_model=18, n_heads=3, n_layers=2, expansion_ratio=2,
                                                         max_seq_len=32, vocab_size=V, **k)),
}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def saved(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param.replace("-", "_"))
    randomize(FAMILIES[request.param](transformers), seed=len(request.param)).save_pretrained(path)
    model = load(path)
    return request.param, model.library, model.stack, model


def _X(seed, M):
    return np.random.default_rng(seed).standard_normal((N, M))


def test_every_token_every_layer(saved):
    family, library, stack, _ = saved
    assert all(b.attention.alibi is not None and b.attention.rotary is None for b in stack.blocks)
    assert_reproduces(library, stack, _X(1, stack.width))
    assert_reproduces(library, stack, _X(2, stack.width), mask=[1] * (N - 1) + [0])


def _library(model, ids, mask):
    with torch.no_grad(), library_float64():
        return model.library(input_ids=torch.as_tensor(ids), attention_mask=torch.as_tensor(mask)).last_hidden_state


@pytest.mark.parametrize("side", ["left", "right"])
def test_token_ids_padded_batch(saved, side):
    family, _, _, model = saved
    ids = np.random.default_rng(5).integers(1, V, size=(3, N))
    mask = np.zeros_like(ids)
    for b, n in enumerate([N, 5, 2]):
        mask[b, slice(N - n, N) if side == "left" else slice(0, n)] = 1
    forms = model.duat_form(input_ids=ids, attention_mask=mask)
    want = _library(model, ids, mask)
    for b, form in enumerate(forms):
        w = want[b].numpy()[mask[b].astype(bool)]
        assert np.max(np.linalg.norm(form.output - w, axis=1) / np.linalg.norm(w, axis=1)) <= 1e-12


def test_pads_between_real_tokens(saved):
    """BLOOM counts real tokens only (exact); MPT counts the pads, so a hole is refused by name."""
    family, _, _, model = saved
    ids = np.arange(2, 2 + N)[None]
    mask = np.ones_like(ids)
    mask[0, 3:5] = 0
    if family.startswith("mpt"):
        with pytest.raises(UnsupportedError, match="pads between real tokens: MPT's ALiBi counts them"):
            model.duat_form(input_ids=ids, attention_mask=mask)
        return
    form = model.duat_form(input_ids=ids, attention_mask=mask)[0]
    w = _library(model, ids, mask)[0].numpy()[mask[0].astype(bool)]
    assert np.max(np.linalg.norm(form.output - w, axis=1) / np.linalg.norm(w, axis=1)) <= 1e-12


def test_alibi_is_a_live_bias(saved):
    family, _, stack, _ = saved
    X = _X(3, stack.width)
    off = dataclasses.replace(stack, blocks=tuple(dataclasses.replace(
        b, attention=dataclasses.replace(b.attention, alibi=None)) for b in stack.blocks))
    assert np.max(np.abs(stack_output(stack, X) - stack_output(off, X))) > 1e-3


def test_slopes_follow_the_head_count(saved):
    """Row h of the table is m_h * j: a geometric sequence of slopes (interleaved for 3 heads)."""
    family, _, stack, _ = saved
    A = stack.blocks[0].attention.alibi
    assert np.all(A[:, 0] == 0) and np.allclose(A[:, 5], 5 * A[:, 1], rtol=1e-15)
    m = A[:, 1]
    want = {"bloom": [2 ** -4, 2 ** -8], "mpt": [2 ** -4, 2 ** -8],
            "bloom-3-heads": [2 ** -4, 2 ** -8, 2 ** -2], "mpt-3-heads": [2 ** -4, 2 ** -8, 2 ** -2]}[family]
    assert np.allclose(m, want, rtol=1e-15)


def test_bloom_gelu_is_its_own_constant():
    x = np.linspace(-6, 6, 121)
    a, b = activation_function("gelu_bloom")(x), activation_function("gelu_tanh")(x)
    assert 0 < np.max(np.abs(a - b)) < 1e-7


@pytest.mark.parametrize("family,options,match", [
    ("bloom", dict(apply_residual_connection_post_layernorm=True), "apply_residual_connection_post_layernorm=True"),
    ("bloom", dict(pretraining_tp=2, slow_but_exact=True), "slow_but_exact=True .*drops the biases"),
    ("mpt", dict(attn_config={"clip_qkv": 3.0}), r"attn_config\.clip_qkv=3\.0"),
])
def test_unrepresentable_options_are_refused_by_name(family, options, match):
    with pytest.raises(UnsupportedError, match=match):
        from_module(randomize(FAMILIES[family](transformers, **options)))
