"""Heads are part of the model (issue 28): every head a supported family ships (causal LM with Cohere's logit scale
and Gemma-2's soft cap, masked LM, pre-training, sequence and token classification) is imported with its transform,
scale and cap; its logits and logit attributions equal the library's own ``.logits`` (under ``library_float64``),
and ``Attribution.error`` is measured against the library."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, T = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import UnsupportedError  # noqa: E402
from symuat.models import library_float64, load  # noqa: E402

V = 30
_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=24,
          max_position_embeddings=32, vocab_size=V)
_B = dict(_S, type_vocab_size=2)
_D = dict(dim=16, n_heads=2, n_layers=2, hidden_dim=24, max_position_embeddings=32, vocab_size=V)

#: name -> (model factory, which rows the library's .logits holds)
HEADS = {
    "bert-mlm": (lambda: T.BertForMaskedLM(T.BertConfig(**_B)), "every"),
    "bert-pretraining": (lambda: T.BertForPreTraining(T.BertConfig(**_B)), "every"),
    "roberta-mlm": (lambda: T.RobertaForMaskedLM(T.RobertaConfig(**_B, pad_token_id=1)), "every"),
    "distilbert-mlm": (lambda: T.DistilBertForMaskedLM(T.DistilBertConfig(**_D)), "every"),
    "cohere-scale": (lambda: T.CohereForCausalLM(T.CohereConfig(**_S, logit_scale=0.0625)), "every"),
    "gemma2-cap": (lambda: T.Gemma2ForCausalLM(T.Gemma2Config(**_S, head_dim=8, num_key_value_heads=1,
                                                              final_logit_softcapping=0.7, query_pre_attn_scalar=8)),
                   "every"),
    "bert-seq": (lambda: T.BertForSequenceClassification(T.BertConfig(**_B, num_labels=3)), "first"),
    "roberta-seq": (lambda: T.RobertaForSequenceClassification(T.RobertaConfig(**_B, pad_token_id=1,
                                                                               num_labels=3)), "first"),
    "distilbert-seq": (lambda: T.DistilBertForSequenceClassification(T.DistilBertConfig(**_D, num_labels=3)),
                       "first"),
    "llama-seq": (lambda: T.LlamaForSequenceClassification(T.LlamaConfig(**_S, num_labels=3)), "last"),
    "gpt2-token": (lambda: T.GPT2ForTokenClassification(T.GPT2Config(n_embd=16, n_head=2, n_layer=2, n_positions=32,
                                                                      vocab_size=V, num_labels=4)), "every"),
}
IDS = np.array([4, 9, 3, 7, 12, 5])
#: Heads whose kind another case already covers in the default run (Cohere's scale and Gemma-2's cap also in
#: tests/faults/test_heads_faults.py): CI's slow step runs them.
SLOW = {"cohere-scale", "gemma2-cap", "roberta-seq", "distilbert-seq", "gpt2-token"}


@pytest.fixture(scope="module", params=[pytest.param(h, marks=pytest.mark.slow) if h in SLOW else h
                                        for h in sorted(HEADS)])
def case(request, tmp_path_factory):
    make, reads = HEADS[request.param]
    path = tmp_path_factory.mktemp(request.param)
    randomize(make(), seed=7).save_pretrained(path)
    model = load(path)
    with torch.no_grad(), library_float64():
        out = model.library(input_ids=torch.as_tensor(IDS)[None])
    want = getattr(out, "prediction_logits", None)
    want = (out.logits if want is None else want)[0].numpy()
    return request.param, model, model.duat_form(input_ids=IDS), reads, want


def _rows(reads):
    return {"every": slice(None), "first": [0], "last": [len(IDS) - 1]}[reads]


def test_head_logits_equal_the_library_logits(case):
    _, model, form, reads, want = case
    assert model.head is not None and model.head.reads == reads
    got = model.head.logits(form.output)[_rows(reads)]
    assert np.max(np.abs(got - want.reshape(got.shape))) <= 1e-11 * max(1.0, np.max(np.abs(want)))


@pytest.mark.parametrize("by", ["head", "neuron", "source"])
def test_logit_attribution_sums_to_the_library_logits(case, by):
    _, _, form, reads, want = case
    a = form.attribution(by, target="logits")
    total = (a.values.sum(0) + a.rest)[_rows(reads)]
    assert np.max(np.abs(total - want.reshape(total.shape))) <= 1e-11 * max(1.0, np.max(np.abs(want)))
    assert a.compared_with == "library" and a.error <= 1e-11 * max(1.0, np.max(np.abs(want)))
    t = form.attribution(by, target=2)
    assert t.values.shape == (len(t.parts), len(IDS)) and t.compared_with == "library"
    assert abs((t.values.sum(0) + t.rest)[_rows(reads)] - want.reshape(-1, want.shape[-1])[:, 2]).max() <= 1e-11


def test_the_transform_scale_and_cap_matter(case):
    """Dropping what the head adds to U (its transform, scale or cap) changes the logits: each part is needed."""
    name, model, form, reads, want = case
    h = model.head
    plain = form.output @ h.U.T + (0.0 if h.b is None else h.b)
    differs = np.max(np.abs(plain[_rows(reads)] - want.reshape(plain[_rows(reads)].shape)))
    if h.transform is None and h.scale == 1.0 and h.softcap is None:
        assert differs <= 1e-11 * max(1.0, np.max(np.abs(want)))  # affine heads: U and b are the whole head
    else:
        assert differs >= 1e-2, name


def test_graph_logit_is_the_library_logit(case):
    name, model, form, reads, want = case
    if reads != "every":
        pytest.skip("the graph reads the last token's logit; this head's library logits are one row")
    g = form.graph(3, [str(i) for i in IDS], list(IDS))
    meta = g["metadata"]["symuat"]
    assert meta["value_from"] == "library" and meta["value"] == pytest.approx(want[-1, 3], abs=1e-12)
    assert meta["error_max"] <= 1e-11 * max(1.0, np.max(np.abs(want)))
    into = [li["weight"] for li in g["links"] if li["target"] == f"{form.depth + 1}_3_{len(IDS) - 1}"]
    assert abs(sum(into) + meta["rest"] - want[-1, 3]) <= 1e-11 * max(1.0, np.max(np.abs(want)))
    assert meta["feature_links"] == len(g["links"]) - len(into) > 0  # BERT's post-LN included


def test_a_head_symuat_does_not_import_is_refused_by_name(tmp_path):
    randomize(T.BertForQuestionAnswering(T.BertConfig(**_B)), seed=1).save_pretrained(tmp_path)
    model = load(tmp_path)
    assert model.head is None and "BertForQuestionAnswering" in model.head_refusal
    form = model.duat_form(input_ids=IDS)
    assert form.attribution("head").compared_with == "library"  # the hidden states' form is still exact
    with pytest.raises(UnsupportedError, match="the head of BertForQuestionAnswering is not imported"):
        form.attribution("head", target="logits")


def test_hidden_state_attribution_is_measured_against_the_library(case):
    _, model, form, _, _ = case
    a = form.attribution("layer")
    assert a.compared_with == "library" and a.error <= 1e-12 * max(1.0, np.max(np.abs(form.output)))
    assert np.array_equal(a.reference, form.reference["output"])
