r"""Mixture-of-experts decoders → :class:`~symuat.numeric.TransformerStack` with
:class:`~symuat.numeric.moe.MoEFFNWeights` FFNs (``pre_ln``, RMSNorm, rotary, GQA).

``mixtral``
    Softmax router, top-:math:`k`, weights always renormalised; a sliding window on every layer when set.
``qwen2_moe``
    Top-:math:`k` weights renormalised iff ``norm_topk_prob``; a shared expert gated by
    :math:`\mathrm{sigmoid}(u\,w_s)` (``shared_expert_gate``); Q/K/V biases; dense layers (``mlp_only_layers``,
    ``decoder_sparse_step``) read from the module; sliding windows per ``layer_types``.
``qwen3_moe``
    Qwen3's per-head q/k norms; ``norm_topk_prob``; dense layers as above.
``olmoe``
    OLMo-2-style q/k norms over all heads; ``norm_topk_prob``; ``clip_qkv`` is refused by name.

Both expert layouts are read: transformers 5's fused 3-D parameters (``experts.gate_up_proj`` :math:`E\times 2F
\times M`, ``experts.down_proj`` :math:`E\times M\times F`) and a module per expert (``gate_proj``/``up_proj``/
``down_proj`` or ``w1``/``w3``/``w2``).  Every parameter of the MoE block must be read: anything left over is an
error (never a silent partial model).  The library must run its ``eager`` experts (``_experts_implementation``;
the grouped-mm kernels have no float64): see :mod:`symuat.models.guards`.
"""

from __future__ import annotations

from typing import Any, List, Set

from ..errors import InvalidValueError, UnsupportedError
from ..numeric import BlockWeights, GatedFFNWeights, TransformerStack
from ..numeric.moe import MoEFFNWeights
from ._torch import array, linear
from .activations import activation_name, check_activation
from .hf_common import layer_windows, rms_norm, rotary
from .hf_decoders import _gated_mlp, _llama_attention

__all__ = ["MOE", "moe_ffn"]

#: family → (attention as, window rule: None / global / per layer_types)
_FAMILY = {"mixtral": ("mistral", False), "qwen2_moe": ("qwen2", True), "qwen3_moe": ("qwen3", False),
           "olmoe": ("olmo2", None)}


def _fused_experts(n: str, experts: Any, act: str, used: Set[str]) -> List[GatedFFNWeights]:
    for flag, want in (("is_transposed", False), ("is_concatenated", True), ("has_bias", False),
                       ("has_gate", True), ("has_post_expert_norm", False)):
        if getattr(experts, flag, want) != want:
            raise UnsupportedError(f"{n}: fused experts with {flag}={getattr(experts, flag)!r} are not modelled")
    GU = array(f"{n}.gate_up_proj", experts.gate_up_proj)
    D = array(f"{n}.down_proj", experts.down_proj)
    E, F2, M = GU.shape
    F = F2 // 2
    if F2 % 2 or D.shape != (E, M, F):
        raise InvalidValueError(f"{n}: gate_up_proj {GU.shape} and down_proj {D.shape} are not E×2F×M and E×M×F")
    used.update({"gate_up_proj", "down_proj"})
    return [GatedFFNWeights(GU[e, :F].T, GU[e, F:].T, D[e].T, activation=act) for e in range(E)]


def _expert_modules(n: str, experts: Any, act: str, used: Set[str]) -> List[GatedFFNWeights]:
    out = []
    for e, mod in enumerate(experts):
        names = ("gate_proj", "up_proj", "down_proj") if hasattr(mod, "gate_proj") else ("w1", "w3", "w2")
        check_activation(getattr(mod, "act_fn", None), act, f"{n}.{e}.act_fn")
        (Wg, bg), (Wu, bu), (Wd, bd) = (linear(f"{n}.{e}.{p}", getattr(mod, p)) for p in names)
        used.update(f"{e}.{p}.{w}" for p in names for w in ("weight", "bias"))
        out.append(GatedFFNWeights(Wg, Wu, Wd, bg, bu, bd, activation=act))
    return out


def moe_ffn(n: str, mlp: Any, act: str, family: str) -> MoEFFNWeights:
    r"""The MoE block ``mlp`` as :class:`MoEFFNWeights`; a parameter it holds that is not read raises."""
    torch_experts = mlp.experts
    used: Set[str] = set()
    if hasattr(torch_experts, "gate_up_proj"):
        check_activation(getattr(torch_experts, "act_fn", None), act, f"{n}.experts.act_fn")
        experts = _fused_experts(f"{n}.experts", torch_experts, act, used)
    else:
        experts = _expert_modules(f"{n}.experts", torch_experts, act, used)
    left = sorted(k for k, _ in torch_experts.named_parameters() if k not in used)
    gate = mlp.gate
    if getattr(gate, "bias", None) is not None:
        raise UnsupportedError(f"{n}.gate has a bias: a router bias is not modelled")
    router = array(f"{n}.gate.weight", gate.weight).T
    left += [f"gate.{k}" for k, _ in gate.named_parameters() if k != "weight"]
    top_k = int(getattr(gate, "top_k", None) or getattr(mlp, "top_k"))
    normalize = True if family == "mixtral" else bool(gate.norm_topk_prob)
    shared = shared_gate = None
    if getattr(mlp, "shared_expert", None) is not None:
        shared = _gated_mlp(f"{n}.shared_expert", mlp.shared_expert, act, family)
        W, b = linear(f"{n}.shared_expert_gate", mlp.shared_expert_gate)
        if W.shape[1] != 1 or b is not None:
            raise UnsupportedError(f"{n}.shared_expert_gate is not a bias-free M×1 Linear")
        shared_gate = W[:, 0]
    known = {"experts", "gate", "shared_expert", "shared_expert_gate"}
    left += [k for k, _ in mlp.named_parameters() if k.split(".")[0] not in known]
    if left:
        raise InvalidValueError(f"{n} holds parameters symuat did not read ({', '.join(left[:4])}"
                                f"{' …' if len(left) > 4 else ''}): the imported experts would be a partial model")
    if len(experts) != router.shape[1]:
        raise InvalidValueError(f"{n}: {len(experts)} experts, the router scores {router.shape[1]}")
    return MoEFFNWeights(tuple(experts), router, top_k, normalize=normalize, shared=shared, shared_gate=shared_gate,
                         activation=act)


def moe_decoder(family: str):
    r"""Importer of the MoE ``family`` (module docstring)."""
    like, per_layer = _FAMILY[family]

    def build(base: Any, config: Any) -> TransformerStack:
        if getattr(config, "clip_qkv", None) is not None:
            raise UnsupportedError(f"unsupported config option clip_qkv={config.clip_qkv!r} ({family}): a clamp of "
                                   "Q, K, V is not modelled")
        H = config.num_attention_heads
        d = getattr(config, "head_dim", None) or config.hidden_size // H
        act = activation_name(config.hidden_act, "config.hidden_act")
        rot = rotary(base, config, d)
        L = len(base.layers)
        windows = (None,) * L if per_layer is None else layer_windows(config, L, per_layer)
        blocks = []
        for i, blk in enumerate(base.layers):
            n = f"layers.{i}"
            attn = _llama_attention(f"{n}.self_attn", blk.self_attn, config, rot, like, windows[i])
            mlp = blk.mlp
            ffn = (moe_ffn(f"{n}.mlp", mlp, act, family) if hasattr(mlp, "experts")
                   else _gated_mlp(f"{n}.mlp", mlp, act, family))
            blocks.append(BlockWeights(attn, ffn, rms_norm(f"{n}.input_layernorm", blk.input_layernorm),
                                       rms_norm(f"{n}.post_attention_layernorm", blk.post_attention_layernorm)))
        return TransformerStack(tuple(blocks), "pre_ln", act, final_norm=rms_norm("norm", base.norm))
    build.__name__ = family
    return build


MOE = {f: moe_decoder(f) for f in _FAMILY}
