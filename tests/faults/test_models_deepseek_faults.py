"""Fault injection for DeepSeek-V2/V3 (multi-head latent attention, group-limited experts): a module edited so that
it no longer computes what symuat reads, a parameter it does not read, or latent-attention and routing weights it
cannot represent give the one named error; never a silent wrong form."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, T = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import InvalidValueError, ShapeError, UnsupportedError  # noqa: E402
from symuat.models import from_module, load  # noqa: E402
from symuat.numeric import AttentionWeights, GatedFFNWeights, Rotary  # noqa: E402
from symuat.numeric.latent import LatentQK  # noqa: E402
from symuat.numeric.moe import MoEFFNWeights  # noqa: E402
from symuat.numeric.norms import RMSNormWeights  # noqa: E402

_S = dict(hidden_size=16, num_attention_heads=2, num_key_value_heads=2, num_hidden_layers=2, intermediate_size=24,
          vocab_size=30, max_position_embeddings=32, moe_intermediate_size=8, n_shared_experts=1, n_routed_experts=4,
          num_experts_per_tok=2, kv_lora_rank=6, q_lora_rank=6, qk_nope_head_dim=4, qk_rope_head_dim=4, v_head_dim=3,
          first_k_dense_replace=1, n_group=2, topk_group=1, experts_implementation="eager",
          rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def _v3():
    return randomize(T.DeepseekV3Model(T.DeepseekV3Config(**_S)), seed=2)


def _edit_param(path, name, shape):
    def edit(m):
        m.get_submodule(path).register_parameter(name, torch.nn.Parameter(torch.zeros(shape, dtype=torch.float64)))
    return edit


def _swap_norm(m):
    m.layers[1].self_attn.kv_a_layernorm = torch.nn.LayerNorm(6).double().eval()


def _instance_forward(m):  # the experts' forward replaced on the instance (e.g. by an offloading hook)
    experts = m.layers[1].mlp.experts
    experts.forward = lambda *a, **k: 2 * type(experts).forward(experts, *a, **k)


FAULTS = {
    "kv_b_proj_bias": (_edit_param("layers.0.self_attn.kv_b_proj", "bias", (2 * 7,)), UnsupportedError,
                       r"layers\.0\.self_attn\.kv_b_proj is not a bias-free 6×14 map of the latent"),
    "latent_norm_is_a_layernorm": (_swap_norm, UnsupportedError,
                                   r"layers\.1\.self_attn\.kv_a_layernorm \(LayerNorm\) is not an RMSNorm"),
    "moe_left_over_parameter": (_edit_param("layers.1.mlp", "scale", (4,)), InvalidValueError,
                                r"layers\.1\.mlp holds parameters symuat did not read \(scale"),
    "instance_forward_on_the_experts": (_instance_forward, UnsupportedError,
                                        r"forward replaced on the instance of layers\.1\.mlp\.experts"),
}


@pytest.mark.parametrize("case", sorted(FAULTS))
def test_deepseek_fault(case):
    edit, error, match = FAULTS[case]
    model = _v3()
    edit(model)
    with pytest.raises(error, match=match):
        from_module(model)


def _latent(rng, **kw):
    base = dict(W_dkv=rng.standard_normal((4, 3)), kv_norm=RMSNormWeights(np.ones(3)), W_uk=rng.standard_normal((3, 4)),
                W_kr=rng.standard_normal((4, 2)), rotary=Rotary(2), n_heads=2, W_q=rng.standard_normal((4, 8)))
    return LatentQK(**{**base, **kw})


@pytest.mark.parametrize("kw, error, match", [
    (dict(kv_norm=RMSNormWeights(np.ones(2))), InvalidValueError, r"kv_norm must be an RMSNormWeights over the 3"),
    (dict(W_uk=np.ones((3, 5))), ShapeError, r"W_uk has 5 columns, not a multiple of n_heads=2"),
    (dict(rotary=Rotary(4)), InvalidValueError, r"rotary must be a Rotary over the 2 rotary key coordinates"),
    (dict(W_dq=np.ones((4, 2))), InvalidValueError, r"give either W_q .* or W_dq, q_norm and W_uq"),
])
def test_latent_weights_it_cannot_represent_are_refused(kw, error, match):
    with pytest.raises(error, match=match):
        _latent(np.random.default_rng(0), **kw)


def test_latent_attention_with_its_own_queries_is_refused():
    rng = np.random.default_rng(1)
    lat = _latent(rng)
    W_V, W_O = rng.standard_normal((4, 6)), rng.standard_normal((6, 4))
    with pytest.raises(InvalidValueError, match="latent attention computes its own queries and keys: W_Q"):
        AttentionWeights(np.ones((4, 6)), None, W_V, W_O, n_heads=2, scale=0.5, latent=lat)
    with pytest.raises(InvalidValueError, match="needs its score multiplier as a number"):
        AttentionWeights(None, None, W_V, W_O, n_heads=2, latent=lat)
    with pytest.raises(ShapeError, match="latent attention has 2 heads"):
        AttentionWeights(None, None, W_V, W_O, n_heads=3, scale=0.5, latent=lat)


@pytest.mark.parametrize("groups", [(3, 1, "top2"), (2, 3, "max"), (2, 1, "mean"), (4, 1, "top2")])
def test_expert_groups_it_cannot_represent_are_refused(groups):
    rng = np.random.default_rng(0)
    e = GatedFFNWeights(rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.standard_normal((3, 4)))
    with pytest.raises(InvalidValueError, match=r"groups=\(n_group, topk_group, rule\)"):
        MoEFFNWeights((e,) * 4, rng.standard_normal((4, 4)), 2, groups=groups)


@pytest.mark.parametrize("kw, error, match", [
    (dict(input_ids=list(np.arange(33) % 29)), ShapeError, r"input_ids has 33 tokens; the model covers at most 32 "
                                                           r"positions"),
    (dict(input_ids=[1, 2, 3], position_ids=[40, 41, 42]), InvalidValueError,
     r"position_ids must lie in \[0, 32\), got values in \[40, 42\]"),
])
def test_positions_past_the_latent_rotary_table_are_refused(kw, error, match):
    """Latent attention's decoupled rotary part has a table of max_position_embeddings rows, like any rotary model:
    a longer row or a later position is refused by the model with its limit (it was accepted up to an internal
    table error, or computed past the config)."""
    model = load(randomize(T.DeepseekV3ForCausalLM(T.DeepseekV3Config(**_S)), seed=2))
    assert model.max_tokens == 32
    with pytest.raises(error, match=match):
        model.duat_form(**kw)
