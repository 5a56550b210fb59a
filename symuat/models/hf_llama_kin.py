r"""Llama's relatives: transformers decoders whose blocks are Llama's up to a layout, a rotary style, sliding windows,
NoPE layers or a plain MLP → :class:`~symuat.numeric.TransformerStack` (causal, RMSNorm, GQA).

=============  ===================  ==========================  ====================================================
family         layout               rotary                      also
=============  ===================  ==========================  ====================================================
``ministral``  ``pre_ln``           half                        sliding windows per ``layer_types``
``seed_oss``   ``pre_ln``           half                        Q/K/V and output biases
``helium``     ``pre_ln``           interleaved pairs           —
``ernie4_5``   ``pre_ln``           interleaved pairs           optional biases
``glm``        ``pre_ln``           interleaved, partial        fused ``gate_up_proj``
``arcee``      ``pre_ln``           half                        plain MLP ``up_proj``/``down_proj`` (ReLU²)
``olmo3``      ``sublayer_post_ln`` half                        q/k norms over all heads, sliding windows
``exaone4``    ``sublayer_post_ln`` half                        per-head q/k norms, sliding windows; with a window
                                                                the full-attention layers are NoPE (no rotary)
``nemotron``   ``pre_ln``           half, partial               LayerNorm1P (gain :math:`1+w`, bias), plain ReLU² MLP
=============  ===================  ==========================  ====================================================

"Interleaved pairs": the library's ``rotate_half`` pairs the coordinates :math:`(2j, 2j+1)` and its ``cos``/``sin``
tables repeat each angle twice, so the stack keeps the rotary module's angle :math:`j` for the pair :math:`j`
(``Rotary(style="interleaved")``, as for GLM-4).  OLMo-3's rotary module keeps its tables per layer type (read
per type, like Gemma-3's).  Whether a layer rotates at all is read from the module
(EXAONE-4's ``sliding_window``/``is_sliding``), never assumed from the layer index.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict

from ..errors import UnsupportedError
from ..numeric import BlockWeights, FFNWeights, LayerNormWeights, TransformerStack
from ._torch import array, linear
from .activations import activation_name, check_activation
from .hf_common import layer_windows, probe_norm, rms_norm, rotary
from .hf_decoders import _gated_mlp, _llama_attention

__all__ = ["LLAMA_KIN", "llama_kin"]

#: family → (layout, rotary style, windows per layer_types, MLP kind)
_SPEC = {
    "ministral": ("pre_ln", "half", True, "gated"),
    "seed_oss": ("pre_ln", "half", False, "gated"),
    "helium": ("pre_ln", "interleaved", False, "gated"),
    "ernie4_5": ("pre_ln", "interleaved", False, "gated"),
    "glm": ("pre_ln", "interleaved", False, "fused"),
    "arcee": ("pre_ln", "half", False, "plain"),
    "olmo3": ("sublayer_post_ln", "half", True, "gated"),
    "exaone4": ("sublayer_post_ln", "half", True, "gated"),
    "nemotron": ("pre_ln", "half", False, "plain"),
}


def _rotates(family: str, sa: Any, n: str) -> bool:
    if family != "exaone4":
        return True
    window, sliding = getattr(sa, "sliding_window", None), getattr(sa, "is_sliding", None)
    if not isinstance(sliding, bool):
        raise UnsupportedError(f"{n}.is_sliding={sliding!r}: cannot tell whether the layer rotates")
    return window is None or sliding


def _layer_norm_1p(name: str, norm: Any) -> LayerNormWeights:
    r"""Nemotron's ``LayerNorm1P``: a LayerNorm whose gain is :math:`1 + w` (checked on a probe)."""
    if type(norm).__name__ != "NemotronLayerNorm1P" or getattr(norm, "weight", None) is None:
        raise UnsupportedError(f"{name} ({type(norm).__name__}) is not Nemotron's LayerNorm1P")
    beta = None if norm.bias is None else array(f"{name}.bias", norm.bias)
    return probe_norm(name, norm, LayerNormWeights(1.0 + array(f"{name}.weight", norm.weight), beta,
                                                   eps=float(norm.eps)))


def _plain_mlp(n: str, mlp: Any, act: str) -> FFNWeights:
    check_activation(getattr(mlp, "act_fn", None), act, f"{n}.act_fn")
    W1, b1 = linear(f"{n}.up_proj", mlp.up_proj)
    W2, b2 = linear(f"{n}.down_proj", mlp.down_proj)
    return FFNWeights(W1, b1, W2, b2)


def llama_kin(family: str) -> Callable[[Any, Any], TransformerStack]:
    r"""Importer of the Llama relative ``family`` (module docstring)."""
    layout, style, per_layer, mlp_kind = _SPEC[family]
    norm = _layer_norm_1p if family == "nemotron" else rms_norm

    def build(base: Any, config: Any) -> TransformerStack:
        H = config.num_attention_heads
        d = getattr(config, "head_dim", None) or config.hidden_size // H
        act = activation_name(config.hidden_act, "config.hidden_act")
        per_type = isinstance(getattr(getattr(base, "rotary_emb", None), "rope_type", None), dict)
        rots: Dict[Any, Any] = {}

        def rot_of(i: int):  # the rotary tables of layer i's type (OLMo-3: one module, tables per layer type)
            kind = config.layer_types[i] if per_type else None
            if kind not in rots:
                r = rotary(base, config, d, layer_type=kind)
                rots[kind] = dataclasses.replace(r, style="interleaved") if style == "interleaved" else r
            return rots[kind]

        L = len(base.layers)
        windows = layer_windows(config, L) if per_layer else (None,) * L
        blocks = []
        for i, blk in enumerate(base.layers):
            n, sa = f"layers.{i}", blk.self_attn
            rot = rot_of(i) if _rotates(family, sa, f"{n}.self_attn") else None
            attn = _llama_attention(f"{n}.self_attn", sa, config, rot, family, windows[i])
            if mlp_kind == "plain":
                ffn = _plain_mlp(f"{n}.mlp", blk.mlp, act)
            else:
                ffn = _gated_mlp(f"{n}.mlp", blk.mlp, act, "phi3" if mlp_kind == "fused" else family)
            if layout == "sublayer_post_ln":
                norms = (rms_norm(f"{n}.post_attention_layernorm", blk.post_attention_layernorm),
                         rms_norm(f"{n}.post_feedforward_layernorm", blk.post_feedforward_layernorm))
            else:
                norms = tuple(norm(f"{n}.{p}", getattr(blk, p))
                              for p in ("input_layernorm", "post_attention_layernorm"))
            blocks.append(BlockWeights(attn, ffn, *norms))
        return TransformerStack(tuple(blocks), layout, act, final_norm=norm("norm", base.norm))
    build.__name__ = family
    return build


LLAMA_KIN: Dict[str, Callable[[Any, Any], TransformerStack]] = {f: llama_kin(f) for f in _SPEC}
