r"""GPT-OSS → a ``pre_ln`` :class:`~symuat.numeric.TransformerStack` with attention sinks and clamped-SwiGLU experts.

RMSNorms, rotary (YaRN in the released checkpoints), GQA with Q/K/V/O biases, sliding-window layers alternating
with full ones (``layer_types``), and per head a learned sink logit :math:`z_h` that joins every row's softmax and is
dropped (:class:`~symuat.numeric.AttentionWeights` ``sinks``; ``ext:attention-sink.mv-form``: the rows of
:math:`H_h` sum to :math:`1-\pi_{h,n}` and the value bias is dynamic).

The mixture of experts (``GptOssTopKRouter``, ``GptOssExperts``): a router with a bias, top-:math:`k` of its logits
then a softmax over the selected (a renormalised top-:math:`k`), experts with interleaved gate/up columns
(``gate_up_proj[..., ::2]`` / ``[..., 1::2]``) and biases, the gate :math:`\min(g, c)\,\mathrm{sigmoid}(\alpha
\min(g, c))` (activation ``quick_gelu_clamp7``: the released :math:`\alpha = 1.702`, :math:`c = 7`; other values are
refused by name) and the up factor :math:`\operatorname{clamp}(y, -c, c) + 1` (``up_clamp = (c, 1)``, the :math:`+1`
in the up bias, the clamp's factor held in the routing diagonal).  An expert's down bias is added with its routing
weight: it is one more hidden unit of that expert whose gate and up weights are zero and whose product
:math:`\mathrm{act}(g_0)\,y_0` is exactly 1, its down row the bias.
"""

from __future__ import annotations

import dataclasses
from typing import Any, List, Tuple

import numpy as np

from ..errors import InvalidValueError, UnsupportedError
from ..numeric import BlockWeights, GatedFFNWeights, TransformerStack, activation_function
from ..numeric.moe import MoEFFNWeights
from ._torch import array
from .hf_common import layer_windows, rms_norm, rotary
from .hf_decoders import _llama_attention

__all__ = ["GPT_OSS", "gpt_oss", "bias_unit"]

#: GPT-OSS's released gate constants: ``swiglu_alpha``, ``swiglu_limit`` (the activation ``quick_gelu_clamp7``).
_RELEASED = (1.702, 7.0)
_ACT = "quick_gelu_clamp7"


def bias_unit(act: str) -> Tuple[float, float]:
    r"""``(g0, y0)`` with :math:`\mathrm{act}(g_0)\,y_0 = 1` exactly in float64 (a hidden unit held at 1).

    >>> g0, y0 = bias_unit("quick_gelu_clamp7")
    >>> float(activation_function("quick_gelu_clamp7")(np.array([g0]))[0] * y0)
    1.0
    """
    f = activation_function(act)
    for g0 in (1.0, 1.5, 0.75, 2.0, 1.25, 0.5, 3.0):
        a = float(f(np.array([g0]))[0])
        y0 = 1.0 / a
        if a * y0 == 1.0 and np.float64(a) * np.float64(y0) == 1.0:
            return g0, y0
    raise InvalidValueError(f"no gate value makes the activation {act!r} times its reciprocal exactly 1")


def _experts(n: str, mlp: Any, limit: float) -> Tuple[List[GatedFFNWeights], np.ndarray, np.ndarray]:
    ex, router = mlp.experts, mlp.router
    if not hasattr(ex, "gate_up_proj_bias") or not hasattr(ex, "down_proj_bias"):
        raise UnsupportedError(f"{n}.experts: no gate_up_proj_bias/down_proj_bias (the gpt_oss experts' layout)")
    GU = array(f"{n}.experts.gate_up_proj", ex.gate_up_proj)  # E × M × 2F, columns interleaved gate/up
    bGU = array(f"{n}.experts.gate_up_proj_bias", ex.gate_up_proj_bias)
    D = array(f"{n}.experts.down_proj", ex.down_proj)  # E × F × M
    bD = array(f"{n}.experts.down_proj_bias", ex.down_proj_bias)
    E, M, F2 = GU.shape
    F = F2 // 2
    if F2 % 2 or D.shape != (E, F, M) or bGU.shape != (E, F2) or bD.shape != (E, M):
        raise InvalidValueError(f"{n}.experts: gate_up_proj {GU.shape}, its bias {bGU.shape}, down_proj {D.shape} "
                                f"and its bias {bD.shape} are not E×M×2F, E×2F, E×F×M and E×M")
    known = {"gate_up_proj", "gate_up_proj_bias", "down_proj", "down_proj_bias"}
    left = [f"experts.{k}" for k, _ in ex.named_parameters() if k not in known]
    left += [f"router.{k}" for k, _ in router.named_parameters() if k not in ("weight", "bias")]
    left += [k for k, _ in mlp.named_parameters() if k.split(".")[0] not in ("experts", "router")]
    if left:
        raise InvalidValueError(f"{n} holds parameters symuat did not read ({', '.join(sorted(left)[:4])}): the "
                                "imported experts would be a partial model")
    g0, y0 = bias_unit(_ACT)
    z, experts = np.zeros((M, 1)), []
    for e in range(E):
        Wg, Wu = GU[e][:, 0::2], GU[e][:, 1::2]
        bg, bu = bGU[e][0::2], bGU[e][1::2] + 1.0  # the library's "+ 1" after the clamp, as the up bias' shift
        if not abs(y0 - 1.0) <= limit:
            raise UnsupportedError(f"swiglu_limit={limit!r} (gpt_oss) clamps the down-bias unit")  # pragma: no cover
        experts.append(GatedFFNWeights(np.hstack([Wg, z]), np.hstack([Wu, z]), np.vstack([D[e], bD[e][None]]),
                                       np.append(bg, g0), np.append(bu, y0), activation=_ACT))
    W = array(f"{n}.router.weight", router.weight).T
    b = array(f"{n}.router.bias", router.bias)
    return experts, W, b


def gpt_oss(base: Any, config: Any) -> TransformerStack:
    r"""HF ``GptOssModel`` (module docstring)."""
    alpha, limit = getattr(config, "swiglu_alpha", None), getattr(config, "swiglu_limit", None)
    if (alpha, limit) != _RELEASED:
        raise UnsupportedError(f"unsupported config option swiglu_alpha={alpha!r}, swiglu_limit={limit!r} (gpt_oss): "
                               f"symuat reads the released gate {_RELEASED} (activation {_ACT!r})")
    H = config.num_attention_heads
    d = getattr(config, "head_dim", None) or config.hidden_size // H
    rot = rotary(base, config, d)
    windows = layer_windows(config, len(base.layers))
    blocks = []
    for i, blk in enumerate(base.layers):
        n = f"layers.{i}"
        sa = blk.self_attn
        attn = _llama_attention(f"{n}.self_attn", sa, config, rot, "gpt_oss", windows[i])
        if getattr(sa, "sinks", None) is None:
            raise UnsupportedError(f"{n}.self_attn has no sinks (the gpt_oss attention's layout)")
        attn = dataclasses.replace(attn, sinks=array(f"{n}.self_attn.sinks", sa.sinks))
        mlp = blk.mlp
        top_k = int(getattr(mlp.router, "top_k", 0) or 0)
        if top_k < 1:
            raise UnsupportedError(f"{n}.mlp.router has no top_k (the gpt_oss router's layout)")
        experts, W, b = _experts(f"{n}.mlp", mlp, float(limit))
        ffn = MoEFFNWeights(tuple(experts), W, top_k, normalize=True, activation=_ACT, router_bias=b,
                            up_clamp=(float(limit), 1.0))
        blocks.append(BlockWeights(attn, ffn, rms_norm(f"{n}.input_layernorm", blk.input_layernorm),
                                   rms_norm(f"{n}.post_attention_layernorm", blk.post_attention_layernorm)))
    return TransformerStack(tuple(blocks), "pre_ln", _ACT, final_norm=rms_norm("norm", base.norm))


GPT_OSS = {"gpt_oss": gpt_oss}
