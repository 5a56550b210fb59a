r"""Gemma-2 and Gemma-3 (text) → a ``sandwich`` :class:`~symuat.numeric.TransformerStack` (causal).

Each block has a norm before *and* after each sublayer (``input_layernorm``, ``post_attention_layernorm``,
``pre_feedforward_layernorm``, ``post_feedforward_layernorm``: RMSNorms with gain :math:`1+w`), so
:math:`h = x + N_2(\mathrm{MHA}(N_1x))`, :math:`x^+ = h + N_4(\mathrm{FFN}(N_3h))`.  Read from the model:

* Gemma-2's attention soft-capping :math:`c\tanh(S/c)` (``attn_logit_softcapping``), inside :math:`H_h` (Gemma-3's
  attention keeps the option but does not apply it, and neither does its stack; the import probe checks this);
* the score scale ``query_pre_attn_scalar``:math:`^{-1/2}` (the module's ``scaling``);
* local (sliding-window) and global layers from ``config.layer_types`` — never a hard-coded order;
* Gemma-3: per-head q/k RMSNorms and the rotary tables of each layer type (local base frequency);
* the embedding scale :math:`\sqrt M` is part of the embedding module (``symuat.models.load`` reads it).

``final_logit_softcapping`` acts on the logits, after the stack and the LM head: the hidden states and their DUAT
form do not contain it.  Gemma-3's ``use_bidirectional_attention`` is refused by name.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError
from ..numeric import AttentionWeights, BlockWeights, GatedFFNWeights, TransformerStack
from ._torch import linear
from .activations import activation_name, check_activation
from .hf_common import attention_scale, layer_windows, rms_norm, rotary

__all__ = ["gemma2", "GEMMA"]


def _act(config: Any) -> str:
    name = getattr(config, "hidden_activation", None) or config.hidden_act
    return activation_name(name, "config.hidden_activation")


def gemma2(base: Any, config: Any) -> TransformerStack:
    r"""HF ``Gemma2Model`` / ``Gemma3TextModel`` (module docstring)."""
    family = config.model_type
    if getattr(config, "use_bidirectional_attention", False):
        raise UnsupportedError(f"unsupported config option use_bidirectional_attention=True ({family}): "
                               "bidirectional sliding attention is not modelled")
    H = config.num_attention_heads
    G = getattr(config, "num_key_value_heads", None) or H
    d = getattr(config, "head_dim", None) or config.hidden_size // H
    act = _act(config)
    windows = layer_windows(config, len(base.layers))
    per_type = family == "gemma3_text"
    rots = {}
    # Gemma-3's attention keeps the config value but never applies it (transformers 5): the stack follows the code
    cap = None if per_type else getattr(config, "attn_logit_softcapping", None)
    if cap is not None and getattr(config, "_attn_implementation", None) == "sdpa":
        raise UnsupportedError(f"{family} with attn_logit_softcapping={cap} and attn_implementation='sdpa': the sdpa "
                               "kernel ignores the soft cap (transformers 5.0.0 and 5.20.2 allow it); load the model "
                               "with attn_implementation='eager'")
    blocks = []
    for i, blk in enumerate(base.layers):
        n, sa = f"layers.{i}", blk.self_attn
        kind = config.layer_types[i] if per_type else None
        if kind not in rots:
            rots[kind] = rotary(base, config, d, layer_type=kind)
        (WQ, bQ), (WK, bK), (WV, bV), (WO, bO) = (linear(f"{n}.self_attn.{p}", getattr(sa, p))
                                                  for p in ("q_proj", "k_proj", "v_proj", "o_proj"))
        q_norm = k_norm = None
        if getattr(sa, "q_norm", None) is not None:
            q_norm = rms_norm(f"{n}.self_attn.q_norm", sa.q_norm, 1.0)
            k_norm = rms_norm(f"{n}.self_attn.k_norm", sa.k_norm, 1.0)
        if not per_type and getattr(sa, "attn_logit_softcapping", None) != cap:
            raise UnsupportedError(f"{n}.self_attn soft-caps at {sa.attn_logit_softcapping}, the config at {cap}")
        attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, n_kv_heads=G, head_dim=d,
                                scale=attention_scale(sa, d), causal=True, rotary=rots[kind], q_norm=q_norm,
                                k_norm=k_norm, sliding_window=windows[i], softcap=cap)
        mlp = blk.mlp
        check_activation(mlp.act_fn, act, f"{n}.mlp.act_fn")
        (Wg, bg), (Wu, bu), (Wd, bd) = (linear(f"{n}.mlp.{p}", getattr(mlp, p))
                                        for p in ("gate_proj", "up_proj", "down_proj"))
        norms = [rms_norm(f"{n}.{p}", getattr(blk, p), 1.0) for p in (
            "input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm")]
        blocks.append(BlockWeights(attn, GatedFFNWeights(Wg, Wu, Wd, bg, bu, bd, activation=act), *norms))
    return TransformerStack(tuple(blocks), "sandwich", act, final_norm=rms_norm("norm", base.norm, 1.0))


GEMMA = {"gemma2": gemma2, "gemma3_text": gemma2}
