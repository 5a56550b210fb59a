r"""HF ``BertModel`` → a ``post_ln`` :class:`~symuat.numeric.TransformerStack` (bidirectional encoder).

The embeddings add learned positions and token type 0 to ``inputs_embeds`` and apply a LayerNorm:
both belong to the stack (``position_embeddings``, ``input_norm``).  The pooler is not part of the
hidden states and is ignored.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError
from ..numeric import AttentionWeights, BlockWeights, FFNWeights, TransformerStack
from ._torch import array, linear
from .activations import activation_name, check_activation
from .hf_common import attention_scale, layer_norm

__all__ = ["bert", "roberta"]


def roberta(base: Any, config: Any) -> TransformerStack:
    r"""HF ``RobertaModel``: BERT's layers; for ``inputs_embeds`` the library's positions start after the padding
    row, at ``pad_token_id + 1``, so the stack's position table is ``P[pad_token_id + 1:]``."""
    return bert(base, config, offset=int(base.embeddings.padding_idx) + 1, family="roberta")


def bert(base: Any, config: Any, offset: int = 0, family: str = "bert") -> TransformerStack:
    r"""HF ``BertModel`` (absolute positions, encoder only)."""
    if getattr(config, "is_decoder", False):
        raise UnsupportedError(f"unsupported config option is_decoder=True ({family})")
    M, H = config.hidden_size, config.num_attention_heads
    act = activation_name(config.hidden_act, "config.hidden_act")
    emb = base.embeddings
    P = array("embeddings.position_embeddings.weight", emb.position_embeddings.weight)[offset:]
    P = P + array("embeddings.token_type_embeddings.weight", emb.token_type_embeddings.weight)[0]
    blocks = []
    for i, blk in enumerate(base.encoder.layer):
        n = f"encoder.layer.{i}"
        s = blk.attention.self
        check_activation(blk.intermediate.intermediate_act_fn, act, f"{n}.intermediate.intermediate_act_fn")
        (WQ, bQ), (WK, bK), (WV, bV) = (linear(f"{n}.attention.self.{p}", getattr(s, p))
                                        for p in ("query", "key", "value"))
        WO, bO = linear(f"{n}.attention.output.dense", blk.attention.output.dense)
        attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, scale=attention_scale(s, M // H))
        W1, b1 = linear(f"{n}.intermediate.dense", blk.intermediate.dense)
        W2, b2 = linear(f"{n}.output.dense", blk.output.dense)
        blocks.append(BlockWeights(attn, FFNWeights(W1, b1, W2, b2),
                                   layer_norm(f"{n}.attention.output.LayerNorm", blk.attention.output.LayerNorm),
                                   layer_norm(f"{n}.output.LayerNorm", blk.output.LayerNorm)))
    return TransformerStack(tuple(blocks), "post_ln", act, position_embeddings=P,
                            input_norm=layer_norm("embeddings.LayerNorm", emb.LayerNorm))
