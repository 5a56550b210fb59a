r"""ModernBERT → a ``pre_ln`` :class:`~symuat.numeric.TransformerStack` (bidirectional encoder).

The embedding LayerNorm is the stack's ``input_norm``; every layer is ``x + Wo(MHA(attn_norm x))`` then
``+ Wo(act(input) ⊙ gate)`` of ``mlp_norm``, with a final LayerNorm.  Layer 0's ``attn_norm`` is ``nn.Identity``:
an :class:`~symuat.numeric.norms.IdentityNormWeights` (its diagonal is 1, so the Eq. 20 box is pre_ln with
:math:`L_1 = I`).  Attention: a fused ``Wqkv`` (Q, K, V blocks), rotary tables per layer type (a local and a global
base frequency), no causal mask; ``sliding_attention`` layers see keys with :math:`|i-j| \le` ``local_attention //
2`` (``AttentionWeights.window``: the library's bidirectional sliding mask), ``full_attention`` layers all keys.
The MLP's ``Wi`` is ``[input | gate]``: a gated FFN whose activation acts on the first half.  LayerNorms with or
without bias (``norm_bias``); biases on the linear maps per ``attention_bias``/``mlp_bias``.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError
from ..numeric import AttentionWeights, BlockWeights, GatedFFNWeights, TransformerStack
from ..numeric.norms import IdentityNormWeights
from ._torch import linear, require_torch, split_columns
from .activations import activation_name, check_activation
from .hf_common import layer_norm, rotary

__all__ = ["MODERNBERT", "modernbert"]

_TYPES = ("full_attention", "sliding_attention")


def modernbert(base: Any, config: Any) -> TransformerStack:
    r"""HF ``ModernBertModel`` (module docstring)."""
    torch = require_torch()
    H, M = config.num_attention_heads, config.hidden_size
    d = M // H
    act = activation_name(config.hidden_activation, "config.hidden_activation")
    types = list(config.layer_types)
    if len(types) != len(base.layers) or any(t not in _TYPES for t in types):
        raise UnsupportedError(f"config.layer_types={types!r}: symuat reads {_TYPES} for each of the "
                               f"{len(base.layers)} layers (modernbert)")
    rot = {t: rotary(base, config, d, layer_type=t) for t in sorted(set(types))}
    window = int(config.local_attention) // 2
    blocks = []
    for i, blk in enumerate(base.layers):
        n = f"layers.{i}"
        a = blk.attn
        W, b = linear(f"{n}.attn.Wqkv", a.Wqkv)
        (WQ, bQ), (WK, bK), (WV, bV) = split_columns(f"{n}.attn.Wqkv", W, b, (M, M, M))
        WO, bO = linear(f"{n}.attn.Wo", a.Wo)
        attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, head_dim=d, scale=d ** -0.5,
                                causal=False, rotary=rot[types[i]],
                                window=window if types[i] == "sliding_attention" else None)
        check_activation(blk.mlp.act, act, f"{n}.mlp.act")
        Wi, bi = linear(f"{n}.mlp.Wi", blk.mlp.Wi)
        F = Wi.shape[1] // 2
        (Wg, bg), (Wu, bu) = split_columns(f"{n}.mlp.Wi", Wi, bi, (F, F))
        Wd, bd = linear(f"{n}.mlp.Wo", blk.mlp.Wo)
        ffn = GatedFFNWeights(Wg, Wu, Wd, bg, bu, bd, activation=act)
        if isinstance(blk.attn_norm, torch.nn.Identity):
            ln1 = IdentityNormWeights(M)
        else:
            ln1 = layer_norm(f"{n}.attn_norm", blk.attn_norm)
        blocks.append(BlockWeights(attn, ffn, ln1, layer_norm(f"{n}.mlp_norm", blk.mlp_norm)))
    return TransformerStack(tuple(blocks), "pre_ln", act,
                            input_norm=layer_norm("embeddings.norm", base.embeddings.norm),
                            final_norm=layer_norm("final_norm", base.final_norm))


MODERNBERT = {"modernbert": modernbert}
