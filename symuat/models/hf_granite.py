r"""IBM Granite decoders → a ``pre_ln`` :class:`~symuat.numeric.TransformerStack` with the Granite multipliers.

Granite is Llama-shaped (RMSNorm, SwiGLU, rotary, GQA) with four scalars in its config, each read exactly:

``embedding_multiplier`` :math:`s_e`
    The model multiplies ``inputs_embeds`` by :math:`s_e` before the first block: the stack's ``input_scale``.
``attention_multiplier`` :math:`s_a`
    The score multiplier in place of :math:`1/\sqrt d` (the module's ``scaling``): :math:`H_h =
    \operatorname{softmax}(s_a Q_hK_h^{\mathsf T} + \text{mask})`.
``residual_multiplier`` :math:`r`
    Each sublayer's output is multiplied by :math:`r` before it joins the residual stream,
    :math:`h = x + r\,\mathrm{MHA}(N_1x)`, :math:`x^+ = h + r\,\mathrm{FFN}(N_2h)`.  Both sublayers end in a linear
    map, so :math:`r` is folded into it: :math:`(W_O, b_O) \to (rW_O, rb_O)` and :math:`(W_d, b_d) \to (rW_d,
    rb_d)` (every expert's and the shared expert's down projection in a mixture of experts).  The DUAT form is the
    same linear map; the stack's ``W_O`` and ``W_down`` are the library's weights times :math:`r`.
``logits_scaling`` :math:`c`
    The LM head divides its logits by :math:`c` (after the stack): :func:`granite_head_scale` gives :math:`1/c`.

``granite``
    Dense SwiGLU FFNs (``mlp``).
``granitemoe``
    ``block_sparse_moe``: a softmax over the top-:math:`k` router logits (the renormalised top-:math:`k` of the
    full softmax), fused eager experts; every parameter of the block must be read.
``granitemoeshared``
    GraniteMoE plus an ungated shared expert ``shared_mlp`` (``input_linear`` = [gate | up], ``output_linear``)
    added to the routed experts' output before the residual multiplier.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Set

from ..errors import InvalidValueError, UnsupportedError
from ..numeric import BlockWeights, GatedFFNWeights, TransformerStack
from ..numeric.moe import MoEFFNWeights
from ._torch import array, linear, split_columns
from .activations import activation_name, check_activation
from .hf_common import layer_windows, rms_norm, rotary
from .hf_decoders import _gated_mlp, _llama_attention
from .hf_moe import _fused_experts

__all__ = ["GRANITE", "granite", "granite_head_scale", "fold_residual_multiplier"]


def fold_residual_multiplier(block: BlockWeights, r: float) -> BlockWeights:
    r"""``block`` with its sublayers' outputs multiplied by ``r`` (module docstring): the last linear map of the
    attention (:math:`W_O, b_O`) and of the FFN (:math:`W_d, b_d`; every expert's of a mixture) times ``r``."""
    if r == 1.0:
        return block

    def down(f):
        return dataclasses.replace(f, W_down=r * f.W_down, b_down=None if f.b_down is None else r * f.b_down)

    a = block.attention
    attn = dataclasses.replace(a, W_O=r * a.W_O, b_O=None if a.b_O is None else r * a.b_O)
    ffn = block.ffn
    if isinstance(ffn, MoEFFNWeights):
        ffn = dataclasses.replace(ffn, experts=tuple(down(e) for e in ffn.experts),
                                  shared=None if ffn.shared is None else down(ffn.shared))
    else:
        ffn = down(ffn)
    return dataclasses.replace(block, attention=attn, ffn=ffn)


def _multiplier(config: Any, name: str, positive: bool = False) -> float:
    import math

    value = getattr(config, name, None)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or (positive and not value > 0) or (name == "logits_scaling" and value == 0):
        what = "a positive" if positive else ("a non-zero finite" if name == "logits_scaling" else "a finite")
        raise InvalidValueError(f"config.{name} must be {what} number, got {value!r} ({config.model_type})")
    return float(value)


def granite_head_scale(config: Any) -> float:
    r""":math:`1/c` for ``logits_scaling`` :math:`c` (the LM head's logits are :math:`xU^{\mathsf T}/c`)."""
    return 1.0 / _multiplier(config, "logits_scaling")


def _shared_mlp(n: str, mlp: Any, act: str) -> GatedFFNWeights:
    r"""GraniteMoeShared's ``shared_mlp``: ``input_linear`` = [gate | up], ``output_linear``."""
    check_activation(getattr(mlp, "activation", None), act, f"{n}.activation")
    W, b = linear(f"{n}.input_linear", mlp.input_linear)
    F = W.shape[1] // 2
    (Wg, bg), (Wu, bu) = split_columns(f"{n}.input_linear", W, b, (F, F))
    Wd, bd = linear(f"{n}.output_linear", mlp.output_linear)
    return GatedFFNWeights(Wg, Wu, Wd, bg, bu, bd, activation=act)


def _granite_moe(n: str, moe: Any, act: str, shared: Any = None) -> MoEFFNWeights:
    experts_module = moe.experts
    check_activation(getattr(experts_module, "act_fn", None), act, f"{n}.experts.act_fn")
    used: Set[str] = set()
    experts = _fused_experts(f"{n}.experts", experts_module, act, used)
    left = sorted(k for k, _ in experts_module.named_parameters() if k not in used)
    router = array(f"{n}.router.weight", moe.router.weight).T
    left += [f"router.{k}" for k, _ in moe.router.named_parameters() if k != "weight"]
    left += [k for k, _ in moe.named_parameters() if k.split(".")[0] not in ("experts", "router")]
    if left:
        raise InvalidValueError(f"{n} holds parameters symuat did not read ({', '.join(left[:4])}"
                                f"{' …' if len(left) > 4 else ''}): the imported experts would be a partial model")
    if len(experts) != router.shape[1]:
        raise InvalidValueError(f"{n}: {len(experts)} experts, the router scores {router.shape[1]}")
    return MoEFFNWeights(tuple(experts), router, int(moe.router.top_k), normalize=True, activation=act,
                         shared=shared)


def granite(base: Any, config: Any) -> TransformerStack:
    r"""HF ``GraniteModel`` / ``GraniteMoeModel`` (module docstring)."""
    family = config.model_type
    H = config.num_attention_heads
    d = getattr(config, "head_dim", None) or config.hidden_size // H
    act = activation_name(config.hidden_act, "config.hidden_act")
    rot = rotary(base, config, d)
    r = _multiplier(config, "residual_multiplier")
    s_e = _multiplier(config, "embedding_multiplier")
    _multiplier(config, "attention_multiplier", positive=True)  # the modules' scaling, read per layer
    windows = layer_windows(config, len(base.layers))
    blocks = []
    for i, blk in enumerate(base.layers):
        n = f"layers.{i}"
        if float(blk.residual_multiplier) != r:
            raise UnsupportedError(f"{n}.residual_multiplier is {blk.residual_multiplier}, the config's {r}")
        attn = _llama_attention(f"{n}.self_attn", blk.self_attn, config, rot, family, windows[i])
        if family in ("granitemoe", "granitemoeshared"):
            shared = getattr(blk, "shared_mlp", None)
            shared = None if shared is None else _shared_mlp(f"{n}.shared_mlp", shared, act)
            ffn = _granite_moe(f"{n}.block_sparse_moe", blk.block_sparse_moe, act, shared)
        else:
            ffn = _gated_mlp(f"{n}.mlp", blk.mlp, act, family)
        block = BlockWeights(attn, ffn, rms_norm(f"{n}.input_layernorm", blk.input_layernorm),
                             rms_norm(f"{n}.post_attention_layernorm", blk.post_attention_layernorm))
        blocks.append(fold_residual_multiplier(block, r))
    if float(base.embedding_multiplier) != s_e:
        raise UnsupportedError(f"embedding_multiplier is {base.embedding_multiplier} on the model, {s_e} in its config")
    return TransformerStack(tuple(blocks), "pre_ln", act, input_scale=None if s_e == 1.0 else s_e,
                            final_norm=rms_norm("norm", base.norm))


GRANITE = {"granite": granite, "granitemoe": granite, "granitemoeshared": granite}
