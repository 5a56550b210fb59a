r"""transformers decoder families → :class:`~symuat.numeric.TransformerStack` (causal; ``inputs_embeds`` in).

``gpt2``
    Conv1D weights (already ``in × out``), fused ``c_attn`` split into Q, K, V; learned positions
    ``wpe`` (part of the stack); ``ln_f`` final norm; ``pre_ln``.
``gpt_neox``
    Fused ``query_key_value`` laid out per head as ``[q_h, k_h, v_h]``; partial rotary; ``parallel`` or
    ``pre_ln`` (``use_parallel_residual``); ``final_layer_norm``.
``llama``, ``mistral``, ``qwen2``, ``qwen3``, ``gemma``, ``phi3``, ``olmo2``
    RMSNorm (Gemma: gain :math:`1+w`), SwiGLU/GeGLU, rotary, GQA; Qwen3 per-head and OLMo-2 full-width
    q/k norms; OLMo-2's norms after each sublayer (``sublayer_post_ln``); Phi-3's fused ``qkv_proj`` and
    ``gate_up_proj``; final ``norm``.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

from ..numeric import AttentionWeights, BlockWeights, FFNWeights, GatedFFNWeights, TransformerStack
from ._torch import array, linear, split_columns
from .activations import activation_name, check_activation
from .hf_common import attention_scale, layer_norm, layer_windows, rms_norm, rotary

__all__ = ["DECODERS", "gpt2", "gpt_neox", "llama_like"]


def gpt2(base: Any, config: Any) -> TransformerStack:
    r"""HF ``GPT2Model``."""
    M, H = config.n_embd, config.n_head
    act = activation_name(config.activation_function, "config.activation_function")
    blocks = []
    for i, blk in enumerate(base.h):
        n = f"h.{i}"
        check_activation(blk.mlp.act, act, f"{n}.mlp.act")
        W, b = linear(f"{n}.attn.c_attn", blk.attn.c_attn)
        (WQ, bQ), (WK, bK), (WV, bV) = split_columns(f"{n}.attn.c_attn", W, b, (M, M, M))
        WO, bO = linear(f"{n}.attn.c_proj", blk.attn.c_proj)
        scale = (M // H) ** -0.5 if config.scale_attn_weights else 1.0
        if getattr(config, "scale_attn_by_inverse_layer_idx", False):
            scale /= float(i + 1)
        attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, scale=scale, causal=True)
        W1, b1 = linear(f"{n}.mlp.c_fc", blk.mlp.c_fc)
        W2, b2 = linear(f"{n}.mlp.c_proj", blk.mlp.c_proj)
        blocks.append(BlockWeights(attn, FFNWeights(W1, b1, W2, b2),
                                   layer_norm(f"{n}.ln_1", blk.ln_1), layer_norm(f"{n}.ln_2", blk.ln_2)))
    return TransformerStack(tuple(blocks), "pre_ln", act, position_embeddings=array("wpe.weight", base.wpe.weight),
                            final_norm=layer_norm("ln_f", base.ln_f))


def gpt_neox(base: Any, config: Any) -> TransformerStack:
    r"""HF ``GPTNeoXModel``."""
    M, H = config.hidden_size, config.num_attention_heads
    d = M // H
    act = activation_name(config.hidden_act, "config.hidden_act")
    rot = rotary(base, config, d)
    blocks = []
    for i, blk in enumerate(base.layers):
        n = f"layers.{i}"
        check_activation(blk.mlp.act, act, f"{n}.mlp.act")
        W, b = linear(f"{n}.attention.query_key_value", blk.attention.query_key_value)
        cols = {j: [h * 3 * d + j * d + c for h in range(H) for c in range(d)] for j in range(3)}
        qkv = [(W[:, cols[j]], None if b is None else b[cols[j]]) for j in range(3)]
        WO, bO = linear(f"{n}.attention.dense", blk.attention.dense)
        attn = AttentionWeights(qkv[0][0], qkv[1][0], qkv[2][0], WO, qkv[0][1], qkv[1][1], qkv[2][1], bO,
                                n_heads=H, scale=attention_scale(blk.attention, d), causal=True, rotary=rot)
        W1, b1 = linear(f"{n}.mlp.dense_h_to_4h", blk.mlp.dense_h_to_4h)
        W2, b2 = linear(f"{n}.mlp.dense_4h_to_h", blk.mlp.dense_4h_to_h)
        blocks.append(BlockWeights(attn, FFNWeights(W1, b1, W2, b2), layer_norm(f"{n}.input_layernorm",
                                   blk.input_layernorm), layer_norm(f"{n}.post_attention_layernorm",
                                                                    blk.post_attention_layernorm)))
    kind = "parallel" if config.use_parallel_residual else "pre_ln"
    return TransformerStack(tuple(blocks), kind, act, final_norm=layer_norm("final_layer_norm", base.final_layer_norm))


#: How a Llama-shaped family applies ``sliding_window``: the same mask on every layer, or per ``layer_types``.
_WINDOWS = {"mistral": False, "phi3": False, "qwen2": True, "qwen3": True}


def _llama_attention(n: str, sa: Any, config: Any, rot: Any, family: str, window: Any = None) -> AttentionWeights:
    H = config.num_attention_heads
    G = getattr(config, "num_key_value_heads", None) or H
    d = getattr(sa, "head_dim", None) or config.hidden_size // H
    if family == "phi3":
        W, b = linear(f"{n}.qkv_proj", sa.qkv_proj)
        (WQ, bQ), (WK, bK), (WV, bV) = split_columns(f"{n}.qkv_proj", W, b, (H * d, G * d, G * d))
    else:
        (WQ, bQ), (WK, bK), (WV, bV) = (linear(f"{n}.{p}", getattr(sa, p)) for p in ("q_proj", "k_proj", "v_proj"))
    WO, bO = linear(f"{n}.o_proj", sa.o_proj)
    offset = 1.0 if family == "gemma" else 0.0
    q_norm = k_norm = None
    if getattr(sa, "q_norm", None) is not None:
        q_norm, k_norm = rms_norm(f"{n}.q_norm", sa.q_norm, offset), rms_norm(f"{n}.k_norm", sa.k_norm, offset)
    return AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, n_kv_heads=G, head_dim=d,
                            scale=attention_scale(sa, d), causal=True, rotary=rot, q_norm=q_norm, k_norm=k_norm,
                            sliding_window=window)


def _gated_mlp(n: str, mlp: Any, act: str, family: str) -> GatedFFNWeights:
    fn = "activation_fn" if family == "phi3" else "act_fn"
    check_activation(getattr(mlp, fn, None), act, f"{n}.{fn}")
    if family == "phi3":
        W, b = linear(f"{n}.gate_up_proj", mlp.gate_up_proj)
        F = W.shape[1] // 2
        (Wg, bg), (Wu, bu) = split_columns(f"{n}.gate_up_proj", W, b, (F, F))
    else:
        (Wg, bg), (Wu, bu) = linear(f"{n}.gate_proj", mlp.gate_proj), linear(f"{n}.up_proj", mlp.up_proj)
    Wd, bd = linear(f"{n}.down_proj", mlp.down_proj)
    return GatedFFNWeights(Wg, Wu, Wd, bg, bu, bd, activation=act)


def llama_like(family: str) -> Callable[[Any, Any], TransformerStack]:
    r"""Importer for a Llama-shaped ``family`` (llama, mistral, qwen2, qwen3, gemma, phi3, olmo2)."""
    def build(base: Any, config: Any) -> TransformerStack:
        H = config.num_attention_heads
        d = getattr(config, "head_dim", None) or config.hidden_size // H
        act = activation_name(config.hidden_act, "config.hidden_act")
        rot = rotary(base, config, d)
        offset = 1.0 if family == "gemma" else 0.0
        windows = (layer_windows(config, len(base.layers), _WINDOWS[family]) if family in _WINDOWS
                   else (None,) * len(base.layers))
        blocks = []
        for i, blk in enumerate(base.layers):
            n = f"layers.{i}"
            attn = _llama_attention(f"{n}.self_attn", blk.self_attn, config, rot, family, windows[i])
            ffn = _gated_mlp(f"{n}.mlp", blk.mlp, act, family)
            if family == "olmo2":
                ln1 = rms_norm(f"{n}.post_attention_layernorm", blk.post_attention_layernorm)
                ln2 = rms_norm(f"{n}.post_feedforward_layernorm", blk.post_feedforward_layernorm)
            else:
                ln1 = rms_norm(f"{n}.input_layernorm", blk.input_layernorm, offset)
                ln2 = rms_norm(f"{n}.post_attention_layernorm", blk.post_attention_layernorm, offset)
            blocks.append(BlockWeights(attn, ffn, ln1, ln2))
        kind = "sublayer_post_ln" if family == "olmo2" else "pre_ln"
        return TransformerStack(tuple(blocks), kind, act, final_norm=rms_norm("norm", base.norm, offset))
    build.__name__ = family
    return build


#: ``config.model_type`` → importer of the base model.
DECODERS: Dict[str, Callable[[Any, Any], TransformerStack]] = {
    "gpt2": gpt2,
    "gpt_neox": gpt_neox,
    **{f: llama_like(f) for f in ("llama", "mistral", "qwen2", "qwen3", "gemma", "phi3", "olmo2")},
}

