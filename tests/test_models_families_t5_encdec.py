"""T5, mT5 and UMT5 encoder–decoders (``…ForConditionalGeneration``): the decoder's DUAT form over the encoder's output
(``ext:cross-attention.mv-form``).  Every encoder token, every decoder token and layer and every logit within 1e-12 of
the library's float64 forward (``.encoder_last_hidden_state``, ``.decoder_hidden_states``, ``.logits``; inputs longer
than ``relative_attention_max_distance`` on both sides), left- and right-padded id batches on both sides, one text
and a batch of texts; the decoder's self- and cross-attention views are the library's eager probabilities; the views
rebuild the output; every attribution sums to the library's logit, the held network, the logit lens and the residual
stream are the library's, and activation patching equals the library's hooked run (the cross-attention is recomputed,
or held at the form's input)."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import TOL, assert_views_rebuild, duat_states, randomize, require_torch
from test_models_load import _tokenizer

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import UnsupportedError  # noqa: E402
from symuat.models import library_float64, load  # noqa: E402
from symuat.models.seq2seq import bind_memory  # noqa: E402

V, M = 30, 16
_S = dict(d_model=M, d_kv=8, d_ff=12, num_layers=2, num_heads=2, vocab_size=V, relative_attention_num_buckets=8,
          relative_attention_max_distance=6, pad_token_id=0, decoder_start_token_id=0)
FAMILIES = {
    "t5": lambda T: T.T5ForConditionalGeneration(T.T5Config(**_S)),
    "mt5": lambda T: T.MT5ForConditionalGeneration(T.MT5Config(**_S, feed_forward_proj="gated-gelu")),
    "umt5": lambda T: T.UMT5ForConditionalGeneration(T.UMT5Config(**_S, feed_forward_proj="gated-gelu")),
}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def model(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param)
    randomize(FAMILIES[request.param](transformers), seed=len(request.param)).save_pretrained(path)
    _tokenizer(bert=False).save_pretrained(path)
    return load(path)


def _library(model, ids, mask, dids, dmask):
    with torch.no_grad(), library_float64():
        return model.library(input_ids=torch.as_tensor(ids), attention_mask=torch.as_tensor(mask),
                             decoder_input_ids=torch.as_tensor(dids), decoder_attention_mask=torch.as_tensor(dmask),
                             output_hidden_states=True)


def _rel(want, got) -> float:
    return float(np.max(np.linalg.norm(want - got, axis=1) / np.linalg.norm(want, axis=1)))


def _check(model, forms, ids, mask, dids, dmask):
    out = _library(model, ids, mask, dids, dmask)
    for b, form in enumerate(forms):
        e, d = mask[b].astype(bool), dmask[b].astype(bool)
        assert _rel(out.encoder_last_hidden_state[b].numpy()[e], form.encoder.output) <= TOL
        assert _rel(out.decoder_hidden_states[-1][b].numpy()[d], form.output) <= TOL
        assert _rel(out.logits[b].numpy()[d], model.head.logits(form.output)) <= TOL
        assert np.array_equal(form.token_ids, dids[b][d]) and np.array_equal(form.encoder.token_ids, ids[b][e])


def test_every_token_every_layer_and_logit(model):
    ids, dids = np.arange(1, 10)[None], np.array([[0, 3, 4, 5, 6, 7, 8, 9]])  # 9 and 8 tokens > max_distance 6
    form = model.duat_form(input_ids=ids[0], decoder_input_ids=dids[0])
    expected_scale = 1.0 if model.family == "mt5" else M ** -0.5  # mT5's forward does not scale (transformers 5.2x)
    assert model.head.scale == expected_scale
    out = _library(model, ids, np.ones_like(ids), dids, np.ones_like(dids))
    stack = bind_memory(model.stack, form.encoder.output)
    for k, got in enumerate(duat_states(stack, form.X0), start=1):
        assert _rel(out.decoder_hidden_states[k][0].numpy(), got) <= TOL, k
    _check(model, [form], ids, np.ones_like(ids), dids, np.ones_like(dids))
    lib, rows = form.reference["logits"]()
    assert _rel(out.logits[0].numpy(), lib) <= 1e-15 and rows.tolist() == list(range(8))


@pytest.mark.parametrize("side", ["left", "right"])
def test_token_ids_padded_batch(model, side):
    rng = np.random.default_rng(5)
    ids, dids = rng.integers(1, V, size=(3, 9)), rng.integers(1, V, size=(3, 7))
    mask, dmask = np.zeros_like(ids), np.zeros_like(dids)
    for b, (n, dn) in enumerate([(9, 7), (5, 4), (2, 1)]):
        mask[b, slice(9 - n, 9) if side == "left" else slice(0, n)] = 1
        dmask[b, slice(7 - dn, 7) if side == "left" else slice(0, dn)] = 1
    forms = model.duat_form(input_ids=ids, attention_mask=mask, decoder_input_ids=dids, decoder_attention_mask=dmask)
    _check(model, forms, ids, mask, dids, dmask)


def test_text(model):
    tok = model.tokenizer
    texts, dtexts = ["the cat sat on the mat", "a dog"], ["the dog", "a cat sat on"]
    forms = model.duat_form(text=texts, decoder_text=dtexts)
    e, d = tok(texts, padding=True), tok(dtexts, padding=True)
    _check(model, forms, *(np.asarray(x) for x in (e["input_ids"], e["attention_mask"], d["input_ids"],
                                                   d["attention_mask"])))
    one = model.duat_form(text=texts[0], decoder_text=dtexts[1])
    assert one.to_str_tokens() == dtexts[1].split() and one.encoder.to_str_tokens() == texts[0].split()
    _check(model, [one], np.asarray([e["input_ids"][0]]), np.ones((1, 6), int),
           np.asarray([d["input_ids"][1]]), np.ones((1, 4), int))


def test_self_and_cross_attention_views_are_the_librarys(model):
    ids, dids = np.arange(1, 8), np.array([0, 5, 6, 7, 8])
    form = model.duat_form(input_ids=ids, decoder_input_ids=dids)
    configs = list({id(m.config): m.config for m in model.library.modules() if hasattr(m, "config")}.values())
    impls = [c._attn_implementation for c in configs]
    try:
        for c in configs:
            c._attn_implementation = "eager"  # probabilities come from eager only
        with torch.no_grad(), library_float64():
            out = model.library(input_ids=torch.as_tensor(ids)[None], decoder_input_ids=torch.as_tensor(dids)[None],
                                output_attentions=True)
            want, cross = out.decoder_attentions, out.cross_attentions
    finally:
        for c, impl in zip(configs, impls):
            c._attn_implementation = impl
    for k in range(2):
        for h in range(2):
            assert np.max(np.abs(form.attention(k, h) - want[k][0, h].numpy())) <= 1e-14
            assert form.cross_attention(k, h).shape == (5, 7)
            assert np.max(np.abs(form.cross_attention(k, h) - cross[k][0, h].numpy())) <= TOL  # E: the form's own
    with pytest.raises(UnsupportedError, match=r"layer 0 has no cross-attention"):
        form.encoder.cross_attention(0, 0)


def test_views_and_term_attribution(model):
    ids, dids = np.arange(2, 11), np.array([0, 4, 9, 2, 7, 1])
    form = model.duat_form(input_ids=ids, decoder_input_ids=dids)
    out = _library(model, ids[None], np.ones((1, 9), int), dids[None], np.ones((1, 6), int))
    assert_views_rebuild(model, form, out.decoder_hidden_states[-1][0].numpy())
    token = int(np.argmax(out.logits[0, 3].numpy()))
    a = form.attribution("term", target=token, position=3)
    want = float(out.logits[0, 3, token])
    assert abs(float(a.values.sum() + a.rest) - want) <= TOL * max(1.0, abs(want))
    assert sorted(form.params[0].dynamic) == (["W1", "W2", "W4", "b2", "b3", "b4"] if model.family != "t5" else
                                              ["W1", "W2", "b2", "b3"])  # the cross-attention term joins b'_3


def test_attributions_sum_to_the_librarys_logit(model):
    ids, dids = np.arange(2, 11), np.array([0, 4, 9, 2, 7, 1])
    form = model.duat_form(input_ids=ids, decoder_input_ids=dids)
    out = _library(model, ids[None], np.ones((1, 9), int), dids[None], np.ones((1, 6), int))
    token = int(np.argmax(out.logits[0, 4].numpy()))
    want = float(out.logits[0, 4, token])
    for by in ("source", "layer", "head", "neuron"):
        a = form.attribution(by, target=token, position=4, quiet=True)  # reverse mode through the held network
        assert abs(float(a.values.sum() + a.rest) - want) <= TOL * max(1.0, abs(want)), by
    assert form.attribution("head", quiet=True).error <= TOL  # every head at every token: sums to the output


def test_the_held_network_and_the_logit_lens(model):
    ids, dids = np.arange(2, 11), np.array([0, 4, 9, 2, 7, 1])
    form = model.duat_form(input_ids=ids, decoder_input_ids=dids)
    out = _library(model, ids[None], np.ones((1, 9), int), dids[None], np.ones((1, 6), int))
    assert _rel(out.decoder_hidden_states[-1][0].numpy(), form.frozen()(form.X0)) <= TOL
    assert _rel(out.logits[0].numpy(), form.logit_lens()[-1]) <= TOL
    assert _rel(out.decoder_hidden_states[1][0].numpy(), form.resid(1)) <= TOL  # the stream between the blocks


def test_patching_matches_library_hooks(model):
    from patching_support import library_patched_seq2seq, units

    rng = np.random.default_rng(11)
    enc, clean = rng.integers(2, V, size=6), rng.integers(2, V, size=7)
    corrupted = clean.copy()
    corrupted[[1, 3]] = (clean[[1, 3]] + 5) % (V - 2) + 2
    fc = model.duat_form(input_ids=enc, decoder_input_ids=clean)
    fx = model.duat_form(input_ids=enc, decoder_input_ids=corrupted)
    every = units(model.stack)  # T5: every kind of unit; mT5, UMT5: one of each sublayer (the suite's time)
    for unit in every if model.family == "t5" else [u for u in every if u in (("resid", 1, 4), ("head", 0, 1))]:
        got = fx.patch(unit, fc)
        hidden, logits = library_patched_seq2seq(model, enc, clean, corrupted, unit)
        assert _rel(hidden, got.output) <= TOL, unit
        assert np.max(np.abs(got.logits - logits)) <= 10 * TOL * max(1.0, float(np.max(np.abs(logits)))), unit
        assert np.max(np.abs(got.output - fx.output)) > 1e-9, unit  # no patch is a no-op
