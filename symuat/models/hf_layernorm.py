r"""Llama-shaped transformers decoders with LayerNorms → :class:`~symuat.numeric.TransformerStack` (causal).

``olmo``
    OLMo-1: parameter-free LayerNorms (:math:`\varepsilon = 10^{-5}`), SwiGLU, rotary; ``clip_qkv`` (a clamp of
    Q, K, V) is refused by name.
``stablelm``
    LayerNorm with bias, partial rotary, optional Q/K/V biases (``use_qkv_bias``), ``pre_ln`` or ``parallel``
    (``use_parallel_residual``); ``qk_layernorm`` is refused by name.
``starcoder2``
    LayerNorm with bias, plain MLP ``c_fc``/``c_proj`` with biases, GQA, a sliding window on every layer.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError
from ..numeric import AttentionWeights, BlockWeights, FFNWeights, GatedFFNWeights, TransformerStack
from ._torch import linear
from .activations import activation_name, check_activation
from .hf_common import attention_scale, centred_norm, layer_norm, layer_windows, rotary

__all__ = ["olmo", "stablelm", "starcoder2", "LAYERNORM_DECODERS"]


def _attention(n: str, sa: Any, config: Any, rot: Any, window: Any = None) -> AttentionWeights:
    H = config.num_attention_heads
    G = getattr(config, "num_key_value_heads", None) or H
    d = sa.head_dim
    (WQ, bQ), (WK, bK), (WV, bV), (WO, bO) = (linear(f"{n}.{p}", getattr(sa, p))
                                              for p in ("q_proj", "k_proj", "v_proj", "o_proj"))
    return AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, n_kv_heads=G, head_dim=d,
                            scale=attention_scale(sa, d), causal=True, rotary=rot, sliding_window=window)


def _swiglu(n: str, mlp: Any, act: str) -> GatedFFNWeights:
    check_activation(mlp.act_fn, act, f"{n}.act_fn")
    (Wg, bg), (Wu, bu), (Wd, bd) = (linear(f"{n}.{p}", getattr(mlp, p)) for p in ("gate_proj", "up_proj", "down_proj"))
    return GatedFFNWeights(Wg, Wu, Wd, bg, bu, bd, activation=act)


def _head_dim(config: Any) -> int:
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


def olmo(base: Any, config: Any) -> TransformerStack:
    r"""HF ``OlmoModel`` (OLMo-1)."""
    if getattr(config, "clip_qkv", None) is not None:
        raise UnsupportedError(f"unsupported config option clip_qkv={config.clip_qkv!r} (olmo): a clamp of Q, K, V "
                               "is not modelled")
    M = config.hidden_size
    act = activation_name(config.hidden_act, "config.hidden_act")
    rot = rotary(base, config, _head_dim(config))
    blocks = []
    for i, blk in enumerate(base.layers):
        n = f"layers.{i}"
        blocks.append(BlockWeights(_attention(f"{n}.self_attn", blk.self_attn, config, rot),
                                   _swiglu(f"{n}.mlp", blk.mlp, act),
                                   centred_norm(f"{n}.input_layernorm", blk.input_layernorm, M, 1e-5),
                                   centred_norm(f"{n}.post_attention_layernorm", blk.post_attention_layernorm, M,
                                                1e-5)))
    return TransformerStack(tuple(blocks), "pre_ln", act, final_norm=centred_norm("norm", base.norm, M, 1e-5))


def stablelm(base: Any, config: Any) -> TransformerStack:
    r"""HF ``StableLmModel``."""
    if getattr(config, "qk_layernorm", False):
        raise UnsupportedError("unsupported config option qk_layernorm=True (stablelm): per-head q/k LayerNorms "
                               "are not modelled")
    act = activation_name(config.hidden_act, "config.hidden_act")
    rot = rotary(base, config, _head_dim(config))
    parallel = bool(getattr(config, "use_parallel_residual", False))
    blocks = []
    for i, blk in enumerate(base.layers):
        n = f"layers.{i}"
        if rot.dim != int(blk.self_attn.rotary_ndims):
            raise UnsupportedError(f"{n}.self_attn rotates {blk.self_attn.rotary_ndims} coordinates, rotary_emb "
                                   f"{rot.dim}")
        ln2 = None if parallel else layer_norm(f"{n}.post_attention_layernorm", blk.post_attention_layernorm)
        blocks.append(BlockWeights(_attention(f"{n}.self_attn", blk.self_attn, config, rot),
                                   _swiglu(f"{n}.mlp", blk.mlp, act),
                                   layer_norm(f"{n}.input_layernorm", blk.input_layernorm), ln2))
    return TransformerStack(tuple(blocks), "parallel" if parallel else "pre_ln", act,
                            final_norm=layer_norm("norm", base.norm))


def starcoder2(base: Any, config: Any) -> TransformerStack:
    r"""HF ``Starcoder2Model``."""
    act = activation_name(config.hidden_act, "config.hidden_act")
    rot = rotary(base, config, _head_dim(config))
    windows = layer_windows(config, len(base.layers), per_layer=False)
    blocks = []
    for i, blk in enumerate(base.layers):
        n = f"layers.{i}"
        check_activation(blk.mlp.act, act, f"{n}.mlp.act")
        W1, b1 = linear(f"{n}.mlp.c_fc", blk.mlp.c_fc)
        W2, b2 = linear(f"{n}.mlp.c_proj", blk.mlp.c_proj)
        blocks.append(BlockWeights(_attention(f"{n}.self_attn", blk.self_attn, config, rot, windows[i]),
                                   FFNWeights(W1, b1, W2, b2),
                                   layer_norm(f"{n}.input_layernorm", blk.input_layernorm),
                                   layer_norm(f"{n}.post_attention_layernorm", blk.post_attention_layernorm)))
    return TransformerStack(tuple(blocks), "pre_ln", act, final_norm=layer_norm("norm", base.norm))


LAYERNORM_DECODERS = {"olmo": olmo, "stablelm": stablelm, "starcoder2": starcoder2}
