r"""transformers decoders with a *parallel* block, :math:`x^+ = x + \mathrm{MHA}(N_1x) + \mathrm{FFN}(N_1x)` → a
``parallel`` :class:`~symuat.numeric.TransformerStack` (one shared norm, ``ln2=None``).

``gptj``
    Interleaved (``rotate_every_two``) partial rotary of ``rotary_dim`` coordinates, its angle table the output of
    the model's ``rotary_emb`` (transformers >= 5.24; before: the attention's ``embed_positions`` buffer); no
    biases in attention; ``fc_in``/``fc_out``; final ``ln_f``.
``phi``
    Phi-1/1.5/2: partial rotary (``partial_rotary_factor``, ``rotate_half``), biases everywhere, ``dense`` output,
    ``fc1``/``fc2``, ``final_layernorm``.  ``qk_layernorm=True`` is refused by name.
``cohere``
    LayerNorm with a gain and no bias (``CohereLayerNorm``), interleaved rotary, SwiGLU.  ``use_qk_norm`` is
    refused by name; ``logit_scale`` multiplies the logits only (after the stack), like a final-logit scale.
``falcon``
    Fused ``query_key_value`` in its three layouts, rotary, ``parallel_attn`` with one or two norms or sequential;
    ALiBi (``alibi=True``): the library's table, an additive bias inside :math:`H_h`.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError
from ..numeric import AttentionWeights, BlockWeights, FFNWeights, GatedFFNWeights, Rotary, TransformerStack
from ._torch import array, linear
from .activations import activation_name, check_activation
from .hf_common import MAX_POSITIONS, attention_scale, centred_norm, layer_norm, layout_message, rotary
from .precision import library_float64

__all__ = ["gptj", "phi", "cohere", "falcon", "PARALLEL"]


def _refuse(config: Any, option: str, family: str) -> None:
    value = getattr(config, option, None)
    if value:
        raise UnsupportedError(f"unsupported config option {option}={value!r} ({family}): per-head q/k norms of this "
                               "family are not modelled")


def _qkvo(n: str, sa: Any, names=("q_proj", "k_proj", "v_proj", "o_proj")):
    return [linear(f"{n}.{p}", getattr(sa, p)) for p in names]


def _gptj_table(base: Any, sa: Any, n: str, P: int) -> Any:
    r"""GPT-J's ``(P, r)`` angle table ``sin | cos``: the output of the model's rotary module
    (``rotary_emb(x, position_ids)`` returns ``(sin, cos)``, transformers >= 5.24), else the attention's own
    ``embed_positions`` buffer (the releases before); an unknown layout raises naming the module."""
    import torch

    emb = getattr(base, "rotary_emb", None)
    if emb is not None:
        x = torch.zeros(1, 1, 1, dtype=torch.float64)
        with torch.no_grad(), library_float64():
            out = emb(x, torch.arange(P)[None])
        if not (isinstance(out, tuple) and len(out) == 2):
            raise UnsupportedError(f"rotary_emb ({type(emb).__name__}) does not return (sin, cos): "
                                   f"{layout_message('gptj')}")
        sin, cos = (array(f"rotary_emb {w}", t[0]) for w, t in zip(("sin", "cos"), out))
        return sin, cos
    buf = getattr(sa, "embed_positions", None)
    if buf is None or buf.dim() != 2:
        raise UnsupportedError(f"{n}.attn ({type(sa).__name__}) has neither a model rotary_emb nor an "
                               f"embed_positions table: {layout_message('gptj')}")
    table = array(f"{n}.attn.embed_positions", buf)[:P]
    r = table.shape[1]
    return table[:, : r // 2], table[:, r // 2:]


def gptj(base: Any, config: Any) -> TransformerStack:
    r"""HF ``GPTJModel``."""
    M, H = config.n_embd, config.n_head
    d = M // H
    act = activation_name(config.activation_function, "config.activation_function")
    P = int(min(MAX_POSITIONS, getattr(config, "max_position_embeddings", None) or config.n_positions))
    blocks, rot = [], None
    for i, blk in enumerate(base.h):
        n, sa = f"h.{i}", blk.attn
        r = int(getattr(config, "rotary_dim", None) or d)
        if rot is None:
            sin, cos = _gptj_table(base, sa, n, P)
            if sin.shape[1] != r // 2 or cos.shape[1] != r // 2:
                raise UnsupportedError(f"{n}: the rotary table has {2 * sin.shape[1]} columns, rotary_dim is {r}: "
                                       f"{layout_message('gptj')}")
            rot = Rotary(r, style="interleaved", sin=sin, cos=cos)
        (WQ, bQ), (WK, bK), (WV, bV), (WO, bO) = _qkvo(f"{n}.attn", sa, ("q_proj", "k_proj", "v_proj", "out_proj"))
        scale = getattr(sa, "scaling", None)
        scale = float(scale) if scale is not None else 1.0 / float(sa.scale_attn)
        attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, scale=scale, causal=True, rotary=rot)
        check_activation(blk.mlp.act, act, f"{n}.mlp.act")
        W1, b1 = linear(f"{n}.mlp.fc_in", blk.mlp.fc_in)
        W2, b2 = linear(f"{n}.mlp.fc_out", blk.mlp.fc_out)
        blocks.append(BlockWeights(attn, FFNWeights(W1, b1, W2, b2), layer_norm(f"{n}.ln_1", blk.ln_1)))
    return TransformerStack(tuple(blocks), "parallel", act, final_norm=layer_norm("ln_f", base.ln_f))


def phi(base: Any, config: Any) -> TransformerStack:
    r"""HF ``PhiModel`` (Phi-1, 1.5, 2)."""
    _refuse(config, "qk_layernorm", "phi")
    H = config.num_attention_heads
    G = getattr(config, "num_key_value_heads", None) or H
    act = activation_name(config.hidden_act, "config.hidden_act")
    blocks = []
    for i, blk in enumerate(base.layers):
        n, sa = f"layers.{i}", blk.self_attn
        d = sa.head_dim
        rot = rotary(base, config, d)
        if rot.dim != int(sa.rotary_ndims):
            raise UnsupportedError(f"{n}.self_attn rotates {sa.rotary_ndims} coordinates, rotary_emb {rot.dim}")
        (WQ, bQ), (WK, bK), (WV, bV), (WO, bO) = _qkvo(f"{n}.self_attn", sa, ("q_proj", "k_proj", "v_proj", "dense"))
        attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, n_kv_heads=G, head_dim=d,
                                scale=attention_scale(sa, d), causal=True, rotary=rot)
        check_activation(blk.mlp.activation_fn, act, f"{n}.mlp.activation_fn")
        W1, b1 = linear(f"{n}.mlp.fc1", blk.mlp.fc1)
        W2, b2 = linear(f"{n}.mlp.fc2", blk.mlp.fc2)
        blocks.append(BlockWeights(attn, FFNWeights(W1, b1, W2, b2),
                                   layer_norm(f"{n}.input_layernorm", blk.input_layernorm)))
    return TransformerStack(tuple(blocks), "parallel", act,
                            final_norm=layer_norm("final_layernorm", base.final_layernorm))


def cohere(base: Any, config: Any) -> TransformerStack:
    r"""HF ``CohereModel`` (Command-R)."""
    _refuse(config, "use_qk_norm", "cohere")
    M, H = config.hidden_size, config.num_attention_heads
    G = getattr(config, "num_key_value_heads", None) or H
    act = activation_name(config.hidden_act, "config.hidden_act")
    blocks = []
    for i, blk in enumerate(base.layers):
        n, sa = f"layers.{i}", blk.self_attn
        d = sa.head_dim
        rot = rotary(base, config, d, style="interleaved")
        (WQ, bQ), (WK, bK), (WV, bV), (WO, bO) = _qkvo(f"{n}.self_attn", sa)
        attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, n_kv_heads=G, head_dim=d,
                                scale=attention_scale(sa, d), causal=True, rotary=rot)
        mlp = blk.mlp
        check_activation(mlp.act_fn, act, f"{n}.mlp.act_fn")
        (Wg, bg), (Wu, bu), (Wd, bd) = (linear(f"{n}.mlp.{p}", getattr(mlp, p))
                                        for p in ("gate_proj", "up_proj", "down_proj"))
        blocks.append(BlockWeights(attn, GatedFFNWeights(Wg, Wu, Wd, bg, bu, bd, activation=act),
                                   centred_norm(f"{n}.input_layernorm", blk.input_layernorm, M)))
    return TransformerStack(tuple(blocks), "parallel", act, final_norm=centred_norm("norm", base.norm, M))


def _falcon_qkv(n: str, W: Any, b: Any, H: int, G: int, d: int, config: Any) -> list:
    """Columns of the fused ``query_key_value`` for Q, K, V (the three layouts of ``_split_heads``)."""
    import numpy as np

    if config.new_decoder_architecture:  # per group g: [q_{g,0..H/G-1}, k_g, v_g]
        r = H // G + 2
        q = [g * r * d + j * d + c for g in range(G) for j in range(r - 2) for c in range(d)]
        k = [g * r * d + (r - 2) * d + c for g in range(G) for c in range(d)]
        v = [g * r * d + (r - 1) * d + c for g in range(G) for c in range(d)]
    elif config.multi_query:  # [q_0..q_{H-1}, k, v]
        q, k, v = list(range(H * d)), list(range(H * d, (H + 1) * d)), list(range((H + 1) * d, (H + 2) * d))
    else:  # per head: [q_h, k_h, v_h]
        q, k, v = ([h * 3 * d + j * d + c for h in range(H) for c in range(d)] for j in range(3))
    if len(q) + len(k) + len(v) != W.shape[1]:
        raise UnsupportedError(f"{n}.query_key_value has {W.shape[1]} columns, the layout needs "
                               f"{len(q) + len(k) + len(v)}")
    return [(W[:, np.array(c)], None if b is None else b[np.array(c)]) for c in (q, k, v)]


def _falcon_alibi(config: Any, H: int, d: int) -> Any:
    r"""The library's own ALiBi table (its slopes times the key positions, rounded as it rounds them) times the
    score scale :math:`1/\sqrt d` (Falcon scales scores and bias together), ``(H, P)``."""
    import torch
    from transformers.models.falcon.modeling_falcon import build_alibi_tensor

    P = int(min(MAX_POSITIONS, getattr(config, "max_position_embeddings", None) or MAX_POSITIONS))
    table = build_alibi_tensor(torch.ones(1, P, dtype=torch.long), H, torch.float64)[:, 0, :]
    return array("alibi", table) / d ** 0.5


def falcon(base: Any, config: Any) -> TransformerStack:
    r"""HF ``FalconModel`` (rotary; ALiBi is refused by :func:`~symuat.models.hf_common.check_config`): the three
    fused QKV layouts (multi-head, multi-query, ``new_decoder_architecture`` groups), ``parallel_attn`` with one or
    two norms (``num_ln_in_parallel_attn``) or sequential ``pre_ln``."""
    M, H = config.hidden_size, config.num_attention_heads
    d = M // H
    new, parallel = bool(config.new_decoder_architecture), bool(config.parallel_attn)
    if new and not parallel:
        raise UnsupportedError("unsupported config option parallel_attn=False with new_decoder_architecture=True "
                               "(falcon)")
    if config.alibi and getattr(config, "_attn_implementation", None) == "eager":
        raise UnsupportedError("falcon with alibi=True and attn_implementation='eager': transformers' eager path adds "
                               "the ALiBi bias twice (in the mask and in the scores), its sdpa path once; symuat "
                               "models ALiBi once: load the model with attn_implementation='sdpa'")
    G = config.num_kv_heads if (new or not config.multi_query) else 1
    act = activation_name(config.activation, "config.activation")
    rot = None if config.alibi else rotary(base, config, d)
    alibi = _falcon_alibi(config, H, d) if config.alibi else None
    blocks = []
    for i, blk in enumerate(base.h):
        n, sa = f"h.{i}", blk.self_attention
        W, b = linear(f"{n}.self_attention.query_key_value", sa.query_key_value)
        (WQ, bQ), (WK, bK), (WV, bV) = _falcon_qkv(f"{n}.self_attention", W, b, H, G, d, config)
        WO, bO = linear(f"{n}.self_attention.dense", sa.dense)
        attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, n_kv_heads=G, head_dim=d,
                                scale=float(sa.inv_norm_factor), causal=True, rotary=rot, alibi=alibi)
        check_activation(blk.mlp.act, act, f"{n}.mlp.act")
        W1, b1 = linear(f"{n}.mlp.dense_h_to_4h", blk.mlp.dense_h_to_4h)
        W2, b2 = linear(f"{n}.mlp.dense_4h_to_h", blk.mlp.dense_4h_to_h)
        if hasattr(blk, "ln_attn") and new and config.num_ln_in_parallel_attn == 2:
            norms = (layer_norm(f"{n}.ln_attn", blk.ln_attn), layer_norm(f"{n}.ln_mlp", blk.ln_mlp))
        elif parallel:
            norms = (layer_norm(f"{n}.input_layernorm", blk.input_layernorm),)
        else:
            norms = (layer_norm(f"{n}.input_layernorm", blk.input_layernorm),
                     layer_norm(f"{n}.post_attention_layernorm", blk.post_attention_layernorm))
        blocks.append(BlockWeights(attn, FFNWeights(W1, b1, W2, b2), *norms))
    return TransformerStack(tuple(blocks), "parallel" if parallel else "pre_ln", act,
                            final_norm=layer_norm("ln_f", base.ln_f))


PARALLEL = {"gptj": gptj, "phi": phi, "cohere": cohere, "falcon": falcon}
