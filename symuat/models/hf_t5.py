r"""T5, mT5 and UMT5 encoders (``T5EncoderModel`` and kin) → a ``pre_ln`` :class:`~symuat.numeric.TransformerStack`.

Each block is ``x + o(SelfAttention(layer_norm x))`` then ``+ wo(act(wi u))`` (or the gated ``act(wi_0 u) ⊙ wi_1
u``) of its own ``layer_norm``, with the encoder's ``final_layer_norm``; every norm is T5's RMSNorm (no mean, no
bias).  Scores are not scaled (``scaling = 1``) and get T5's bucketed relative position bias, bidirectional in the
encoder: :class:`~symuat.numeric.AttentionWeights` ``position_bias``, the table of every relative position
:math:`j - i` read from the attention module's own ``compute_bias`` (T5, mT5: layer 0's bias, shared by all layers as
the library passes it on; UMT5: each layer's own).  No positions otherwise.

An encoder–decoder (``T5Model``, ``T5ForConditionalGeneration``, …) has two stacks (:func:`t5_stack`, read by
:mod:`symuat.models.seq2seq`): the decoder's blocks are causal with their own unidirectional bias table, and add a
cross-attention over the encoder's output (``ext:cross-attention.mv-form``); ``from_module`` alone, which returns
one stack, refuses them by name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedError
from ..numeric import AttentionWeights, BlockWeights, FFNWeights, GatedFFNWeights, TransformerStack
from ..numeric.cross import CrossAttention
from ..numeric.norms import RMSNormWeights
from ._torch import array, linear, require_torch
from .activations import activation_name, check_activation
from .hf_common import MAX_POSITIONS, layout_message, probe_norm
from .precision import library_float64

__all__ = ["T5", "t5_encoder", "t5_stack"]


def _norm(name: str, module: Any) -> RMSNormWeights:
    eps = getattr(module, "variance_epsilon", None)
    if eps is None or getattr(module, "weight", None) is None or getattr(module, "bias", None) is not None:
        raise UnsupportedError(f"{name} ({type(module).__name__}) is not T5's RMSNorm (weight, variance_epsilon)")
    return probe_norm(name, module, RMSNormWeights(array(f"{name}.weight", module.weight), eps=float(eps)))


def _bias_table(name: str, sa: Any, P: int) -> np.ndarray:
    r"""``(H, 2P - 1)``: the module's bias at every relative position :math:`j - i \in [-(P-1), P-1]`."""
    torch = require_torch()
    with torch.no_grad(), library_float64():
        ahead = sa.compute_bias(1, P)[0, :, 0, :]  # query 0, keys 0..P-1: j - i = 0..P-1
        behind = sa.compute_bias(P, 1)[0, :, :, 0]  # queries 0..P-1, key 0: j - i = 0..-(P-1)
    ahead, behind = array(f"{name} ahead", ahead), array(f"{name} behind", behind)
    if not np.array_equal(ahead[:, 0], behind[:, 0]):
        raise UnsupportedError(f"{name}.compute_bias differs at relative position 0 between its two calls")
    return np.concatenate([behind[:, :0:-1], ahead], axis=1)


def _ffn(n: str, ff: Any, act: str) -> Any:
    check_activation(getattr(ff, "act", None), act, f"{n}.act")
    Wd, bd = linear(f"{n}.wo", ff.wo)
    if hasattr(ff, "wi_0"):
        (Wg, bg), (Wu, bu) = linear(f"{n}.wi_0", ff.wi_0), linear(f"{n}.wi_1", ff.wi_1)
        return GatedFFNWeights(Wg, Wu, Wd, bg, bu, bd, activation=act)
    W1, b1 = linear(f"{n}.wi", ff.wi)
    return FFNWeights(W1, b1, Wd, bd, activation=act)


def _attention(n: str, module: Any, config: Any, causal: bool, table: Any) -> AttentionWeights:
    (WQ, bQ), (WK, bK), (WV, bV), (WO, bO) = (linear(f"{n}.{p}", getattr(module, p)) for p in ("q", "k", "v", "o"))
    scale = float(getattr(module, "scaling", 1.0) or 1.0)
    return AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=config.num_heads, head_dim=config.d_kv,
                            scale=scale, causal=causal, position_bias=table)


def t5_stack(stack: Any, config: Any, family: str, part: str) -> TransformerStack:
    r"""The ``pre_ln`` stack of T5's ``part`` (``"encoder"`` or ``"decoder"``, the library's ``T5Stack``): the
    decoder's blocks are causal, with their own (unidirectional) relative bias, and carry their ``EncDecAttention``
    as a :class:`~symuat.numeric.cross.CrossAttention` whose memory (the encoder's output) is bound per input."""
    decoder = part == "decoder"
    if bool(getattr(stack, "is_decoder", False)) != decoder:
        raise UnsupportedError(f"{family}: the {part} stack has is_decoder={getattr(stack, 'is_decoder', None)!r}")
    act = activation_name(config.dense_act_fn, "config.dense_act_fn")
    table, blocks = None, []
    for i, blk in enumerate(stack.block):
        n = f"{part}.block.{i}"
        if len(blk.layer) != (3 if decoder else 2):
            raise UnsupportedError(f"{n} has {len(blk.layer)} sublayers, not self-attention"
                                   f"{', cross-attention' if decoder else ''} and FF ({layout_message(family)})")
        sal, ffl = blk.layer[0], blk.layer[-1]
        sa = sal.SelfAttention
        if sa.has_relative_attention_bias:
            table = _bias_table(f"{n}.layer.0.SelfAttention", sa, MAX_POSITIONS)
        if table is None:
            raise UnsupportedError(f"{n}: no relative attention bias before this layer")
        cross = None
        if decoder:
            cal = blk.layer[1]
            ca = cal.EncDecAttention
            if getattr(ca, "has_relative_attention_bias", False):
                raise UnsupportedError(f"{n}.layer.1.EncDecAttention has a relative attention bias: symuat reads a "
                                       "cross-attention without positions")
            cross = CrossAttention(_attention(f"{n}.layer.1.EncDecAttention", ca, config, False, None),
                                   _norm(f"{n}.layer.1.layer_norm", cal.layer_norm))
        blocks.append(BlockWeights(_attention(f"{n}.layer.0.SelfAttention", sa, config, decoder, table),
                                   _ffn(f"{n}.layer.{len(blk.layer) - 1}.DenseReluDense", ffl.DenseReluDense, act),
                                   _norm(f"{n}.layer.0.layer_norm", sal.layer_norm),
                                   _norm(f"{n}.layer.{len(blk.layer) - 1}.layer_norm", ffl.layer_norm), cross=cross))
    return TransformerStack(tuple(blocks), "pre_ln", act,
                            final_norm=_norm(f"{part}.final_layer_norm", stack.final_layer_norm))


def t5_encoder(family: str):
    r"""Importer of the ``family`` encoder (module docstring)."""
    def build(base: Any, config: Any) -> TransformerStack:
        if getattr(base, "decoder", None) is not None or getattr(base, "encoder", None) is None:
            raise UnsupportedError(f"{type(base).__name__} ({family}) is an encoder–decoder: from_module reads one "
                                   "stack; symuat.models.load(...) reads both, and Model.duat_form(input_ids=..., "
                                   "decoder_input_ids=...) gives the decoder's form over the encoder's output")
        return t5_stack(base.encoder, config, family, "encoder")
    build.__name__ = family
    return build


T5 = {f: t5_encoder(f) for f in ("t5", "mt5", "umt5")}
