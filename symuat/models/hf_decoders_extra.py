r"""More transformers decoders built from existing blocks → :class:`~symuat.numeric.TransformerStack` (causal).

``gpt_bigcode`` (StarCoder-1, SantaCoder)
    GPT-2's block (LayerNorms with bias, learned positions ``wpe``, ``ln_f``) with multi-query attention
    (``multi_query``): the fused ``c_attn`` holds :math:`[Q\ (M), K\ (d), V\ (d)]`, one key/value head for all
    :math:`H` query heads (:math:`G = 1`); without it, per head :math:`[q_h, k_h, v_h]`.  The score scale is the
    module's ``scaling`` (:math:`1/\sqrt d`, or 1 without ``scale_attn_weights``).
``glm4``
    Norms before and after each sublayer (``input_layernorm``, ``post_self_attn_layernorm``,
    ``post_attention_layernorm``, ``post_mlp_layernorm``: the ``sandwich`` layout); partial rotary over the first
    ``partial_rotary_factor``:math:`\cdot d` coordinates in *interleaved* pairs :math:`(2j, 2j+1)` with the
    library's angle :math:`j`; fused ``gate_up_proj``; Q/K/V biases.
``gpt_neo``
    GPT-2's block (learned positions ``wpe``, LayerNorms, ``c_fc``/``c_proj``) with global and local layers
    (``config.attention_layers``, read from each module's ``attention_type``): a local layer attends to the last
    ``window_size`` tokens, a sliding window :math:`j > i - w` (checked against the module's own mask buffer); the
    scores are *not* scaled (:math:`s = 1`); Q/K/V without biases, the output projection with one.
``opt``
    Learned positions with the library's offset of 2 (the stack holds ``embed_positions.weight[2:]``), counted over
    the *real* tokens (``cumsum(attention_mask) - 1``: ``symuat.models.Model`` follows it); ``pre_ln``
    (``do_layer_norm_before``) or ``post_ln`` (OPT-350m); the queries scaled before the product (the same
    :math:`s = 1/\sqrt d`); ReLU ``fc1``/``fc2``; the final LayerNorm when the model has one.  An input or output
    projection (``word_embed_proj_dim`` :math:`\ne` ``hidden_size``) is refused by name: it is not a block.
``persimmon``
    ``pre_ln`` with LayerNorms, fused per-head ``query_key_value`` :math:`[q_h, k_h, v_h]` with biases, per-head
    q/k LayerNorms (``qk_layernorm``) before a partial rotary of ``rotary_ndims`` coordinates, ReLU² MLP.
``smollm3``
    Llama's block with NoPE layers: the attention of a layer whose module has ``use_rope = False``
    (``config.no_rope_layers``) carries no rotary embedding at all (its :math:`H_h` sees no positions); sliding
    windows per ``config.layer_types``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..errors import UnsupportedError
from ..numeric import AttentionWeights, BlockWeights, FFNWeights, TransformerStack
from ._torch import array, linear
from .activations import activation_name, check_activation
from .hf_common import attention_scale, layer_norm, layer_windows, rms_norm, rotary
from .hf_decoders import _gated_mlp, _llama_attention

__all__ = ["EXTRA_DECODERS", "gpt_bigcode", "gpt_neo", "opt", "persimmon", "glm4", "smollm3"]


def _bigcode_qkv(n: str, W: np.ndarray, b: Any, H: int, d: int, multi_query: bool) -> list:
    M = H * d
    if multi_query:
        cols = [list(range(M)), list(range(M, M + d)), list(range(M + d, M + 2 * d))]
    else:
        cols = [[h * 3 * d + j * d + c for h in range(H) for c in range(d)] for j in range(3)]
    if sum(len(c) for c in cols) != W.shape[1]:
        raise UnsupportedError(f"{n}.c_attn has {W.shape[1]} columns, the layout needs {sum(len(c) for c in cols)}")
    return [(W[:, np.array(c)], None if b is None else b[np.array(c)]) for c in cols]


def gpt_bigcode(base: Any, config: Any) -> TransformerStack:
    r"""HF ``GPTBigCodeModel`` (module docstring)."""
    M, H = config.hidden_size, config.num_attention_heads
    d = M // H
    mq = bool(config.multi_query)
    act = activation_name(config.activation_function, "config.activation_function")
    blocks = []
    for i, blk in enumerate(base.h):
        n, sa = f"h.{i}", blk.attn
        if bool(sa.multi_query) != mq:
            raise UnsupportedError(f"{n}.attn.multi_query={sa.multi_query}, the config's {mq}")
        check_activation(blk.mlp.act, act, f"{n}.mlp.act")
        W, b = linear(f"{n}.attn.c_attn", sa.c_attn)
        (WQ, bQ), (WK, bK), (WV, bV) = _bigcode_qkv(f"{n}.attn", W, b, H, d, mq)
        WO, bO = linear(f"{n}.attn.c_proj", sa.c_proj)
        attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, n_kv_heads=1 if mq else H, head_dim=d,
                                scale=attention_scale(sa, d), causal=True)
        W1, b1 = linear(f"{n}.mlp.c_fc", blk.mlp.c_fc)
        W2, b2 = linear(f"{n}.mlp.c_proj", blk.mlp.c_proj)
        blocks.append(BlockWeights(attn, FFNWeights(W1, b1, W2, b2),
                                   layer_norm(f"{n}.ln_1", blk.ln_1), layer_norm(f"{n}.ln_2", blk.ln_2)))
    return TransformerStack(tuple(blocks), "pre_ln", act, position_embeddings=array("wpe.weight", base.wpe.weight),
                            final_norm=layer_norm("ln_f", base.ln_f))


def _neo_window(n: str, sa: Any, config: Any) -> Any:
    r"""The window of a GPT-Neo layer (``None``: global), checked against the module's causal mask buffer."""
    kind = getattr(sa, "attention_type", None)
    if kind not in ("global", "local"):
        raise UnsupportedError(f"{n}.attention_type={kind!r}: expected 'global' or 'local'")
    w = int(config.window_size) if kind == "local" else None
    mask = sa.bias.detach().cpu().numpy()[0, 0].astype(bool)
    P = mask.shape[0]
    want = np.tri(P, dtype=bool) if w is None else np.tri(P, dtype=bool) & ~np.tri(P, k=-w, dtype=bool)
    if not np.array_equal(mask, want):
        raise UnsupportedError(f"{n}.bias is not the {kind} causal mask{'' if w is None else f' of window {w}'} "
                               "its config describes")
    return w


def gpt_neo(base: Any, config: Any) -> TransformerStack:
    r"""HF ``GPTNeoModel`` (module docstring)."""
    H = config.num_heads
    M = config.hidden_size
    d = M // H
    act = activation_name(config.activation_function, "config.activation_function")
    blocks = []
    for i, blk in enumerate(base.h):
        n, sa = f"h.{i}", blk.attn.attention
        check_activation(blk.mlp.act, act, f"{n}.mlp.act")
        (WQ, bQ), (WK, bK), (WV, bV), (WO, bO) = (linear(f"{n}.attn.attention.{p}", getattr(sa, p))
                                                  for p in ("q_proj", "k_proj", "v_proj", "out_proj"))
        attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, head_dim=d, scale=1.0, causal=True,
                                sliding_window=_neo_window(f"{n}.attn.attention", sa, config))
        W1, b1 = linear(f"{n}.mlp.c_fc", blk.mlp.c_fc)
        W2, b2 = linear(f"{n}.mlp.c_proj", blk.mlp.c_proj)
        blocks.append(BlockWeights(attn, FFNWeights(W1, b1, W2, b2),
                                   layer_norm(f"{n}.ln_1", blk.ln_1), layer_norm(f"{n}.ln_2", blk.ln_2)))
    return TransformerStack(tuple(blocks), "pre_ln", act, position_embeddings=array("wpe.weight", base.wpe.weight),
                            final_norm=layer_norm("ln_f", base.ln_f))


def opt(base: Any, config: Any) -> TransformerStack:
    r"""HF ``OPTModel`` (module docstring)."""
    dec = base.decoder
    if dec.project_in is not None or dec.project_out is not None:
        raise UnsupportedError(f"unsupported config option word_embed_proj_dim={config.word_embed_proj_dim!r} "
                               f"(opt; hidden_size {config.hidden_size}): the input and output projections around "
                               "the decoder are not a Transformer block")
    M, H = config.hidden_size, config.num_attention_heads
    d = M // H
    before = bool(config.do_layer_norm_before)
    act = activation_name(config.activation_function, "config.activation_function")
    offset = int(getattr(dec.embed_positions, "offset", 2))
    blocks = []
    for i, blk in enumerate(dec.layers):
        n, sa = f"decoder.layers.{i}", blk.self_attn
        check_activation(blk.activation_fn, act, f"{n}.activation_fn")
        (WQ, bQ), (WK, bK), (WV, bV), (WO, bO) = (linear(f"{n}.self_attn.{p}", getattr(sa, p))
                                                  for p in ("q_proj", "k_proj", "v_proj", "out_proj"))
        attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, head_dim=d,
                                scale=attention_scale(sa, d), causal=True)
        W1, b1 = linear(f"{n}.fc1", blk.fc1)
        W2, b2 = linear(f"{n}.fc2", blk.fc2)
        blocks.append(BlockWeights(attn, FFNWeights(W1, b1, W2, b2),
                                   layer_norm(f"{n}.self_attn_layer_norm", blk.self_attn_layer_norm),
                                   layer_norm(f"{n}.final_layer_norm", blk.final_layer_norm)))
    final = None if dec.final_layer_norm is None else layer_norm("decoder.final_layer_norm", dec.final_layer_norm)
    P = array("decoder.embed_positions.weight", dec.embed_positions.weight)[offset:]
    return TransformerStack(tuple(blocks), "pre_ln" if before else "post_ln", act, position_embeddings=P,
                            final_norm=final)


def persimmon(base: Any, config: Any) -> TransformerStack:
    r"""HF ``PersimmonModel`` (module docstring)."""
    M, H = config.hidden_size, config.num_attention_heads
    d = M // H
    act = activation_name(config.hidden_act, "config.hidden_act")
    rot = rotary(base, config, d)
    blocks = []
    for i, blk in enumerate(base.layers):
        n, sa = f"layers.{i}", blk.self_attn
        if rot.dim != int(sa.rotary_ndims):
            raise UnsupportedError(f"{n}.self_attn rotates {sa.rotary_ndims} coordinates, rotary_emb {rot.dim}")
        W, b = linear(f"{n}.self_attn.query_key_value", sa.query_key_value)
        (WQ, bQ), (WK, bK), (WV, bV) = _bigcode_qkv(f"{n}.self_attn", W, b, H, d, False)
        WO, bO = linear(f"{n}.self_attn.dense", sa.dense)
        q_norm = k_norm = None
        if sa.qk_layernorm:
            q_norm = layer_norm(f"{n}.self_attn.q_layernorm", sa.q_layernorm)
            k_norm = layer_norm(f"{n}.self_attn.k_layernorm", sa.k_layernorm)
        attn = AttentionWeights(WQ, WK, WV, WO, bQ, bK, bV, bO, n_heads=H, head_dim=d,
                                scale=attention_scale(sa, d), causal=True, rotary=rot, q_norm=q_norm, k_norm=k_norm)
        check_activation(blk.mlp.act, act, f"{n}.mlp.act")
        W1, b1 = linear(f"{n}.mlp.dense_h_to_4h", blk.mlp.dense_h_to_4h)
        W2, b2 = linear(f"{n}.mlp.dense_4h_to_h", blk.mlp.dense_4h_to_h)
        blocks.append(BlockWeights(attn, FFNWeights(W1, b1, W2, b2),
                                   layer_norm(f"{n}.input_layernorm", blk.input_layernorm),
                                   layer_norm(f"{n}.post_attention_layernorm", blk.post_attention_layernorm)))
    return TransformerStack(tuple(blocks), "pre_ln", act, final_norm=layer_norm("final_layernorm",
                                                                                base.final_layernorm))


def glm4(base: Any, config: Any) -> TransformerStack:
    r"""HF ``Glm4Model`` (module docstring)."""
    H = config.num_attention_heads
    d = getattr(config, "head_dim", None) or config.hidden_size // H
    act = activation_name(config.hidden_act, "config.hidden_act")
    half = rotary(base, config, d)  # the library's angle table, angle j in column j
    rot = dataclasses.replace(half, style="interleaved")  # applied to the pairs (2j, 2j+1)
    blocks = []
    for i, blk in enumerate(base.layers):
        n = f"layers.{i}"
        attn = _llama_attention(f"{n}.self_attn", blk.self_attn, config, rot, "glm4")
        ffn = _gated_mlp(f"{n}.mlp", blk.mlp, act, "phi3")  # fused gate_up_proj, activation_fn
        norms = [rms_norm(f"{n}.{p}", getattr(blk, p)) for p in (
            "input_layernorm", "post_self_attn_layernorm", "post_attention_layernorm", "post_mlp_layernorm")]
        blocks.append(BlockWeights(attn, ffn, *norms))
    return TransformerStack(tuple(blocks), "sandwich", act, final_norm=rms_norm("norm", base.norm))


def smollm3(base: Any, config: Any) -> TransformerStack:
    r"""HF ``SmolLM3Model`` (module docstring)."""
    H = config.num_attention_heads
    d = getattr(config, "head_dim", None) or config.hidden_size // H
    act = activation_name(config.hidden_act, "config.hidden_act")
    rot = rotary(base, config, d)
    windows = layer_windows(config, len(base.layers))
    flags = list(getattr(config, "no_rope_layers", None) or [])
    blocks = []
    for i, blk in enumerate(base.layers):
        n, sa = f"layers.{i}", blk.self_attn
        use_rope = getattr(sa, "use_rope", None)
        if not isinstance(use_rope, (bool, int)) or (len(flags) > i and bool(flags[i]) != bool(use_rope)):
            raise UnsupportedError(f"{n}.self_attn.use_rope={use_rope!r} does not match config.no_rope_layers[{i}]="
                                   f"{flags[i] if len(flags) > i else None!r}")
        attn = _llama_attention(f"{n}.self_attn", sa, config, rot if use_rope else None, "smollm3", windows[i])
        blocks.append(BlockWeights(attn, _gated_mlp(f"{n}.mlp", blk.mlp, act, "smollm3"),
                                   rms_norm(f"{n}.input_layernorm", blk.input_layernorm),
                                   rms_norm(f"{n}.post_attention_layernorm", blk.post_attention_layernorm)))
    return TransformerStack(tuple(blocks), "pre_ln", act, final_norm=rms_norm("norm", base.norm))


EXTRA_DECODERS = {"gpt_bigcode": gpt_bigcode, "gpt_neo": gpt_neo, "opt": opt, "persimmon": persimmon,
                  "glm4": glm4, "smollm3": smollm3}
