"""Fault injection for the T5 encoder–decoders and the numeric cross-attention: hostile inputs (missing or mismatched
decoder input, pads between real tokens, ids out of the vocabulary, options T5 does not take), a module or config that
no longer computes what symuat reads, and cross-attention weights it cannot represent give the one named error; never
a silent wrong form."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, T = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import InvalidValueError, ShapeError, UnsupportedError  # noqa: E402
from symuat.models import load  # noqa: E402
from symuat.numeric import AttentionWeights, RMSNormWeights, duat_form, random_stack  # noqa: E402
from symuat.numeric.cross import CrossAttention  # noqa: E402

_S = dict(d_model=16, d_kv=8, d_ff=12, num_layers=2, num_heads=2, vocab_size=30, relative_attention_num_buckets=8,
          relative_attention_max_distance=6, pad_token_id=0, decoder_start_token_id=0)


@pytest.fixture(scope="module")
def model():
    return load(randomize(T.T5ForConditionalGeneration(T.T5Config(**_S)), seed=3))


IDS, DIDS = np.arange(1, 6), np.array([0, 4, 5])
INPUTS = {
    "no decoder input": (dict(input_ids=IDS), InvalidValueError,
                         r"t5 is an encoder–decoder: give exactly one of decoder_text and decoder_input_ids"),
    "both decoder inputs": (dict(input_ids=IDS, decoder_input_ids=DIDS, decoder_text="a"), InvalidValueError,
                            r"give exactly one of decoder_text and decoder_input_ids"),
    "no encoder input": (dict(decoder_input_ids=DIDS), InvalidValueError,
                         r"give exactly one of text and input_ids \(the encoder's input\)"),
    "rows mismatch": (dict(input_ids=np.stack([IDS, IDS]), decoder_input_ids=DIDS[None]), InvalidValueError,
                      r"the encoder's input has 2 row\(s\), the decoder's 1: give one decoder row per encoder row"),
    "1-D against 2-D": (dict(input_ids=IDS, decoder_input_ids=DIDS[None]), InvalidValueError,
                        r"the encoder's input has 1 row\(s\) \(1-D\), the decoder's 1:"),
    "decoder id out of vocabulary": (dict(input_ids=IDS, decoder_input_ids=[0, 30]), InvalidValueError,
                                     r"^decoder_input_ids must lie in \[0, 30\)"),
    "decoder mask all pads": (dict(input_ids=IDS, decoder_input_ids=DIDS, decoder_attention_mask=[0, 0, 0]),
                              InvalidValueError, r"^decoder_attention_mask row 0 has no real token"),
    "decoder text without a tokenizer": (dict(input_ids=IDS, decoder_text="a b"), InvalidValueError,
                                         r"^this model has no tokenizer.*decoder_input_ids"),
    "decoder pads between real tokens": (
        dict(input_ids=IDS, decoder_input_ids=DIDS, decoder_attention_mask=[1, 0, 1]), UnsupportedError,
        r"decoder_attention_mask row 0 has pads between real tokens: T5's relative position bias counts them"),
    "encoder pads between real tokens": (
        dict(input_ids=IDS, attention_mask=[1, 1, 0, 1, 1], decoder_input_ids=DIDS), UnsupportedError,
        r"attention_mask row 0 has pads between real tokens: T5's relative position bias counts them"),
    "position_ids": (dict(input_ids=IDS, decoder_input_ids=DIDS, position_ids=np.arange(5)), UnsupportedError,
                     r"position_ids is not an input of t5's encoder–decoder; give None"),
    "token_type_ids": (dict(input_ids=IDS, decoder_input_ids=DIDS, token_type_ids=np.zeros(5, int)), UnsupportedError,
                       r"token_type_ids is not an input of t5's encoder–decoder"),
    "text without a tokenizer": (dict(text="a b", decoder_input_ids=DIDS), InvalidValueError,
                                 r"this model has no tokenizer"),
}


@pytest.mark.parametrize("case", sorted(INPUTS))
def test_hostile_inputs(model, case):
    kwargs, error, match = INPUTS[case]
    with pytest.raises(error, match=match):
        model.duat_form(**kwargs)


def test_decoder_input_on_a_decoder_only_model_is_refused():
    m = load(randomize(T.GPT2Model(T.GPT2Config(n_embd=8, n_head=2, n_layer=1, n_positions=8, vocab_size=10))))
    with pytest.raises(InvalidValueError, match=r"decoder_input_ids is for an encoder–decoder; gpt2 is not one"):
        m.duat_form(input_ids=[1, 2], decoder_input_ids=[1])


def test_encoder_pads_between_real_tokens_are_refused_in_the_encoder_alone_too():
    m = load(randomize(T.T5EncoderModel(T.T5Config(**_S)), seed=1))
    with pytest.raises(UnsupportedError, match=r"attention_mask row 0 has pads between real tokens: a relative "
                                               r"position bias \(T5\) counts them"):
        m.duat_form(input_ids=np.arange(1, 6), attention_mask=[1, 1, 0, 1, 1])


def _model_dim(m):
    m.model_dim = 4  # the forward scales by model_dim ** -0.5; the config's d_model (16) says what symuat reads


def _cross_bias(m):
    m.decoder.block[1].layer[1].EncDecAttention.has_relative_attention_bias = True


def _two_sublayers(m):
    del m.decoder.block[0].layer[1]


def _cross_norm(m):
    m.decoder.block[0].layer[1].layer_norm = torch.nn.LayerNorm(16).double().eval()


def _cross_weight(m):
    with torch.no_grad():
        m.decoder.block[1].layer[1].EncDecAttention.o.weight.mul_(2.0)


MODULES = {
    "a model_dim that is not the config's d_model": (_model_dim, UnsupportedError,
                                       r"the head of T5ForConditionalGeneration does not compute what its weights"),
    "a cross-attention with a relative bias": (
        _cross_bias, UnsupportedError, r"decoder\.block\.1\.layer\.1\.EncDecAttention has a relative attention bias"),
    "a decoder block without its cross-attention": (
        _two_sublayers, UnsupportedError, r"decoder\.block\.0 has 2 sublayers, not self-attention, cross-attention"),
    "the cross-attention's norm a LayerNorm": (
        _cross_norm, UnsupportedError, r"decoder\.block\.0\.layer\.1\.layer_norm \(LayerNorm\) is not T5's RMSNorm"),
    "a module in training mode": (lambda m: m.decoder.train(), UnsupportedError, r"in training mode"),
}


@pytest.mark.parametrize("case", sorted(MODULES))
def test_modules_symuat_cannot_read(case):
    edit, error, match = MODULES[case]
    library = randomize(T.T5ForConditionalGeneration(T.T5Config(**_S)), seed=4)
    edit(library)
    with pytest.raises(error, match=match):
        load(library)


def test_a_patched_cross_forward_is_caught_by_the_probe(monkeypatch):
    cls = T.models.t5.modeling_t5.T5LayerCrossAttention
    forward = cls.forward

    def doubled(self, *args, **kwargs):
        out = forward(self, *args, **kwargs)
        return (2 * out[0],) + tuple(out[1:])

    monkeypatch.setattr(cls, "forward", doubled)  # the class's own forward changed: no instance attribute to see
    library = randomize(T.T5ForConditionalGeneration(T.T5Config(**_S)), seed=4)
    with pytest.raises(UnsupportedError, match=r"the module's decoder does not compute what its weights and config "
                                               r"say"):
        load(library)


def _attn(**kw):
    W = np.eye(4)
    return AttentionWeights(W, W, W, W, n_heads=2, scale=1.0, **kw)


NUMERIC = {
    "a causal cross-attention": (lambda: CrossAttention(_attn(causal=True), RMSNormWeights(np.ones(4))),
                                 UnsupportedError, r"a cross-attention takes no causal \(its keys are the encoder's"),
    "a cross-attention with a position bias": (
        lambda: CrossAttention(_attn(position_bias=np.zeros((2, 3))), RMSNormWeights(np.ones(4))), UnsupportedError,
        r"a cross-attention takes no position_bias"),
    "a cross-attention without its norm": (lambda: CrossAttention(_attn(), None), InvalidValueError,
                                           r"norm must be the norm before the cross-attention, got None"),
    "a memory of the wrong width": (lambda: CrossAttention(_attn(), RMSNormWeights(np.ones(4)), np.ones((3, 5))),
                                    ShapeError, r"memory \(the encoder's output\) must have shape \(N_e >= 1, 4\), "
                                                r"got \(3, 5\)"),
    "a non-finite memory": (lambda: CrossAttention(_attn(), RMSNormWeights(np.ones(4)), np.full((2, 4), np.nan)),
                            InvalidValueError, r"memory must be finite"),
}


@pytest.mark.parametrize("case", sorted(NUMERIC))
def test_cross_attention_weights_it_cannot_represent(case):
    build, error, match = NUMERIC[case]
    with pytest.raises(error, match=match):
        build()


def _decoder(kind="pre_ln", memory=np.ones((2, 4))):
    rng = np.random.default_rng(0)
    stack = random_stack(rng, 1, 4, 2, 6, kind=kind, norm="rms")
    ca = CrossAttention(_attn(), RMSNormWeights(np.ones(4)), memory)
    return dataclasses.replace(stack, blocks=(dataclasses.replace(stack.blocks[0], cross=ca),))


def test_a_cross_attention_outside_pre_ln_is_refused():
    with pytest.raises(InvalidValueError, match=r"blocks\[0\] has a cross-attention, which symuat places in the "
                                                r"pre_ln layout only; kind='post_ln'"):
        _decoder("post_ln")


def test_an_unbound_memory_is_refused():
    with pytest.raises(InvalidValueError, match=r"cross-attention in layer 1: no encoder output is bound "
                                                r"\(memory=None\)"):
        duat_form(_decoder(memory=None), np.ones((2, 4)))


def test_a_block_cross_that_is_not_a_cross_attention():
    stack = random_stack(np.random.default_rng(0), 1, 4, 2, 6, kind="pre_ln", norm="rms")
    with pytest.raises(InvalidValueError, match=r"cross must be a CrossAttention or None, got AttentionWeights"):
        dataclasses.replace(stack.blocks[0], cross=_attn())


@pytest.mark.parametrize("args", [[], ["--text", "a b c"], ["--tokens", "4"]])
def test_the_cli_refuses_an_encoder_decoder_in_one_line(tmp_path, args):
    """``symuat model`` reports one stack: a saved T5 encoder–decoder is one error line that says how to evaluate it,
    exit 2, before any weight is read (the weights file is removed: a read would fail otherwise)."""
    from faults_support import one_error_line, run

    randomize(T.T5ForConditionalGeneration(T.T5Config(**_S)), seed=4).save_pretrained(tmp_path)
    for weights in tmp_path.glob("*.safetensors"):
        weights.unlink()
    line = one_error_line(run(["model", str(tmp_path), *args]))
    assert line == (f"symuat: error: {str(tmp_path)!r} is an encoder–decoder (t5): `symuat model` reports one stack; "
                    "evaluate it from Python with symuat.models.load(directory).duat_form(input_ids=..., "
                    "decoder_input_ids=...) (docs/models.md)\n")

