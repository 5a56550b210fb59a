r"""Llama 4's text model (``Llama4ForCausalLM``, ``Llama4TextModel``; ``model_type`` ``llama4_text``) →
a ``pre_ln`` :class:`~symuat.numeric.TransformerStack`.

* **Rotary layers** (``config.no_rope_layers[i] = 1``): interleaved rotary from the library's own complex table
  (``rotary_emb`` returns :math:`a\,e^{i\theta_j p}`; its real and imaginary parts are the ``cos``/``sin`` of
  :class:`~symuat.numeric.Rotary` ``style="interleaved"``), then the weightless per-head ``qk_norm`` (an RMS over
  the head, :math:`\varepsilon` = ``rms_norm_eps``).  The library normalises *after* the rotation, symuat before it:
  the same numbers, since a rotation keeps each pair's length, exactly when the table's magnitude :math:`a`
  (``attention_scaling``) is 1; any other :math:`a` with ``use_qk_norm`` is refused by name.  Their attention is
  ``chunked_attention``: causal within chunks of ``attention_chunk_size`` positions.
* **NoPE layers** (``no_rope_layers[i] = 0``): no rotary, no q/k norm, causal; with ``attn_temperature_tuning`` the
  queries are multiplied by :math:`1 + \alpha\log(1 + \lfloor (i+1)/f\rfloor)` (``attn_scale``, ``floor_scale``),
  which is exactly 1 for positions :math:`i < f - 1`.
* **Experts** (``moe_layers``): the router's top-:math:`k` logits through a sigmoid weigh each selected expert, whose
  *input* is scaled by that weight (:class:`~symuat.numeric.moe.MoEFFNWeights` ``input_scaled``; the ledger's
  ``ext:moe.input-scaled*``), plus the shared expert with gate 1; the other layers are a dense SwiGLU of
  ``intermediate_size_mlp``.

Positions are covered up to the smallest of ``max_position_embeddings``, :data:`~symuat.models.hf_common.MAX_POSITIONS`,
``attention_chunk_size`` (when a layer is chunked: below it the chunk mask is the causal mask) and
``floor_scale - 1`` (when the temperature tuning is on: below it the factor is 1): the rotary tables stop there, so a
longer input is refused by the position limit instead of being given the wrong mask or temperature.  A model without
any rotary layer (nothing carries that limit) is refused when its chunking or temperature tuning would act.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidValueError, UnsupportedError
from ..numeric import AttentionWeights, BlockWeights, GatedFFNWeights, Rotary, TransformerStack
from ..numeric.moe import MoEFFNWeights
from ..numeric.norms import RMSNormWeights
from ._torch import array, linear, require_torch
from .activations import activation_name, check_activation
from .hf_common import MAX_POSITIONS, attention_scale, probe_norm, rms_norm, static_rope_positions
from .precision import library_float64

__all__ = ["LLAMA4", "llama4_text", "llama4_positions"]


def llama4_positions(config: Any) -> int:
    r"""How many positions the stack covers exactly (module docstring).

    >>> from types import SimpleNamespace as C
    >>> llama4_positions(C(max_position_embeddings=64, layer_types=["chunked_attention", "full_attention"],
    ...                    attention_chunk_size=16, attn_temperature_tuning=True, floor_scale=8))
    7
    """
    P = int(min(MAX_POSITIONS, getattr(config, "max_position_embeddings", None) or MAX_POSITIONS))
    types = list(getattr(config, "layer_types", None) or ())
    chunk = getattr(config, "attention_chunk_size", None)
    if "chunked_attention" in types and chunk is not None:
        P = min(P, int(chunk))
    if getattr(config, "attn_temperature_tuning", False) and "full_attention" in types:
        P = min(P, int(config.floor_scale) - 1)
    if P < 1:
        raise UnsupportedError(f"llama4_text covers no position (attention_chunk_size={chunk!r}, floor_scale="
                               f"{getattr(config, 'floor_scale', None)!r})")
    return P


def _rotary(base: Any, config: Any, d: int, P: int) -> Rotary:
    torch = require_torch()
    emb = base.rotary_emb
    inv_freq = getattr(emb, "inv_freq", None)
    if inv_freq is None or 2 * int(inv_freq.shape[-1]) != d:
        raise UnsupportedError(f"rotary_emb of {type(base).__name__} has no inv_freq over the head dim {d}")
    rope_type = str(getattr(emb, "rope_type", "default"))
    P = min(P, static_rope_positions(emb, config, rope_type))
    with torch.no_grad(), library_float64():
        x = torch.zeros(1, 1, 1, dtype=torch.float64)
        table = emb(x, torch.arange(P)[None])
    if not torch.is_complex(table):
        raise UnsupportedError(f"rotary_emb returns a {table.dtype} table, not Llama 4's complex one")
    table = table[0]
    return Rotary(d, style="interleaved", inv_freq=array("rotary_emb.inv_freq", inv_freq),
                  cos=array("rotary_emb (real part)", table.real), sin=array("rotary_emb (imaginary part)", table.imag))


def _dense(n: str, mlp: Any, act: str) -> GatedFFNWeights:
    check_activation(getattr(mlp, "activation_fn", None), act, f"{n}.activation_fn")
    (Wg, bg), (Wu, bu), (Wd, bd) = (linear(f"{n}.{p}", getattr(mlp, p)) for p in ("gate_proj", "up_proj", "down_proj"))
    return GatedFFNWeights(Wg, Wu, Wd, bg, bu, bd, activation=act)


def _moe(n: str, ff: Any, act: str, config: Any) -> MoEFFNWeights:
    ex = ff.experts
    check_activation(getattr(ex, "act_fn", None), act, f"{n}.experts.act_fn")
    GU, D = array(f"{n}.experts.gate_up_proj", ex.gate_up_proj), array(f"{n}.experts.down_proj", ex.down_proj)
    E, M, F2 = GU.shape
    F = F2 // 2
    if F2 % 2 or D.shape != (E, F, M):
        raise InvalidValueError(f"{n}.experts: gate_up_proj {GU.shape} and down_proj {D.shape} are not E×M×2F and "
                                "E×F×M")
    left = sorted(k for k, _ in ex.named_parameters() if k not in ("gate_up_proj", "down_proj"))
    router = ff.router
    if getattr(router, "bias", None) is not None:
        raise UnsupportedError(f"{n}.router has a bias: Llama 4's router has none")
    left += [f"router.{k}" for k, _ in router.named_parameters() if k != "weight"]
    left += [k for k, _ in ff.named_parameters() if k.split(".")[0] not in ("experts", "router", "shared_expert")]
    if left:
        raise InvalidValueError(f"{n} holds parameters symuat did not read ({', '.join(left[:4])}): the imported "
                                "experts would be a partial model")
    experts = tuple(GatedFFNWeights(GU[e, :, :F], GU[e, :, F:], D[e], activation=act) for e in range(E))
    top_k = int(getattr(router, "top_k", None) or config.num_experts_per_tok)
    return MoEFFNWeights(experts, array(f"{n}.router.weight", router.weight).T, top_k, normalize=False,
                         shared=_dense(f"{n}.shared_expert", ff.shared_expert, act), activation=act,
                         routing="sigmoid", input_scaled=True)


def llama4_text(base: Any, config: Any) -> TransformerStack:
    r"""Importer of ``llama4_text`` (module docstring)."""
    H = config.num_attention_heads
    d = int(getattr(config, "head_dim", None) or config.hidden_size // H)
    act = activation_name(config.hidden_act, "config.hidden_act")
    P = llama4_positions(config)
    uses_rope = [bool(getattr(blk.self_attn, "use_rope", False)) for blk in base.layers]
    if not any(uses_rope) and P < int(min(MAX_POSITIONS, config.max_position_embeddings)):
        raise UnsupportedError("llama4_text without a rotary layer: nothing carries its position limit (chunked "
                               "attention or temperature tuning act beyond it); set attn_temperature_tuning=False")
    rot = _rotary(base, config, d, P) if any(uses_rope) else None
    scaling = float(getattr(base.rotary_emb, "attention_scaling", 1.0))
    blocks = []
    for i, blk in enumerate(base.layers):
        n = f"layers.{i}"
        sa = blk.self_attn
        q_norm = None
        if hasattr(sa, "qk_norm"):
            if scaling != 1.0:
                raise UnsupportedError(f"{n}.self_attn: use_qk_norm with a rotary table of magnitude "
                                       f"{scaling!r} (attention_scaling): the library normalises after it, which "
                                       "symuat's q/k norm (before the rotation) does not reproduce")
            eps = getattr(sa.qk_norm, "eps", None)
            if eps is None or getattr(sa.qk_norm, "weight", None) is not None:
                raise UnsupportedError(f"{n}.self_attn.qk_norm ({type(sa.qk_norm).__name__}) is not Llama 4's "
                                       "weightless L2 norm")
            q_norm = probe_norm(f"{n}.self_attn.qk_norm", sa.qk_norm, RMSNormWeights(np.ones(d), eps=float(eps)))
        (WQ, bQ), (WK, bK), (WV, bV), (WO, bO) = (linear(f"{n}.self_attn.{p}", getattr(sa, p))
                                                  for p in ("q_proj", "k_proj", "v_proj", "o_proj"))
        attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, n_kv_heads=config.num_key_value_heads,
                                head_dim=d, scale=attention_scale(sa, d), causal=True,
                                rotary=rot if uses_rope[i] else None, q_norm=q_norm, k_norm=q_norm)
        ff = blk.feed_forward
        ffn = _moe(f"{n}.feed_forward", ff, act, config) if hasattr(ff, "experts") else \
            _dense(f"{n}.feed_forward", ff, act)
        blocks.append(BlockWeights(attn, ffn, rms_norm(f"{n}.input_layernorm", blk.input_layernorm),
                                   rms_norm(f"{n}.post_attention_layernorm", blk.post_attention_layernorm)))
    return TransformerStack(tuple(blocks), "pre_ln", act, final_norm=rms_norm("norm", base.norm))


LLAMA4 = {"llama4_text": llama4_text}
