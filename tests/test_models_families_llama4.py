"""Llama 4's text model (``llama4_text``): interleaved complex rotary with the weightless per-head q/k norm, NoPE
layers, chunked attention and temperature tuning below their limits, input-scaled experts with a shared expert
interleaved with dense layers.  Every token and layer within 1e-12 of the library's float64 forward, left and right
padding, ids and text, the logits; attributions sum to the library's logit and patching equals the library's hooked
run; each option that changes the math is exact (a test each) or refused by name."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import TOL, assert_padded_batch, assert_reproduces, randomize, require_torch
from test_models_load import _tokenizer

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import ShapeError, UnsupportedError  # noqa: E402
from symuat.models import from_module, library_float64, load  # noqa: E402

V, M = 30, 16
_S = dict(hidden_size=M, num_attention_heads=2, num_key_value_heads=1, head_dim=8, num_hidden_layers=4,
          intermediate_size=6, intermediate_size_mlp=10, vocab_size=V, max_position_embeddings=64, num_local_experts=4,
          num_experts_per_tok=2, interleave_moe_layer_step=2, attention_chunk_size=16, floor_scale=20, pad_token_id=0,
          rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def _library(**k):
    return randomize(transformers.Llama4ForCausalLM(transformers.Llama4TextConfig(**{**_S, **k})), seed=3)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("llama4")
    _library().save_pretrained(path)
    _tokenizer(bert=False).save_pretrained(path)
    return load(path)


def _X(seed, n=11):
    return np.random.default_rng(seed).standard_normal((n, M))


def test_every_token_every_layer(model):
    c = model.library.config
    assert c.no_rope_layers == [1, 1, 1, 0] and c.moe_layers == [1, 3]  # a NoPE layer, experts on layers 1 and 3
    blocks = model.stack.blocks
    assert [b.attention.rotary is None for b in blocks] == [False, False, False, True]
    assert [hasattr(b.ffn, "router") for b in blocks] == [False, True, False, True]
    assert all(b.ffn.input_scaled for b in blocks if hasattr(b.ffn, "router"))
    assert model.max_tokens == 16  # the chunk size: below it the chunked mask is the causal one
    assert_reproduces(model.library.model, model.stack, _X(1))
    assert_reproduces(model.library.model, model.stack, _X(2), mask=[1] * 9 + [0, 0])


@pytest.mark.parametrize("side", ["left", "right"])
def test_token_ids_padded_batch(model, side):
    assert_padded_batch(model, side, 11, V)


def test_logits_and_text(model):
    texts = ["the cat sat on the mat", "a dog"]
    forms = model.duat_form(texts)
    enc = model.tokenizer(texts, padding=True)
    ids, mask = np.asarray(enc["input_ids"]), np.asarray(enc["attention_mask"])
    with torch.no_grad(), library_float64():
        logits = model.library(input_ids=torch.as_tensor(ids), attention_mask=torch.as_tensor(mask)).logits.numpy()
    for b, form in enumerate(forms):
        want = logits[b][mask[b].astype(bool)]
        got = model.head.logits(form.output)
        assert np.max(np.linalg.norm(want - got, axis=1) / np.linalg.norm(want, axis=1)) <= TOL
    a = forms[0].attribution("term", target=3, position=2)
    assert abs(float(a.values.sum() + a.rest) - float(logits[0][mask[0].astype(bool)][2, 3])) <= 1e-12


def test_attributions_sum_to_the_librarys_logit(model):
    ids = np.arange(1, 10)
    form = model.duat_form(input_ids=ids)
    with torch.no_grad(), library_float64():
        logits = model.library(input_ids=torch.as_tensor(ids)[None]).logits[0].numpy()
    token = int(np.argmax(logits[4]))
    want = float(logits[4, token])
    for by in ("source", "layer", "head", "neuron", "expert"):  # reverse mode through the held network (D_in held)
        a = form.attribution(by, target=token, position=4, quiet=True)
        assert abs(float(a.values.sum() + a.rest) - want) <= TOL * max(1.0, abs(want)), by
    assert form.attribution("expert", quiet=True).error <= TOL
    assert _rel_rows(form.frozen(gates="live")(form.X0), form.output) <= TOL


def _rel_rows(got, want):
    return float(np.max(np.linalg.norm(got - want, axis=1) / np.linalg.norm(want, axis=1)))


def test_patching_matches_library_hooks(model):
    from patching_support import library_patched, units

    rng = np.random.default_rng(11)
    clean = rng.integers(2, V, size=7)
    corrupted = clean.copy()
    corrupted[[1, 3]] = (clean[[1, 3]] + 5) % (V - 2) + 2
    fc, fx = model.duat_form(input_ids=clean), model.duat_form(input_ids=corrupted)
    moved = {}
    for unit in units(model.stack):  # experts too: their rows of the experts module's output (pre-scaled inputs)
        got = fx.patch(unit, fc)
        hidden, logits = library_patched(model, clean, corrupted, unit)
        moved[unit[0]] = max(moved.get(unit[0], 0.0), float(np.max(np.abs(got.output - fx.output))))
        assert _rel_rows(got.output, hidden) <= TOL, unit
        assert np.max(np.abs(got.logits - logits)) <= 10 * TOL * max(1.0, float(np.max(np.abs(logits)))), unit
    assert moved["expert"] > 1e-9 and min(moved.values()) > 1e-9, moved  # every kind of patch changes the output


OPTIONS = {
    "no qk norm": dict(use_qk_norm=False),
    "attention biases": dict(attention_bias=True),
    "one expert per token, experts on every layer": dict(num_experts_per_tok=1, interleave_moe_layer_step=1),
    "temperature tuning sets the limit": dict(floor_scale=9),
    "no temperature tuning": dict(attn_temperature_tuning=False),
    "yarn without qk norm": dict(use_qk_norm=False, rope_parameters={
        "rope_type": "yarn", "rope_theta": 10000.0, "factor": 2.0, "original_max_position_embeddings": 32}),
    "every layer rotary": dict(no_rope_layers=[1, 1, 1, 1]),
}


@pytest.mark.parametrize("case", sorted(OPTIONS))
def test_options_that_change_the_math_are_exact(case):
    library = _library(**OPTIONS[case]).eval()
    stack = from_module(library)
    n = min(11, 8 if case.startswith("temperature") else 11)
    assert_reproduces(library.model, stack, _X(3, n))


def test_the_position_limits_are_the_librarys():
    """Past the chunk size the library's chunked mask is no longer causal, past floor_scale - 1 its temperature is no
    longer 1: the stack covers the positions below both, and a longer input is refused by name."""
    model = load(_library(attention_chunk_size=6, floor_scale=20))
    assert model.max_tokens == 6
    model.duat_form(input_ids=np.arange(1, 7))
    with pytest.raises(ShapeError, match=r"input_ids has 7 tokens; the model covers at most 6 positions"):
        model.duat_form(input_ids=np.arange(1, 8))
    assert load(_library(attention_chunk_size=64, floor_scale=5)).max_tokens == 4
    ids = torch.arange(1, 8)[None]
    with torch.no_grad(), library_float64():  # the limits matter: past them the library's own numbers change
        chunked, causal, warm = (_library(**k).eval().model(input_ids=ids).last_hidden_state[0, -1].numpy() for k in (
            dict(attention_chunk_size=6, floor_scale=20), dict(attention_chunk_size=64, floor_scale=20),
            dict(attention_chunk_size=64, floor_scale=5)))
    assert np.max(np.abs(chunked - causal)) > 1e-6 and np.max(np.abs(warm - causal)) > 1e-6


REFUSED = {
    "qk norm with a scaled rotary table": (dict(rope_parameters={
        "rope_type": "yarn", "rope_theta": 10000.0, "factor": 2.0, "original_max_position_embeddings": 32}),
        r"layers\.0\.self_attn: use_qk_norm with a rotary table of magnitude .* \(attention_scaling\)"),
    "no rotary layer to carry the limit": (dict(no_rope_layers=[0, 0, 0, 0]),
                                           r"llama4_text without a rotary layer: nothing carries its position limit"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_options_symuat_cannot_represent_are_refused_by_name(case):
    options, match = REFUSED[case]
    with pytest.raises(UnsupportedError, match=match):
        from_module(_library(**options).eval())
