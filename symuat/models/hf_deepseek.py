r"""DeepSeek-V2 and V3 → a ``pre_ln`` :class:`~symuat.numeric.TransformerStack` with multi-head latent attention
and group-limited mixtures of experts.

Attention (``DeepseekV{2,3}Attention``) is multi-head latent attention (:mod:`symuat.numeric.latent`,
``ext:mla.mv-form``): queries through ``q_a_proj`` → ``q_a_layernorm`` → ``q_b_proj`` (or ``q_proj`` when
``q_lora_rank`` is None), keys and values through the latent ``kv_a_proj_with_mqa`` → ``kv_a_layernorm`` →
``kv_b_proj`` (per head: ``qk_nope_head_dim`` key, ``v_head_dim`` value columns), a rotary key of
``qk_rope_head_dim`` shared by the heads; the value map is the static product :math:`W_{DKV}\Gamma W_{UV,h}` and
each head's matrix :math:`H_h D(X)` carries the latent norm's diagonal.  V3's rotary pairs are interleaved when
``rope_interleave`` (the library de-interleaves queries and keys alike; the scores are the same), V2's come from its
complex ``freqs_cis`` (pairs :math:`(2j, 2j+1)`).  The score scale is the module's ``scaling`` (YaRN's mscale in).

The first ``first_k_dense_replace`` layers have a dense gated MLP, the others routed experts plus an ungated shared
expert.  V3's router: sigmoid scores, the choice by score plus ``e_score_correction_bias`` within the best
``topk_group`` of ``n_group`` groups (a group scores its best two), weights the chosen scores, renormalised
(``norm_topk_prob``, with the library's :math:`+10^{-20}`), times ``routed_scaling_factor``.  V2's: softmax scores,
``topk_method`` ``greedy`` or ``group_limited_greedy`` (a group scores its best expert), no renormalisation, times
``routed_scaling_factor``.  ``num_key_value_heads`` other than ``num_attention_heads`` is refused by name (each head
has its own latent up-projection; the library's eager path breaks on it too), and so is any other ``topk_method``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Set

from ..errors import InvalidValueError, UnsupportedError
from ..numeric import AttentionWeights, BlockWeights, Rotary, TransformerStack
from ..numeric.latent import LatentQK
from ..numeric.moe import MoEFFNWeights
from ._torch import array, linear, require_torch
from .activations import activation_name, check_activation
from .hf_common import MAX_POSITIONS, attention_scale, rms_norm, rotary, static_rope_positions
from .hf_decoders import _gated_mlp
from .hf_moe import _fused_experts
from .precision import library_float64

__all__ = ["DEEPSEEK", "deepseek"]


def _complex_rotary(base: Any, config: Any, dr: int) -> Rotary:
    """V2's rotary module returns ``freqs_cis`` (complex): cos and sin are its real and imaginary parts."""
    torch = require_torch()
    emb = getattr(base, "rotary_emb", None)
    inv_freq = getattr(emb, "inv_freq", None)
    if inv_freq is None or 2 * int(inv_freq.shape[-1]) != dr:
        raise UnsupportedError(f"{type(base).__name__}.rotary_emb has no inv_freq over the {dr} rotary coordinates")
    P = int(min(MAX_POSITIONS, getattr(config, "max_position_embeddings", None) or MAX_POSITIONS))
    P = min(P, static_rope_positions(emb, config, getattr(emb, "rope_type", "default")))
    with torch.no_grad(), library_float64():
        cis = emb(torch.zeros(1, 1, 1, dtype=torch.float64), torch.arange(P)[None])
    if not torch.is_complex(cis):
        raise UnsupportedError(f"{type(emb).__name__} does not return complex freqs_cis (the deepseek_v2 layout)")
    cis = cis[0]
    return Rotary(dr, style="interleaved", inv_freq=array("rotary_emb.inv_freq", emb.inv_freq),
                  cos=array("rotary_emb real", cis.real), sin=array("rotary_emb imag", cis.imag))


def _latent_attention(n: str, sa: Any, config: Any, rot: Rotary) -> AttentionWeights:
    H = config.num_attention_heads
    dc, dr, dv = config.qk_nope_head_dim, config.qk_rope_head_dim, config.v_head_dim
    W_a, b_a = linear(f"{n}.kv_a_proj_with_mqa", sa.kv_a_proj_with_mqa)
    r = W_a.shape[1] - dr
    kv_norm = rms_norm(f"{n}.kv_a_layernorm", sa.kv_a_layernorm)
    W_b, b_b = linear(f"{n}.kv_b_proj", sa.kv_b_proj)
    if b_b is not None or W_b.shape != (r, H * (dc + dv)) or kv_norm.width != r:
        raise UnsupportedError(f"{n}.kv_b_proj is not a bias-free {r}×{H * (dc + dv)} map of the latent")
    W_b = W_b.reshape(r, H, dc + dv)
    W_uk, W_uv = W_b[:, :, :dc].reshape(r, H * dc), W_b[:, :, dc:].reshape(r, H * dv)
    q: dict = {}
    if getattr(sa, "q_proj", None) is not None:
        q["W_q"], bq = linear(f"{n}.q_proj", sa.q_proj)
    else:
        q["W_dq"], q["b_dq"] = linear(f"{n}.q_a_proj", sa.q_a_proj)
        q["q_norm"] = rms_norm(f"{n}.q_a_layernorm", sa.q_a_layernorm)
        q["W_uq"], bq = linear(f"{n}.q_b_proj", sa.q_b_proj)
    if bq is not None:
        raise UnsupportedError(f"{n}: a query up-projection bias is not modelled")
    lat = LatentQK(W_a[:, :r], kv_norm, W_uk, W_a[:, r:], rot, H, b_dkv=None if b_a is None else b_a[:r],
                   b_kr=None if b_a is None else b_a[r:], **q)
    gain = kv_norm.gain
    W_V = (W_a[:, :r] * gain) @ W_uv
    b_V = None if b_a is None else (b_a[:r] * gain) @ W_uv
    W_O, b_O = linear(f"{n}.o_proj", sa.o_proj)
    return AttentionWeights(None, None, W_V, W_O, None, None, b_V, b_O, n_heads=H, head_dim=dv,
                            scale=attention_scale(sa, dc + dr), causal=True, latent=lat)


def _routed(n: str, mlp: Any, act: str, family: str, config: Any) -> MoEFFNWeights:
    used: Set[str] = set()
    check_activation(getattr(mlp.experts, "act_fn", None), act, f"{n}.experts.act_fn")
    experts = _fused_experts(f"{n}.experts", mlp.experts, act, used)
    left = [f"experts.{k}" for k, _ in mlp.experts.named_parameters() if k not in used]
    gate = mlp.gate
    W = array(f"{n}.gate.weight", gate.weight).T
    left += [f"gate.{k}" for k, _ in gate.named_parameters() if k != "weight"]
    shared = _gated_mlp(f"{n}.shared_experts", mlp.shared_experts, act, family)
    if any(b is not None for b in (shared.b_gate, shared.b_up, shared.b_down)):
        raise UnsupportedError(f"{n}.shared_experts has biases: not modelled")
    left += [k for k, _ in mlp.named_parameters() if k.split(".")[0] not in ("experts", "gate", "shared_experts")]
    if left:
        raise InvalidValueError(f"{n} holds parameters symuat did not read ({', '.join(sorted(left)[:4])}): the "
                                "imported experts would be a partial model")
    top_k, rho = int(gate.top_k), float(gate.routed_scaling_factor)
    groups: Optional[tuple] = None
    if family == "deepseek_v3":
        bias = array(f"{n}.gate.e_score_correction_bias", gate.e_score_correction_bias)
        groups = (int(gate.num_group), int(gate.topk_group), "top2")
        return MoEFFNWeights(tuple(experts), W, top_k, normalize=bool(gate.norm_topk_prob), scaling=rho,
                             shared=shared, activation=act, routing="sigmoid", choice_bias=bias, groups=groups,
                             norm_eps=1e-20)
    method = gate.topk_method
    if method == "group_limited_greedy":
        groups = (int(gate.num_group), int(gate.topk_group), "max")
    elif method != "greedy":
        raise UnsupportedError(f"unsupported config option topk_method={method!r} (deepseek_v2): symuat reads "
                               "'greedy' and 'group_limited_greedy'")
    return MoEFFNWeights(tuple(experts), W, top_k, normalize=False, scaling=rho, shared=shared, activation=act,
                         groups=groups)


def deepseek(family: str):
    r"""Importer of ``deepseek_v2`` / ``deepseek_v3`` (module docstring)."""
    def build(base: Any, config: Any) -> TransformerStack:
        H = config.num_attention_heads
        if (getattr(config, "num_key_value_heads", None) or H) != H:
            raise UnsupportedError(f"unsupported config option num_key_value_heads={config.num_key_value_heads!r} "
                                   f"({family}): latent attention has a key and value per head "
                                   f"(num_attention_heads={H})")
        act = activation_name(config.hidden_act, "config.hidden_act")
        dr = config.qk_rope_head_dim
        if family == "deepseek_v2":
            rot = _complex_rotary(base, config, dr)
        else:
            rot = rotary(base, config, dr)
            if getattr(config, "rope_interleave", False):  # the table is cat(freqs, freqs): the angles are its half
                rot = dataclasses.replace(rot, style="interleaved")
        blocks = []
        for i, blk in enumerate(base.layers):
            n = f"layers.{i}"
            attn = _latent_attention(f"{n}.self_attn", blk.self_attn, config, rot)
            mlp = blk.mlp
            ffn = (_routed(f"{n}.mlp", mlp, act, family, config) if hasattr(mlp, "experts")
                   else _gated_mlp(f"{n}.mlp", mlp, act, family))
            blocks.append(BlockWeights(attn, ffn, rms_norm(f"{n}.input_layernorm", blk.input_layernorm),
                                       rms_norm(f"{n}.post_attention_layernorm", blk.post_attention_layernorm)))
        return TransformerStack(tuple(blocks), "pre_ln", act, final_norm=rms_norm("norm", base.norm))
    build.__name__ = family
    return build


DEEPSEEK = {f: deepseek(f) for f in ("deepseek_v2", "deepseek_v3")}
