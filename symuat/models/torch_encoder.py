r"""``torch.nn.TransformerEncoderLayer`` / ``TransformerEncoder`` → :class:`~symuat.numeric.TransformerStack`.

``norm_first=True`` is the ``pre_ln`` layout, ``False`` the ``post_ln`` layout; ``in_proj_weight`` is split
into :math:`W_Q, W_K, W_V`; the activation (``relu``/``gelu``, string or function), the LayerNorm
eps and the encoder's final ``norm`` are read from the modules.  ``batch_first`` only changes how the
library lays out a batch; the stack is per sequence.  Dropout is ignored (eval mode).
Causality is an argument of the library's forward call, so it is the ``causal`` argument here.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError
from ..numeric import AttentionWeights, BlockWeights, FFNWeights, LayerNormWeights, TransformerStack
from ._torch import array, linear, split_columns
from .activations import module_activation
from .hf_common import probe_norm

__all__ = ["encoder_layer_block", "from_torch_encoder"]


def _layer_norm(name: str, ln: Any) -> LayerNormWeights:
    if not getattr(ln, "elementwise_affine", True):
        raise UnsupportedError(f"{name} is a LayerNorm without elementwise_affine")
    beta = None if getattr(ln, "bias", None) is None else array(f"{name}.bias", ln.bias)
    return probe_norm(name, ln, LayerNormWeights(array(f"{name}.weight", ln.weight), beta, eps=float(ln.eps)))


def encoder_layer_block(layer: Any, name: str, causal: bool) -> tuple:
    r"""``(BlockWeights, kind, activation)`` of one ``nn.TransformerEncoderLayer``."""
    sa = layer.self_attn
    M = sa.embed_dim
    if sa.kdim != M or sa.vdim != M or sa.in_proj_weight is None:
        raise UnsupportedError(f"{name}.self_attn has separate kdim/vdim projections")
    if getattr(sa, "bias_k", None) is not None or getattr(sa, "add_zero_attn", False):
        raise UnsupportedError(f"{name}.self_attn uses add_bias_kv or add_zero_attn")
    W = array(f"{name}.self_attn.in_proj_weight", sa.in_proj_weight).T
    b = None if sa.in_proj_bias is None else array(f"{name}.self_attn.in_proj_bias", sa.in_proj_bias)
    (WQ, bQ), (WK, bK), (WV, bV) = split_columns(f"{name}.self_attn.in_proj_weight", W, b, (M, M, M))
    WO, bO = linear(f"{name}.self_attn.out_proj", sa.out_proj)
    attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=sa.num_heads, scale="head", causal=causal)
    W1, b1 = linear(f"{name}.linear1", layer.linear1)
    W2, b2 = linear(f"{name}.linear2", layer.linear2)
    act = module_activation(layer.activation, f"{name}.activation")
    ffn = FFNWeights(W1, b1, W2, b2)
    ln1, ln2 = _layer_norm(f"{name}.norm1", layer.norm1), _layer_norm(f"{name}.norm2", layer.norm2)
    block = BlockWeights(attn, ffn, ln1, ln2)
    return block, ("pre_ln" if layer.norm_first else "post_ln"), act


def from_torch_encoder(module: Any, causal: bool = False) -> TransformerStack:
    r"""The stack of an ``nn.TransformerEncoder`` (with its final ``norm``) or of one encoder layer."""
    from torch import nn

    if isinstance(module, nn.TransformerEncoderLayer):
        layers, final, prefix = [module], None, "layer"
    else:
        layers, final, prefix = list(module.layers), module.norm, "layers"
    blocks, kinds, acts = [], set(), set()
    for i, layer in enumerate(layers):
        name = prefix if prefix == "layer" else f"{prefix}.{i}"
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise UnsupportedError(f"{name} is a {type(layer).__name__}, not an nn.TransformerEncoderLayer")
        block, kind, act = encoder_layer_block(layer, name, causal)
        blocks.append(block)
        kinds.add(kind)
        acts.add(act)
    if len(kinds) > 1:
        raise UnsupportedError("the encoder mixes norm_first=True and norm_first=False layers")
    if len(acts) > 1:
        raise UnsupportedError(f"the encoder mixes activations {sorted(acts)}")
    final_norm = None if final is None else _layer_norm("norm", final)
    return TransformerStack(tuple(blocks), kinds.pop(), acts.pop(), final_norm=final_norm)
