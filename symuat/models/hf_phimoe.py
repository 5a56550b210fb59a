r"""PhiMoE (Phi-3.5-MoE) → a ``pre_ln`` :class:`~symuat.numeric.TransformerStack` with SparseMixer-routed experts.

LayerNorms with bias, rotary (``longrope`` in the released checkpoints, see :mod:`symuat.models.hf_common`), GQA
with optional Q/K/V/O biases, and a mixture of experts whose router is SparseMixer in evaluation mode
(:class:`~symuat.numeric.moe.MoEFFNWeights` with ``routing="sparsemixer"``, the threshold
``router_jitter_noise``): always two experts per token, each weighed by its own masked softmax (not a renormalised
top-:math:`k`).  Its rotary module scales the angles by ``short_mscale`` or ``long_mscale`` on either side of
``original_max_position_embeddings``: exact for ``longrope`` (the table stops there), refused for the other
non-default types.  The library routes to two experts whatever ``num_experts_per_tok`` says, so another value is
refused by name; so is ``input_jitter_noise`` (it acts in training only, where symuat never runs the model, but
the module must be in eval mode anyway).
"""

from __future__ import annotations

from typing import Any, Set

from ..errors import InvalidValueError, UnsupportedError
from ..numeric import BlockWeights, TransformerStack
from ..numeric.moe import MoEFFNWeights
from ._torch import array
from .activations import activation_name, check_activation
from .hf_common import layer_norm, layer_windows, rotary
from .hf_decoders import _llama_attention
from .hf_moe import _fused_experts

__all__ = ["PHIMOE", "phimoe"]


def _sparse_moe(n: str, mlp: Any, act: str) -> MoEFFNWeights:
    check_activation(getattr(mlp.experts, "act_fn", None), act, f"{n}.experts.act_fn")
    used: Set[str] = set()
    experts = _fused_experts(f"{n}.experts", mlp.experts, act, used)
    left = sorted(k for k, _ in mlp.experts.named_parameters() if k not in used)
    router = mlp.router
    if getattr(router, "bias", None) is not None:
        raise UnsupportedError(f"{n}.router has a bias: a router bias is not modelled")
    W = array(f"{n}.router.weight", router.weight).T
    left += [k for k, _ in mlp.named_parameters() if k.split(".")[0] not in ("experts", "router")]
    left += [f"router.{k}" for k, _ in router.named_parameters() if k != "weight"]
    if left:
        raise InvalidValueError(f"{n} holds parameters symuat did not read ({', '.join(left[:4])}"
                                f"{' …' if len(left) > 4 else ''}): the imported experts would be a partial model")
    return MoEFFNWeights(tuple(experts), W, 2, normalize=False, activation=act, routing="sparsemixer",
                         jitter_eps=float(router.router_jitter_noise))


def phimoe(base: Any, config: Any) -> TransformerStack:
    r"""HF ``PhimoeModel`` (module docstring)."""
    if config.num_experts_per_tok != 2:
        raise UnsupportedError(f"unsupported config option num_experts_per_tok={config.num_experts_per_tok!r} "
                               "(phimoe): SparseMixer always routes every token to 2 experts")
    rope_type = (getattr(config, "rope_parameters", None) or {}).get("rope_type", "default")
    if rope_type not in ("default", "longrope"):
        raise UnsupportedError(f"unsupported rope type {rope_type!r} (phimoe): its rotary module scales the angles by "
                               "short_mscale or long_mscale depending on the sequence length")
    H = config.num_attention_heads
    d = getattr(config, "head_dim", None) or config.hidden_size // H
    act = activation_name(config.hidden_act, "config.hidden_act")
    rot = rotary(base, config, d)
    windows = layer_windows(config, len(base.layers), per_layer=False)
    blocks = []
    for i, blk in enumerate(base.layers):
        n = f"layers.{i}"
        attn = _llama_attention(f"{n}.self_attn", blk.self_attn, config, rot, "phimoe", windows[i])
        blocks.append(BlockWeights(attn, _sparse_moe(f"{n}.mlp", blk.mlp, act),
                                   layer_norm(f"{n}.input_layernorm", blk.input_layernorm),
                                   layer_norm(f"{n}.post_attention_layernorm", blk.post_attention_layernorm)))
    return TransformerStack(tuple(blocks), "pre_ln", act, final_norm=layer_norm("norm", base.norm))


PHIMOE = {"phimoe": phimoe}
