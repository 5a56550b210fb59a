"""Fault injection for the second batch of families (Granite, GPT-BigCode, GLM-4, SmolLM3, BLOOM, MPT, PhiMoE, the
new activations and RoPE types): a module edited so that it no longer computes what its config says, or a patched
library function, gives the one named error; never a silent wrong form."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, T = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import InvalidValueError, UnsupportedError  # noqa: E402
from symuat.models import from_module  # noqa: E402

_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=12, vocab_size=30,
          max_position_embeddings=32, num_key_value_heads=1, pad_token_id=0)


def _granite(**k):
    return randomize(T.GraniteModel(T.GraniteConfig(**_S, residual_multiplier=0.5, embedding_multiplier=2.0, **k)))


def _bloom(**k):
    return randomize(T.BloomModel(T.BloomConfig(hidden_size=16, n_head=2, n_layer=2, vocab_size=30, **k)))


def _mpt(**k):
    return randomize(T.MptModel(T.MptConfig(d_model=16, n_heads=2, n_layers=2, expansion_ratio=2, max_seq_len=32,
                                            vocab_size=30, **k)))


def _phimoe(**k):
    return randomize(T.PhimoeModel(T.PhimoeConfig(**_S, num_local_experts=4, num_experts_per_tok=2,
                                                  experts_implementation="eager", **k)))


def _set(path, value):
    def edit(m):
        parent, _, name = path.rpartition(".")
        setattr(m.get_submodule(parent), name, value() if callable(value) else value)
    return edit


def _add_param(path, name, shape):
    def edit(m):
        m.get_submodule(path).register_parameter(name, torch.nn.Parameter(torch.zeros(shape, dtype=torch.float64)))
    return edit


def _patch_bloom_alibi(m):
    from transformers.models.bloom import modeling_bloom

    original = modeling_bloom.build_alibi_tensor
    m._restore = lambda: setattr(modeling_bloom, "build_alibi_tensor", original)
    modeling_bloom.build_alibi_tensor = lambda mask, H, dtype: 2 * original(mask, H, dtype)


FAULTS = {
    # a layer multiplier that is not the config's: the stack folds one r into every layer
    "granite_layer_multiplier": (_granite, _set("layers.1.residual_multiplier", 0.25), UnsupportedError,
                                 r"layers\.1\.residual_multiplier is 0\.25, the config's 0\.5"),
    "granite_embedding_multiplier": (_granite, _set("embedding_multiplier", 3.0), UnsupportedError,
                                     r"embedding_multiplier is 3\.0 on the model, 2\.0 in its config"),
    "bigcode_module_multi_query": (lambda: randomize(T.GPTBigCodeModel(T.GPTBigCodeConfig(
        n_embd=16, n_head=2, n_layer=2, n_positions=32, vocab_size=30))), _set("h.0.attn.multi_query", False),
        UnsupportedError, r"h\.0\.attn\.multi_query=False, the config's True"),
    "bloom_gelu_swapped": (_bloom, _set("h.1.mlp.gelu_impl", lambda: torch.nn.GELU(approximate="tanh").eval()),
                           UnsupportedError, r"h\.1\.mlp\.gelu_impl is GELU \(gelu_tanh\) but the config says "
                                             "gelu_bloom"),
    "bloom_beta": (_bloom, _set("h.0.self_attention.beta", 2.0), UnsupportedError,
                   r"h\.0\.self_attention\.beta is 2\.0: the ALiBi term is scaled"),
    # BLOOM's own table builder doubled: the whole-model probe finds the layer
    "bloom_alibi_patched": (_bloom, _patch_bloom_alibi, UnsupportedError,
                            r"layer 1 of the module does not compute what its weights and config say"),
    "mpt_module_clip": (_mpt, _set("blocks.1.attn.clip_qkv", 0.5), UnsupportedError,
                        r"blocks\.1\.attn\.clip_qkv=0\.5 \(mpt\)"),
    "mpt_gelu_swapped": (_mpt, _set("blocks.0.ffn.act", lambda: torch.nn.GELU(approximate="tanh").eval()),
                         UnsupportedError, r"blocks\.0\.ffn\.act is GELU \(gelu_tanh\) but the config says gelu"),
    "phimoe_router_bias": (_phimoe, _set("layers.0.mlp.router.bias",
                                         lambda: torch.nn.Parameter(torch.zeros(4, dtype=torch.float64))),
                           UnsupportedError, r"layers\.0\.mlp\.router has a bias"),
    "phimoe_left_over_parameter": (_phimoe, _add_param("layers.1.mlp", "scale", (4,)), InvalidValueError,
                                   r"layers\.1\.mlp holds parameters symuat did not read \(scale"),
    "smollm3_use_rope_not_a_flag": (lambda: randomize(T.SmolLM3Model(T.SmolLM3Config(**_S))),
                                    _set("layers.0.self_attn.use_rope", "yes"), UnsupportedError,
                                    r"layers\.0\.self_attn\.use_rope='yes' does not match"),
}


@pytest.mark.parametrize("case", sorted(FAULTS))
def test_family_fault(case):
    make, edit, error, match = FAULTS[case]
    model = make()
    edit(model)
    try:
        with pytest.raises(error, match=match):
            from_module(model)
    finally:
        getattr(model, "_restore", lambda: None)()


def test_longrope_without_its_switch_length_is_refused():
    rope = {"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": [1.0] * 4, "long_factor": [2.0] * 4,
            "original_max_position_embeddings": 16}
    model = randomize(T.Phi3Model(T.Phi3Config(**_S, original_max_position_embeddings=16, rope_parameters=rope)))
    del model.config.rope_parameters["original_max_position_embeddings"]
    with pytest.raises(UnsupportedError, match="rope type 'longrope' without a valid original_max_position_embeddings"):
        from_module(model)


def test_dynamic_rope_module_without_its_length_is_refused():
    rope = {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}
    model = randomize(T.LlamaModel(T.LlamaConfig(**_S, rope_parameters=rope)))
    del model.rotary_emb.original_max_seq_len
    with pytest.raises(UnsupportedError, match="rope type 'dynamic' without original_max_seq_len"):
        from_module(model)


def test_quick_gelu_module_patched(monkeypatch):
    """The class is right, its forward is not x·sigmoid(1.702x): the probe grid finds it."""
    monkeypatch.setattr(T.activations.QuickGELUActivation, "forward", lambda self, x: x * torch.sigmoid(1.7 * x))
    model = randomize(T.GPT2Model(T.GPT2Config(n_embd=16, n_head=2, n_layer=1, n_positions=32,
                                               activation_function="quick_gelu")))
    with pytest.raises(UnsupportedError, match=r"h\.0\.mlp\.act \(QuickGELUActivation\) does not compute quick_gelu"):
        from_module(model)


def test_sparsemixer_threshold_is_read_not_assumed():
    """Two models that differ only in router_jitter_noise import to different gates (the threshold is live)."""
    from symuat.numeric.moe import routing_gates

    U = np.random.default_rng(0).standard_normal((12, 16))
    gates = []
    for eps in (0.01, 0.8):
        torch.manual_seed(0)
        stack = from_module(_phimoe(router_jitter_noise=eps))
        assert stack.blocks[0].ffn.jitter_eps == eps
        gates.append(routing_gates(stack.blocks[0].ffn, U)[0])
    assert np.max(np.abs(gates[0] - gates[1])) > 1e-3
