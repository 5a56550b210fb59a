r"""HF ``DistilBertModel`` → a ``post_ln`` :class:`~symuat.numeric.TransformerStack` (bidirectional encoder).

The embeddings add learned (or fixed sinusoidal: the table is in the weights either way) positions to
``inputs_embeds`` and apply a LayerNorm; both belong to the stack.  No token types.
"""

from __future__ import annotations

from typing import Any

from ..numeric import AttentionWeights, BlockWeights, FFNWeights, TransformerStack
from ._torch import array, linear
from .activations import activation_name, check_activation
from .hf_common import layer_norm

__all__ = ["distilbert"]


def distilbert(base: Any, config: Any) -> TransformerStack:
    r"""HF ``DistilBertModel``."""
    H = config.n_heads
    act = activation_name(config.activation, "config.activation")
    emb = base.embeddings
    blocks = []
    for i, blk in enumerate(base.transformer.layer):
        n = f"transformer.layer.{i}"
        sa = blk.attention
        (WQ, bQ), (WK, bK), (WV, bV), (WO, bO) = (linear(f"{n}.attention.{p}", getattr(sa, p))
                                                  for p in ("q_lin", "k_lin", "v_lin", "out_lin"))
        attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, scale="head")
        check_activation(blk.ffn.activation, act, f"{n}.ffn.activation")
        W1, b1 = linear(f"{n}.ffn.lin1", blk.ffn.lin1)
        W2, b2 = linear(f"{n}.ffn.lin2", blk.ffn.lin2)
        blocks.append(BlockWeights(attn, FFNWeights(W1, b1, W2, b2),
                                   layer_norm(f"{n}.sa_layer_norm", blk.sa_layer_norm),
                                   layer_norm(f"{n}.output_layer_norm", blk.output_layer_norm)))
    return TransformerStack(tuple(blocks), "post_ln", act,
                            position_embeddings=array("embeddings.position_embeddings.weight",
                                                      emb.position_embeddings.weight),
                            input_norm=layer_norm("embeddings.LayerNorm", emb.LayerNorm))
