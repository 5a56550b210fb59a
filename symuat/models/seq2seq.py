r"""Encoder–decoder models (T5, mT5, UMT5 ``…ForConditionalGeneration`` and ``…Model``): the decoder's DUAT form over
the encoder's output.

The model has two stacks (:func:`~symuat.models.hf_t5.t5_stack`): the encoder's, and the decoder's, whose blocks add
a cross-attention over the encoder's output :math:`E` (``ext:cross-attention.mv-form``, :mod:`symuat.numeric.cross`).
For one row of encoder ids (real tokens :math:`R_e`) and decoder ids (real tokens :math:`R_d`):

1. the encoder's form over :math:`E[t_{R_e}]` (``form.encoder``); its output is :math:`E` (exact, like any form);
2. the decoder's stack with every cross-attention reading that :math:`E` (a fixed input of the decoder: no key is
   masked, the pads are not in it), and its form over the decoder's embeddings :math:`E[t_{R_d}]`.

``form.output`` is the library's decoder ``last_hidden_state`` at :math:`R_d`, and the head (``lm_head``, with T5's
:math:`d_{model}^{-1/2}` on the decoder's output where the family's config says so, :data:`OUTPUT_SCALE`) gives the
library's ``.logits``.  T5's relative bias counts the pads between two real tokens, so a row whose real tokens are
not contiguous is refused (left and right padding are exact: the bias depends on :math:`j - i` only).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any, Optional, Tuple

import numpy as np

from ..errors import InvalidValueError, SymuatError, UnsupportedError
from ..numeric import Head, TransformerStack, stack_output
from ..numeric.stack import bind_memory
from ._torch import linear, require_torch
from .device import to_device
from .guards import check_float64, check_module
from .hf_common import check_config
from .hf_t5 import t5_stack
from .precision import library_float64
from .reference import _LibraryReference

__all__ = ["ENCODER_DECODERS", "OUTPUT_SCALE", "is_encoder_decoder", "seq2seq_stacks", "seq2seq_head",
           "probe_seq2seq", "seq2seq_forms", "bind_memory"]

#: Families whose encoder–decoder symuat reads.
ENCODER_DECODERS = ("t5", "mt5", "umt5")

#: The config attributes, in order, that say whether the family's forward multiplies the decoder's output by
#: :math:`d_{model}^{-1/2}` before ``lm_head`` (the first one the config has decides; none: no scaling).  T5 and
#: UMT5 (transformers 5.24): ``scale_decoder_outputs``; UMT5 in 5.23: ``tie_word_embeddings``; mT5's forward scales
#: nothing in 5.23 and 5.24.  The head probe compares with the library's ``.logits`` whatever the table says.
OUTPUT_SCALE = {"t5": ("scale_decoder_outputs",), "umt5": ("scale_decoder_outputs", "tie_word_embeddings"),
                "mt5": ()}


def is_encoder_decoder(model: Any) -> bool:
    """Whether ``model`` is a transformers encoder–decoder: ``config.is_encoder_decoder`` and a ``decoder`` submodule
    (``UMT5EncoderModel`` keeps the flag of its config but has no decoder)."""
    return bool(getattr(getattr(model, "config", None), "is_encoder_decoder", False)) and \
        getattr(model, "decoder", None) is not None


def seq2seq_stacks(model: Any) -> Tuple[TransformerStack, TransformerStack]:
    r"""``(encoder, decoder)``: the two stacks of a transformers encoder–decoder (the decoder's cross-attentions
    unbound), checked on a probe input against the library."""
    config = model.config
    family = getattr(config, "model_type", None)
    if family not in ENCODER_DECODERS:
        raise UnsupportedError(f"unsupported encoder–decoder {family!r} ({type(model).__name__}); symuat reads "
                               f"{list(ENCODER_DECODERS)}")
    check_config(config)
    check_module(model)
    check_float64(model)
    encoder, decoder = model.get_encoder(), model.get_decoder()
    stacks = (t5_stack(encoder, encoder.config, family, "encoder"),
              t5_stack(decoder, decoder.config, family, "decoder"))
    probe_seq2seq(model, *stacks)
    return stacks


def seq2seq_head(model: Any) -> Head:
    r"""``lm_head`` of a ``…ForConditionalGeneration``, with the decoder-output scale of :data:`OUTPUT_SCALE`."""
    family = str(model.config.model_type)
    W, b = linear("lm_head", model.get_output_embeddings())
    flags = [getattr(model.config, a) for a in OUTPUT_SCALE.get(family, ()) if hasattr(model.config, a)]
    scale = float(model.config.d_model) ** -0.5 if flags and flags[0] else 1.0
    return Head(W.T, b, scale=scale, name=type(model).__name__)


def probe_seq2seq(model: Any, encoder: TransformerStack, decoder: TransformerStack, head: Optional[Head] = None,
                  tol: float = 1e-10) -> None:
    r"""The library's encoder and decoder hidden states (and, with ``head``, its ``.logits``) on random
    ``inputs_embeds`` equal the stacks' (else :class:`UnsupportedError` naming what differs)."""
    torch = require_torch()
    rng = np.random.default_rng(1)
    Xe, Xd = rng.standard_normal((5, encoder.width)), rng.standard_normal((3, decoder.width))
    with torch.no_grad(), library_float64():
        enc = model.get_encoder()(inputs_embeds=torch.from_numpy(Xe)[None]).last_hidden_state
        dec = model.get_decoder()(inputs_embeds=torch.from_numpy(Xd)[None], encoder_hidden_states=enc)
        logits = None if head is None else model(inputs_embeds=torch.from_numpy(Xe)[None],
                                                 decoder_inputs_embeds=torch.from_numpy(Xd)[None]).logits
    E = stack_output(encoder, Xe)
    D = stack_output(bind_memory(decoder, E), Xd)
    pairs = [("the module's encoder", enc[0].numpy(), E), ("the module's decoder", dec.last_hidden_state[0].numpy(), D)]
    if head is not None:
        pairs.append((f"the head of {head.name}", logits[0].numpy(), head.logits(D)))
    for what, want, got in pairs:
        err = float(np.max(np.abs(want - got)) / max(float(np.max(np.abs(want))), 1e-300))
        if not err <= tol:
            raise UnsupportedError(f"{what} does not compute what its weights and config say (relative "
                                   f"difference {err:.1e} on a probe input): a patched forward, scale or submodule?")


def _contiguous(mask: np.ndarray, what: str) -> None:
    for b in range(mask.shape[0]):
        real = np.flatnonzero(mask[b])
        if real[-1] - real[0] + 1 != real.size:
            raise UnsupportedError(f"{what} row {b} has pads between real tokens: T5's relative position bias counts "
                                   "them, the form over the real tokens would not")


def seq2seq_forms(model: Any, text: Any, input_ids: Any, attention_mask: Any, decoder_text: Any,
                  decoder_input_ids: Any, decoder_attention_mask: Any) -> Any:
    r"""``Model.duat_form`` of an encoder–decoder (module docstring): one decoder form per row, or a tuple."""
    if (text is None) == (input_ids is None):
        raise InvalidValueError("give exactly one of text and input_ids (the encoder's input)")
    if (decoder_text is None) == (decoder_input_ids is None):
        raise InvalidValueError(f"{model.family} is an encoder–decoder: give exactly one of decoder_text and "
                                "decoder_input_ids (the decoder's input) besides the encoder's")
    enc_side = _side(model, "", text, input_ids, attention_mask)
    dec_side = _side(model, "decoder_", decoder_text, decoder_input_ids, decoder_attention_mask)
    (single, ids, mask), (dsingle, dids, dmask) = enc_side, dec_side
    if single != dsingle or ids.shape[0] != dids.shape[0]:
        raise InvalidValueError(f"the encoder's input has {ids.shape[0]} row(s){' (1-D)' if single else ''}, the "
                                f"decoder's {dids.shape[0]}{' (1-D)' if dsingle else ''}: give one decoder row per "
                                "encoder row, both 1-D or both 2-D")
    _contiguous(mask, "attention_mask")
    _contiguous(dmask, "decoder_attention_mask")
    reference = _library_outputs(model, ids, mask, dids, dmask)
    encoder, decoder, on_device = model.encoder, model.stack, (lambda X: X)
    if model.device is not None:  # the torch backend: weights moved once (cached), the inputs each time
        encoder, decoder = (to_device(s, model.device, model._moved) for s in (encoder, decoder))
        on_device = functools.partial(to_device, device=model.device)
    forms = []
    for b in range(ids.shape[0]):
        real, dreal = np.flatnonzero(mask[b]), np.flatnonzero(dmask[b])
        enc = model._evaluate(encoder, on_device(model.inputs_embeds(ids[b, real], None)))
        enc = dataclasses.replace(enc, tokens=model._tokens(ids[b, real]), token_ids=_frozen(ids[b, real]))
        stack = bind_memory(decoder, enc.output)
        form = model._evaluate(stack, on_device(model.inputs_embeds(dids[b, dreal], None)))
        forms.append(dataclasses.replace(
            form, tokens=model._tokens(dids[b, dreal]), token_ids=_frozen(dids[b, dreal]), encoder=enc,
            unembedding=model.head if model.head is not None else model.head_refusal,
            reference=reference(b, dreal)))
    return forms[0] if single else tuple(forms)


def _frozen(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.setflags(write=False)
    return a


_INPUTS = re.compile(r"(?<![\w.])(input_ids|attention_mask|text)\b")


def _side(model: Any, prefix: str, text: Any, ids: Any, mask: Any) -> tuple:
    """``(single, ids, mask)`` of the encoder's (``prefix=""``) or the decoder's input; the decoder's errors name
    its own arguments (``decoder_input_ids``, …)."""
    try:
        if text is not None:
            if mask is not None:
                raise InvalidValueError("with text the tokenizer makes attention_mask")
            enc = model._encode(text)
            ids, mask = enc["input_ids"], enc["attention_mask"]
            if enc["single"]:
                ids, mask = ids[0], mask[0]
        single, ids, mask, _, _ = model._rows(ids, mask, None, None)
    except SymuatError as exc:
        if not prefix:
            raise
        raise type(exc)(_INPUTS.sub(lambda m: prefix + m.group(1), str(exc))) from None
    return single, ids, mask


def _library_outputs(model: Any, ids, mask, dids, dmask):
    r"""``(row, real) → reference``: the library's decoder last hidden state (its encoder and decoder submodules, run
    once over the batch when first read) and its ``.logits`` (the whole model on that row, on demand)."""
    torch = require_torch()
    kw = {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask),
          "decoder_input_ids": torch.from_numpy(dids), "decoder_attention_mask": torch.from_numpy(dmask)}
    held: dict = {}

    def hidden() -> np.ndarray:
        if "hidden" not in held:
            lib = model.library
            with torch.no_grad(), library_float64():
                enc = lib.get_encoder()(input_ids=kw["input_ids"], attention_mask=kw["attention_mask"])
                dec = lib.get_decoder()(input_ids=kw["decoder_input_ids"], attention_mask=kw["decoder_attention_mask"],
                                        encoder_hidden_states=enc.last_hidden_state,
                                        encoder_attention_mask=kw["attention_mask"])
            held["hidden"] = dec.last_hidden_state.detach().double().numpy()
        return held["hidden"]

    def logits(b: int, real: np.ndarray) -> tuple:
        with torch.no_grad(), library_float64():
            out = model.library(**{k: v[b:b + 1] for k, v in kw.items()})
        return out.logits[0].detach().double().numpy()[real], np.arange(real.size)

    def reference(b: int, real: np.ndarray):
        return _LibraryReference(lambda: hidden()[b, real], None if model.head is None else
                                 (lambda: logits(b, real)))
    return reference
