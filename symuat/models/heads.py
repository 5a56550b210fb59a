r"""A transformers model's head → :class:`~symuat.numeric.Head` (transform, scale, cap), checked on a probe.

The head is read from the library model's class (its name's suffix) and public submodules:

``…ForCausalLM``, ``…LMHeadModel``
    ``get_output_embeddings()`` (weight, bias); Cohere's ``logit_scale`` (the model's attribute), Granite's
    ``1 / logits_scaling`` (the config); Gemma-2/3's ``final_logit_softcapping`` (the config).
``BertForMaskedLM``, ``BertForPreTraining`` (``prediction_logits``), ``RobertaForMaskedLM``, ``DistilBertForMaskedLM``,
``ModernBertForMaskedLM``
    The transform ``dense → act → LayerNorm`` and the decoder with its bias.  BERT's next-sentence head (on the
    pooler) is not imported: ``BertForPreTraining``'s ``seq_relationship_logits`` are not part of the head.
``T5ForConditionalGeneration``, ``MT5…``, ``UMT5…`` (an encoder–decoder)
    ``lm_head`` on the decoder's output, times :math:`d_{model}^{-1/2}` where the family's config says so
    (:data:`symuat.models.seq2seq.OUTPUT_SCALE`).
``…ForSequenceClassification``
    Decoders: ``score`` at the last token (``reads="last"``).  BERT: the pooler ``dense → tanh`` and
    ``classifier``; RoBERTa: ``classifier.dense → tanh → classifier.out_proj``; DistilBERT: ``pre_classifier →
    ReLU → classifier``, all at the first token (``reads="first"``).
``…ForTokenClassification``
    ``classifier`` (or ``score``) at every token.

Any other head (question answering, multiple choice, next-sentence prediction, …) is refused by name
(:func:`read_head` returns the reason; the hidden states' form is still exact).  :func:`probe_head` runs the
library's whole model on one probe input and compares its ``.logits`` with the imported head at the rows the
library returns: a head that computes something else is refused by name.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from ..errors import UnsupportedError
from ..numeric import Head, HeadTransform
from ._torch import library_base, linear, require_torch
from .activations import activation_name, check_activation
from .hf_common import layer_norm
from .precision import library_float64

__all__ = ["read_head", "probe_head"]


def _affine(name: str, module: Any, family: str) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    W, b = linear(name, module)
    return W.T, b


def _causal(model: Any, family: str) -> Head:
    head = model.get_output_embeddings()
    U, b = _affine("lm_head", head, family)
    scale = float(getattr(model, "logit_scale", 1.0) if family == "cohere" else 1.0)
    if getattr(model.config, "logits_scaling", None):  # Granite: logits / logits_scaling (the probe checks it)
        scale /= float(model.config.logits_scaling)
    cap = getattr(model.config, "final_logit_softcapping", None)
    return Head(U, b, scale=scale, softcap=None if cap is None else float(cap), name=type(model).__name__)


def _transform(n: str, dense: Any, act_fn: Any, act: str, norm: Any = None) -> HeadTransform:
    W, b = linear(f"{n}.dense", dense)
    if act == "tanh" and act_fn is not None and type(act_fn) is not require_torch().nn.Tanh:
        raise UnsupportedError(f"{n}.activation is a {type(act_fn).__name__}, not the nn.Tanh of the family")
    if act != "tanh" and act_fn is not None:
        check_activation(act_fn, act, f"{n}.act")
    return HeadTransform(W, b, act, None if norm is None else layer_norm(f"{n}.LayerNorm", norm))


def _bert_mlm(model: Any, family: str) -> Head:
    p = model.cls.predictions
    t = p.transform
    act = activation_name(model.config.hidden_act, "config.hidden_act")
    U, b = _affine("cls.predictions.decoder", p.decoder, family)
    return Head(U, b, _transform("cls.predictions.transform", t.dense, t.transform_act_fn, act, t.LayerNorm),
                name=type(model).__name__)


def _roberta_mlm(model: Any, family: str) -> Head:
    h = model.lm_head
    U, b = _affine("lm_head.decoder", h.decoder, family)
    # the forward calls transformers' exact gelu function (no module to check): the head probe checks it
    return Head(U, b, _transform("lm_head", h.dense, None, "gelu", h.layer_norm), name=type(model).__name__)


def _distilbert_mlm(model: Any, family: str) -> Head:
    act = activation_name(model.config.activation, "config.activation")
    U, b = _affine("vocab_projector", model.vocab_projector, family)
    return Head(U, b, _transform("vocab_transform", model.vocab_transform, model.activation, act,
                                 model.vocab_layer_norm), name=type(model).__name__)


def _modernbert_mlm(model: Any, family: str) -> Head:
    h = model.head
    act = activation_name(model.config.classifier_activation, "config.classifier_activation")
    U, b = _affine("decoder", model.decoder, family)
    return Head(U, b, _transform("head", h.dense, h.act, act, h.norm), name=type(model).__name__)


def _sequence(model: Any, family: str) -> Head:
    name = type(model).__name__
    if family == "bert":
        pooler = getattr(model.bert, "pooler", None)
        if pooler is None:
            raise UnsupportedError(f"{name} has no pooler: its classifier input is not imported")
        U, b = _affine("classifier", model.classifier, family)
        return Head(U, b, _transform("bert.pooler", pooler.dense, pooler.activation, "tanh"), name=name,
                    reads="first")
    if family == "roberta":
        c = model.classifier
        U, b = _affine("classifier.out_proj", c.out_proj, family)
        return Head(U, b, _transform("classifier", c.dense, None, "tanh"), name=name, reads="first")
    if family == "distilbert":
        U, b = _affine("classifier", model.classifier, family)
        return Head(U, b, _transform("pre_classifier", model.pre_classifier, None, "relu"), name=name, reads="first")
    U, b = _affine("score", model.score, family)
    return Head(U, b, name=name, reads="last")


def _token(model: Any, family: str) -> Head:
    module = getattr(model, "classifier", None) or getattr(model, "score", None)
    U, b = _affine("classifier", module, family)
    return Head(U, b, name=type(model).__name__)


#: Exact class names with their own head reader (checked before the suffixes).
_CLASSES = {"BertForMaskedLM": _bert_mlm, "BertForPreTraining": _bert_mlm, "RobertaForMaskedLM": _roberta_mlm,
            "DistilBertForMaskedLM": _distilbert_mlm, "ModernBertForMaskedLM": _modernbert_mlm}
#: Class-name suffix → head reader.
_SUFFIXES = {"ForCausalLM": _causal, "LMHeadModel": _causal, "ForSequenceClassification": _sequence,
             "ForTokenClassification": _token}


def _known_class(model: Any) -> str:
    """The name of the first transformers class in ``type(model)``'s MRO (a user subclass reads as its base)."""
    for cls in type(model).__mro__:
        if cls.__module__.startswith("transformers."):
            return cls.__name__
    return type(model).__name__


def read_head(model: Any) -> Tuple[Optional[Head], Optional[str]]:
    r"""``(head, None)``, ``(None, None)`` for a base model, or ``(None, reason)`` for a head symuat refuses."""
    cls = _known_class(model)
    if cls.endswith("ForConditionalGeneration") and getattr(model.config, "is_encoder_decoder", False):
        from .seq2seq import ENCODER_DECODERS, seq2seq_head

        if model.config.model_type in ENCODER_DECODERS:  # its base_model is itself (T5's lm_head hangs on it)
            return seq2seq_head(model), None
    if library_base(model) is model:
        return None, None
    family = str(model.config.model_type)
    reader = _CLASSES.get(cls) or next((r for s, r in _SUFFIXES.items() if cls.endswith(s)), None)
    if reader is None:
        return None, (f"the head of {cls} is not imported (symuat imports causal-LM, masked-LM, pre-training, "
                      "sequence- and token-classification heads): logits of this model are refused")
    return reader(model, family), None


def probe_head(model: Any, head: Head, stack: Any, tokens: int = 4, tol: float = 1e-10) -> None:
    r"""The library's ``.logits`` on a probe ``inputs_embeds`` equals ``head.logits`` of the stack's output at the
    rows the library returns (else :class:`UnsupportedError` naming the head)."""
    from ..numeric import stack_output

    torch = require_torch()
    n = min(tokens, 8 if stack.position_embeddings is None else stack.position_embeddings.shape[0])
    X = np.random.default_rng(2).standard_normal((n, stack.width))
    with torch.no_grad(), library_float64():
        out = model(inputs_embeds=torch.from_numpy(X)[None])
    want = getattr(out, "prediction_logits", None)
    want = out.logits if want is None else want
    want = want[0].detach().double().numpy()
    got = head.logits(stack_output(stack, X))
    rows = {"every": slice(None), "first": [0], "last": [n - 1]}[head.reads]
    got = got[rows]
    want = want.reshape(got.shape) if want.size == got.size else want
    err = float(np.max(np.abs(want - got)) / max(float(np.max(np.abs(want))), 1e-300)) if want.shape == got.shape \
        else np.inf
    if not err <= tol:
        raise UnsupportedError(f"the head of {head.name} does not compute what symuat imports (relative difference "
                               f"{err:.1e} from the library's logits on a probe input): a transform, scale or cap "
                               "symuat does not read?")
