r"""T5, mT5 and UMT5 encoders (``T5EncoderModel`` and kin) → a ``pre_ln`` :class:`~symuat.numeric.TransformerStack`.

Each block is ``x + o(SelfAttention(layer_norm x))`` then ``+ wo(act(wi u))`` (or the gated ``act(wi_0 u) ⊙ wi_1
u``) of its own ``layer_norm``, with the encoder's ``final_layer_norm``; every norm is T5's RMSNorm (no mean, no
bias).  Scores are not scaled (``scaling = 1``) and get T5's bucketed relative position bias, bidirectional in the
encoder: :class:`~symuat.numeric.AttentionWeights` ``position_bias``, the table of every relative position
:math:`j - i` read from the attention module's own ``compute_bias`` (T5, mT5: layer 0's bias, shared by all layers as
the library passes it on; UMT5: each layer's own).  No positions otherwise.

An encoder–decoder (``T5Model``, ``T5ForConditionalGeneration``, …) is refused by name: its decoder's
cross-attention takes the encoder's output as an input from outside the decoder's residual stream, which the stack
does not hold (issue 29's cross-attention entry is not written yet).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedError
from ..numeric import AttentionWeights, BlockWeights, FFNWeights, GatedFFNWeights, TransformerStack
from ..numeric.norms import RMSNormWeights
from ._torch import array, linear, require_torch
from .activations import activation_name, check_activation
from .hf_common import MAX_POSITIONS, probe_norm
from .precision import library_float64

__all__ = ["T5", "t5_encoder"]


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


def t5_encoder(family: str):
    r"""Importer of the ``family`` encoder (module docstring)."""
    def build(base: Any, config: Any) -> TransformerStack:
        if getattr(base, "decoder", None) is not None or getattr(base, "encoder", None) is None:
            raise UnsupportedError(f"{type(base).__name__} ({family}) is an encoder–decoder: symuat reads the "
                                   f"encoder alone ({family.upper() if family != 'umt5' else 'UMT5'}EncoderModel); "
                                   "the decoder's cross-attention is not modelled")
        enc = base.encoder
        if getattr(enc, "is_decoder", False):
            raise UnsupportedError(f"{family}: the encoder stack is a decoder (is_decoder=True)")
        act = activation_name(config.dense_act_fn, "config.dense_act_fn")
        H = config.num_heads
        P = MAX_POSITIONS
        table = None
        blocks = []
        for i, blk in enumerate(enc.block):
            n = f"encoder.block.{i}"
            if len(blk.layer) != 2:
                raise UnsupportedError(f"{n} has {len(blk.layer)} sublayers, not self-attention and FF (a decoder?)")
            sal, ffl = blk.layer
            sa = sal.SelfAttention
            if sa.has_relative_attention_bias:
                table = _bias_table(f"{n}.layer.0.SelfAttention", sa, P)
            if table is None:
                raise UnsupportedError(f"{n}: no relative attention bias before this layer")
            (WQ, bQ), (WK, bK), (WV, bV), (WO, bO) = (linear(f"{n}.layer.0.SelfAttention.{p}", getattr(sa, p))
                                                      for p in ("q", "k", "v", "o"))
            scale = float(getattr(sa, "scaling", 1.0) or 1.0)
            attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, head_dim=config.d_kv, scale=scale,
                                    causal=False, position_bias=table)
            blocks.append(BlockWeights(attn, _ffn(f"{n}.layer.1.DenseReluDense", ffl.DenseReluDense, act),
                                       _norm(f"{n}.layer.0.layer_norm", sal.layer_norm),
                                       _norm(f"{n}.layer.1.layer_norm", ffl.layer_norm)))
        return TransformerStack(tuple(blocks), "pre_ln", act,
                                final_norm=_norm("encoder.final_layer_norm", enc.final_layer_norm))
    build.__name__ = family
    return build


T5 = {f: t5_encoder(f) for f in ("t5", "mt5", "umt5")}
