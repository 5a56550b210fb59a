r"""Decoders with ALiBi (attention with linear biases) → a ``pre_ln`` :class:`~symuat.numeric.TransformerStack`.

ALiBi adds a per-head linear function of the key position to the scaled scores, inside :math:`H_h`:
:math:`H_h = \operatorname{softmax}(sQ_hK_h^{\mathsf T} + m_h\,[0, 1, \dots, N-1] + \text{mask})` (the
``alibi`` table of :class:`~symuat.numeric.AttentionWeights`, row :math:`h` = :math:`m_h j`).  The bias the
library adds is read from its own public table builders and differs from :math:`m_h j` only by a constant per
query row, which the softmax removes exactly:

``bloom``
    ``BloomModel.build_alibi_tensor``: :math:`m_h\,(\mathrm{cumsum}(\text{mask}) - 1)`, the position among the
    *real* tokens (pads do not count), so a left-padded row's form over its real tokens is exact.  The bias is not
    scaled by :math:`1/\sqrt d`.  The embeddings' LayerNorm ``word_embeddings_layernorm`` is the stack's input norm;
    the GELU is BLOOM's own tanh approximation (``gelu_bloom``: constant ``0.79788456``).
    ``apply_residual_connection_post_layernorm=True`` (the residual is the normed input) and ``pretraining_tp > 1``
    with ``slow_but_exact`` (the library drops the output projections' biases) are refused by name.
``mpt``
    ``MptModel.build_mpt_alibi_tensor`` for ``max_seq_len`` positions, sliced to the key length:
    :math:`m_h\,(j - N + 1)` with raw positions :math:`j` (pads count).  A left-padded row shifts every key of a
    row by the same amount (exact); pads *between* real tokens would not be a row constant and are refused by
    ``symuat.models.Model``.  LayerNorms without bias, ``Wqkv`` fused as :math:`[Q, K, V]`, the module's
    ``softmax_scale``; ``attn_config.clip_qkv`` (a clamp of Q, K, V) is refused by name.

The slopes are the library's (read under :func:`~symuat.models.library_float64`, so BLOOM's float32 slope
computation runs in float64 like the rest of the forward pass).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedError
from ..numeric import AttentionWeights, BlockWeights, FFNWeights, TransformerStack
from ._torch import array, linear, require_torch, split_columns
from .activations import check_activation
from .hf_common import MAX_POSITIONS, attention_scale, layer_norm
from .precision import library_float64

__all__ = ["ALIBI", "bloom", "mpt", "bloom_alibi", "mpt_alibi"]


def bloom_alibi(base: Any, H: int, P: int = MAX_POSITIONS) -> np.ndarray:
    r"""BLOOM's table :math:`m_h j` (``(H, P)``) from the model's own ``build_alibi_tensor`` on an all-ones mask."""
    torch = require_torch()
    with torch.no_grad(), library_float64():
        t = base.build_alibi_tensor(torch.ones(1, P, dtype=torch.long), H, torch.float64)
    return array("alibi", t.reshape(H, P))


def mpt_alibi(base: Any, H: int, P: int, bias_max: Any) -> np.ndarray:
    r"""MPT's table :math:`m_h j` (``(H, P)``): the slopes :math:`m_h` read from the model's own
    ``build_mpt_alibi_tensor`` (its entry at :math:`j = N - 2` is :math:`-m_h`) times :math:`j`."""
    torch = require_torch()
    with torch.no_grad(), library_float64():
        t = base.build_mpt_alibi_tensor(H, 2, bias_max)
    slopes = -array("alibi slopes", t.reshape(H, 2)[:, 0])
    return slopes[:, None] * np.arange(P, dtype=np.float64)[None, :]


def _refuse(option: str, value: Any, family: str, why: str) -> None:
    raise UnsupportedError(f"unsupported config option {option}={value!r} ({family}): {why}")


def bloom(base: Any, config: Any) -> TransformerStack:
    r"""HF ``BloomModel`` (module docstring)."""
    if config.apply_residual_connection_post_layernorm:
        _refuse("apply_residual_connection_post_layernorm", True, "bloom", "the residual is the normed input, a "
                "layout symuat does not model")
    if config.pretraining_tp > 1 and config.slow_but_exact:
        _refuse("slow_but_exact", True, "bloom", f"with pretraining_tp={config.pretraining_tp} the library drops the "
                "biases of the output projections")
    M, H = config.hidden_size, config.n_head
    d = M // H
    alibi = bloom_alibi(base, H)
    blocks = []
    for i, blk in enumerate(base.h):
        n, sa = f"h.{i}", blk.self_attention
        W, b = linear(f"{n}.self_attention.query_key_value", sa.query_key_value)
        cols = [np.array([h * 3 * d + j * d + c for h in range(H) for c in range(d)]) for j in range(3)]
        (WQ, bQ), (WK, bK), (WV, bV) = [(W[:, c], None if b is None else b[c]) for c in cols]
        WO, bO = linear(f"{n}.self_attention.dense", sa.dense)
        if float(sa.beta) != 1.0:
            raise UnsupportedError(f"{n}.self_attention.beta is {sa.beta}: the ALiBi term is scaled")
        attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, head_dim=d,
                                scale=float(sa.inv_norm_factor), causal=True, alibi=alibi)
        check_activation(blk.mlp.gelu_impl, "gelu_bloom", f"{n}.mlp.gelu_impl")
        W1, b1 = linear(f"{n}.mlp.dense_h_to_4h", blk.mlp.dense_h_to_4h)
        W2, b2 = linear(f"{n}.mlp.dense_4h_to_h", blk.mlp.dense_4h_to_h)
        blocks.append(BlockWeights(attn, FFNWeights(W1, b1, W2, b2),
                                   layer_norm(f"{n}.input_layernorm", blk.input_layernorm),
                                   layer_norm(f"{n}.post_attention_layernorm", blk.post_attention_layernorm)))
    return TransformerStack(tuple(blocks), "pre_ln", "gelu_bloom",
                            input_norm=layer_norm("word_embeddings_layernorm", base.word_embeddings_layernorm),
                            final_norm=layer_norm("ln_f", base.ln_f))


def mpt(base: Any, config: Any) -> TransformerStack:
    r"""HF ``MptModel`` (module docstring)."""
    M, H = config.hidden_size, config.n_heads
    d = M // H
    attn_config = config.attn_config
    if getattr(attn_config, "clip_qkv", None):
        _refuse("attn_config.clip_qkv", attn_config.clip_qkv, "mpt", "a clamp of Q, K, V is not modelled")
    P = int(min(MAX_POSITIONS, config.max_seq_len))
    alibi = mpt_alibi(base, H, P, attn_config.alibi_bias_max)
    blocks = []
    for i, blk in enumerate(base.blocks):
        n, sa = f"blocks.{i}", blk.attn
        if getattr(sa, "clip_qkv", None):
            _refuse(f"{n}.attn.clip_qkv", sa.clip_qkv, "mpt", "a clamp of Q, K, V is not modelled")
        W, b = linear(f"{n}.attn.Wqkv", sa.Wqkv)
        (WQ, bQ), (WK, bK), (WV, bV) = split_columns(f"{n}.attn.Wqkv", W, b, (M, M, M))
        WO, bO = linear(f"{n}.attn.out_proj", sa.out_proj)
        attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, head_dim=d,
                                scale=float(sa.softmax_scale if sa.softmax_scale is not None
                                            else attention_scale(sa, d)), causal=True, alibi=alibi)
        check_activation(blk.ffn.act, "gelu", f"{n}.ffn.act")
        W1, b1 = linear(f"{n}.ffn.up_proj", blk.ffn.up_proj)
        W2, b2 = linear(f"{n}.ffn.down_proj", blk.ffn.down_proj)
        blocks.append(BlockWeights(attn, FFNWeights(W1, b1, W2, b2), layer_norm(f"{n}.norm_1", blk.norm_1),
                                   layer_norm(f"{n}.norm_2", blk.norm_2)))
    return TransformerStack(tuple(blocks), "pre_ln", "gelu", final_norm=layer_norm("norm_f", base.norm_f))


ALIBI = {"bloom": bloom, "mpt": mpt}
