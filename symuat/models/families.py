r"""What ``symuat.models`` reads: each transformers family, the transformers releases it was tested with, and the
config options it refuses by name (``symuat families``; docs/models.md).

The table is data, checked against the importer's registry by the tests (a family without an entry, or an entry
without an importer, fails them); it imports neither torch nor transformers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple

__all__ = ["FamilyInfo", "FAMILY_INFO", "TRANSFORMERS_TESTED", "TRANSFORMERS_SOURCE_CHECKED", "COMMON_REFUSALS",
           "families_text", "families_json"]

#: The transformers release every family's tests run against (tiny random checkpoints, float64, 1e-12).
TRANSFORMERS_TESTED = "5.23.0"
#: A newer release whose modelling source was compared for the modules and attributes a family reads; families whose
#: source changed there beyond the cache-argument rename say so in ``FamilyInfo.note``.
TRANSFORMERS_SOURCE_CHECKED = "5.24.0"

#: Refused for every family (symuat.models.hf_common.check_config, symuat.models.guards).
COMMON_REFUSALS = (
    "add_cross_attention", "is_encoder_decoder (except t5, mt5, umt5)",
    "position_embedding_type other than absolute/rope",
    "alibi (except falcon)", "attn_logit_softcapping (except gemma2)", "use_bidirectional_attention",
    "attention implementations other than eager/sdpa", "experts implementations other than eager",
    "layer_types other than full_attention/sliding_attention", "a module in training mode, hooks, a replaced forward",
)


@dataclass(frozen=True)
class FamilyInfo:
    r"""One family: its ``model_type``, what its blocks are in symuat's terms, the options refused by name, and a
    note (e.g. a source change in :data:`TRANSFORMERS_SOURCE_CHECKED`)."""

    family: str
    blocks: str
    refused: Tuple[str, ...] = ()
    note: str = ""


def _info(*rows) -> Dict[str, FamilyInfo]:
    return {r[0]: FamilyInfo(*r) for r in rows}


_LLAMA = "pre_ln, RMSNorm, gated FFN, rotary, GQA"

#: ``model_type`` → :class:`FamilyInfo`.
FAMILY_INFO: Dict[str, FamilyInfo] = _info(
    ("gpt2", "pre_ln, LayerNorm, learned positions, fused c_attn"),
    ("gpt_neox", "pre_ln or parallel, partial rotary, fused per-head QKV"),
    ("llama", _LLAMA + "; every static RoPE type, dynamic/longrope below their switch length"),
    ("mistral", _LLAMA + ", sliding window on every layer"),
    ("qwen2", _LLAMA + ", Q/K/V biases, sliding windows per layer_types"),
    ("qwen3", _LLAMA + ", per-head q/k norms"),
    ("gemma", _LLAMA + ", gain 1+w, GeGLU, embedding scale"),
    ("phi3", _LLAMA + ", fused qkv and gate_up, longrope"),
    ("olmo2", "sublayer_post_ln, RMSNorm, q/k norms over all heads"),
    ("gptj", "parallel, interleaved partial rotary", (),
     "5.24 moves embed_positions into a GPTJRotaryEmbedding module: the 5.23 read does not apply there"),
    ("phi", "parallel, partial rotary, biases", ("qk_layernorm",)),
    ("cohere", "parallel, LayerNorm without bias, interleaved rotary", ("use_qk_norm",)),
    ("falcon", "parallel (one or two norms) or pre_ln, rotary or ALiBi, three fused QKV layouts",
     ("parallel_attn=False with new_decoder_architecture",)),
    ("olmo", "pre_ln, parameter-free LayerNorm", ("clip_qkv",)),
    ("stablelm", "pre_ln or parallel, partial rotary, optional QKV biases", ("qk_layernorm",)),
    ("starcoder2", "pre_ln, LayerNorm with bias, plain MLP, sliding window"),
    ("gemma2", "sandwich, attention soft-capping, local/global layers", ("use_bidirectional_attention",)),
    ("gemma3_text", "sandwich, q/k norms, per-layer-type rotary tables", ("use_bidirectional_attention",),
     "5.24 changes the Gemma-3 multimodal outputs; the text model's modules are unchanged"),
    ("mixtral", "pre_ln, mixture of experts (softmax top-k, renormalised)", ("clip_qkv", "a router bias")),
    ("qwen2_moe", "pre_ln, mixture of experts with a sigmoid-gated shared expert", ("clip_qkv", "a router bias")),
    ("qwen3_moe", "pre_ln, mixture of experts, per-head q/k norms", ("clip_qkv", "a router bias")),
    ("olmoe", "pre_ln, mixture of experts, q/k norms over all heads", ("clip_qkv", "a router bias")),
    ("bert", "post_ln encoder, learned positions, token types", ("is_decoder",)),
    ("roberta", "post_ln encoder, positions after the padding row", ("is_decoder", "explicit position_ids")),
    ("distilbert", "post_ln encoder, learned positions"),
    ("granite", _LLAMA + "; embedding, attention, residual (folded into W_O, W_down) and logits multipliers",
     ("attention_multiplier <= 0",)),
    ("granitemoe", "granite's multipliers with a mixture of experts (softmax over the top-k logits)",
     ("attention_multiplier <= 0",)),
    ("gpt_neo", "pre_ln, learned positions, global and local (sliding-window) layers, unscaled scores"),
    ("opt", "pre_ln or post_ln (350m), learned positions over the real tokens, ReLU", ("word_embed_proj_dim != "
                                                                                     "hidden_size",)),
    ("persimmon", "pre_ln, LayerNorm, per-head q/k LayerNorms, partial rotary, ReLU² MLP"),
    ("gpt_bigcode", "pre_ln, learned positions, multi-query attention (one key/value head)", ("add_cross_attention",)),
    ("glm4", "sandwich, interleaved partial rotary, fused gate_up"),
    ("smollm3", _LLAMA + ", NoPE layers (no rotary where no_rope_layers says 0), sliding windows per layer_types"),
    ("bloom", "pre_ln, ALiBi over the real tokens, embedding LayerNorm, BLOOM's GELU",
     ("apply_residual_connection_post_layernorm", "slow_but_exact with pretraining_tp > 1")),
    ("mpt", "pre_ln, ALiBi over raw positions, LayerNorm without bias",
     ("attn_config.clip_qkv", "pads between real tokens")),
    ("phimoe", "pre_ln, LayerNorm, mixture of experts with SparseMixer routing (2 experts), longrope",
     ("num_experts_per_tok != 2", "rope types other than default/longrope")),
    ("ministral", _LLAMA + ", sliding windows per layer_types"),
    ("seed_oss", _LLAMA + ", Q/K/V and output biases"),
    ("helium", _LLAMA + ", rotary on interleaved pairs"),
    ("ernie4_5", _LLAMA + ", rotary on interleaved pairs, optional biases"),
    ("glm", _LLAMA + ", interleaved partial rotary, fused gate_up"),
    ("arcee", "pre_ln, RMSNorm, plain ReLU² MLP, rotary, GQA"),
    ("olmo3", "sublayer_post_ln, q/k norms over all heads, sliding windows, rotary tables per layer type"),
    ("exaone4", "sublayer_post_ln, per-head q/k norms, sliding windows; NoPE full-attention layers with a window"),
    ("nemotron", "pre_ln, LayerNorm1P (gain 1+w), plain ReLU² MLP, partial rotary"),
    ("granitemoeshared", "granitemoe with an ungated shared expert", ("attention_multiplier <= 0",)),
    ("gpt_oss", "pre_ln, attention sinks, sliding/full layers, mixture of experts (router bias, clamped SwiGLU "
     "experts with biases)", ("swiglu_alpha/swiglu_limit other than 1.702/7.0",)),
    ("deepseek_v2", "pre_ln, multi-head latent attention (complex rotary), dense first layers, experts with a shared "
     "expert, greedy or group-limited softmax routing", ("num_key_value_heads != num_attention_heads",
                                                         "topk_method other than greedy/group_limited_greedy")),
    ("deepseek_v3", "pre_ln, multi-head latent attention (query compression, interleaved rotary, YaRN mscale), dense "
     "first layers, experts with a shared expert, sigmoid routing with e_score_correction_bias in the best groups",
     ("num_key_value_heads != num_attention_heads",)),
    ("modernbert", "pre_ln encoder, identity first attention norm, symmetric local windows alternating with global "
     "layers, rotary tables per layer type, gated MLP, embedding LayerNorm; masked-LM head",
     ("layer_types other than full_attention/sliding_attention",)),
    ("t5", "encoder (T5EncoderModel): pre_ln, T5's RMSNorm, unscaled scores with the bucketed relative position bias "
     "of layer 0, ReLU or gated feed-forward; encoder–decoder (T5ForConditionalGeneration, T5Model): the decoder's "
     "form over the encoder's output, causal self-attention with its own unidirectional bias, cross-attention "
     "(ext:cross-attention.mv-form), lm_head times d_model**-0.5 when config.scale_decoder_outputs",
     ("pads between real tokens (the bias counts them)",)),
    ("llama4_text", "pre_ln, RMSNorm; rotary layers: interleaved complex rotary, weightless per-head q/k norm, "
     "chunked attention; NoPE layers (no_rope_layers) with temperature tuning; input-scaled experts (sigmoid of the "
     "top-k logits) with a shared expert, interleaved with dense SwiGLU layers; positions below the chunk size and "
     "floor_scale - 1, where the chunked mask is causal and the temperature 1",
     ("use_qk_norm with a rotary attention_scaling other than 1", "a router bias",
      "no rotary layer while chunking or temperature tuning would act")),
    ("mt5", "as t5, gated-GELU feed-forward; MT5ForConditionalGeneration's lm_head unscaled (its forward scales "
     "nothing)", ("as t5",)),
    ("umt5", "as mt5, a relative position bias per layer; UMT5ForConditionalGeneration's lm_head times "
     "d_model**-0.5 (config.scale_decoder_outputs in 5.24, tie_word_embeddings in 5.23)", ("as t5",)),
)


def families_json() -> dict:
    r"""The table as a JSON-ready object (``symuat families --format json``)."""
    return {"transformers_tested": TRANSFORMERS_TESTED, "transformers_source_checked": TRANSFORMERS_SOURCE_CHECKED,
            "refused_for_every_family": list(COMMON_REFUSALS),
            "families": [{"family": i.family, "blocks": i.blocks, "refused": list(i.refused), "note": i.note}
                         for i in sorted(FAMILY_INFO.values(), key=lambda i: i.family)]}


def families_text() -> str:
    r"""The table as text: one family a line, its refused options indented below (``symuat families``).

    >>> families_text().splitlines()[0]
    'symuat.models: 54 transformers families, tested with transformers 5.23.0 (source of 5.24.0 checked)'
    """
    lines = [f"symuat.models: {len(FAMILY_INFO)} transformers families, tested with transformers "
             f"{TRANSFORMERS_TESTED} (source of {TRANSFORMERS_SOURCE_CHECKED} checked)"]
    width = max(len(f) for f in FAMILY_INFO)
    for info in sorted(FAMILY_INFO.values(), key=lambda i: i.family):
        lines.append(f"  {info.family:<{width}}  {info.blocks}")
        if info.refused:
            lines.append(f"  {'':<{width}}    refused: {', '.join(info.refused)}")
        if info.note:
            lines.append(f"  {'':<{width}}    note: {info.note}")
    lines.append("refused for every family: " + "; ".join(COMMON_REFUSALS))
    lines.append("also: torch.nn.TransformerEncoder / TransformerEncoderLayer (symuat.models.from_module)")
    return "\n".join(lines)
