"""DeepSeek-V2 and V3: multi-head latent attention (query compression or not, a latent norm whose diagonal joins
each head, a shared rotary key, value heads narrower than the query heads, V3's interleaved rotary and attention
biases, V2's complex rotary) and mixtures of experts with a shared expert, group-limited routing (V3: sigmoid scores
chosen with ``e_score_correction_bias``, renormalised, scaled; V2: softmax, ``group_limited_greedy``), dense first
layers.  Every token and layer within 1e-12 of the library under ``library_float64``, right padding, left- and
right-padded id batches; the heads are the library's attention probabilities times the latent norm's diagonal; the
routing is the library router's; logits, attributions, views and patching (torch hooks) match the library; options
symuat does not read are refused by name."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import (
    assert_logit_attributions,
    assert_padded_batch,
    assert_reproduces,
    assert_views_rebuild,
    randomize,
    require_torch,
)

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import UnsupportedError  # noqa: E402
from symuat.models import from_module, library_float64, load  # noqa: E402
from symuat.numeric.moe import routing_gates  # noqa: E402

V, N = 30, 9
_S = dict(hidden_size=16, num_attention_heads=2, num_key_value_heads=2, num_hidden_layers=2, intermediate_size=24,
          vocab_size=V, max_position_embeddings=32, moe_intermediate_size=8, n_shared_experts=1, n_routed_experts=4,
          num_experts_per_tok=2, kv_lora_rank=6, qk_nope_head_dim=4, qk_rope_head_dim=4, v_head_dim=3,
          first_k_dense_replace=1, n_group=2, topk_group=1, pad_token_id=0)
_YARN = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 16,
         "mscale": 1.0, "mscale_all_dim": 0.7, "beta_fast": 32.0, "beta_slow": 1.0}

CONFIGS = {
    # V3: query compression, interleaved rotary, attention biases (the latent's bias makes the value bias dynamic),
    # YaRN with its mscale in the score scale, a routing bias that moves the choice
    "deepseek_v3": ("DeepseekV3ForCausalLM", "DeepseekV3Config",
                    dict(_S, q_lora_rank=6, rope_interleave=True, attention_bias=True, routed_scaling_factor=2.5,
                         rope_parameters=_YARN)),
    # V2: no query compression, complex rotary, group-limited greedy routing, scaled
    "deepseek_v2": ("DeepseekV2ForCausalLM", "DeepseekV2Config",
                    dict(_S, q_lora_rank=None, topk_method="group_limited_greedy", routed_scaling_factor=2.0,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
}


def _library(family, **k):
    head, config, options = CONFIGS[family]
    model = randomize(getattr(transformers, head)(getattr(transformers, config)(**{**options, **k})), seed=5)
    gate = model.model.layers[1].mlp.gate
    if hasattr(gate, "e_score_correction_bias"):  # a buffer, not drawn by randomize: large enough to move choices
        gate.e_score_correction_bias.copy_(torch.tensor([0.0, 0.4, -0.3, 0.2], dtype=torch.float64))
    return model


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def model(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param)
    _library(request.param).save_pretrained(path)
    return load(path)


def _X(seed):
    return np.random.default_rng(seed).standard_normal((N, 16))


def test_every_token_every_layer(model):
    stack = model.stack
    assert all(b.attention.latent is not None for b in stack.blocks)
    assert not hasattr(stack.blocks[0].ffn, "router") and stack.blocks[1].ffn.shared is not None
    assert_reproduces(model.library.model, stack, _X(1))
    assert_reproduces(model.library.model, stack, _X(2), mask=[1] * (N - 2) + [0, 0])


@pytest.mark.parametrize("side", ["left", "right"])
def test_token_ids_padded_batch(model, side):
    assert_padded_batch(model, side, N, V)


def test_heads_are_the_librarys_probabilities_times_the_latent_norm(model):
    """H̃_h = H_h D(X): each column of the form's head is the library's column times one positive factor (the
    latent's inverse RMS at that key), the same for every head; rows no longer sum to one."""
    ids = np.arange(1, N + 1)
    form = model.duat_form(input_ids=ids)
    config = model.library.config
    impl, config._attn_implementation = config._attn_implementation, "eager"  # probabilities come from eager only
    try:
        with torch.no_grad(), library_float64():
            want = model.library.model(input_ids=torch.as_tensor(ids)[None], output_attentions=True).attentions
    finally:
        config._attn_implementation = impl
    for k in range(2):
        factors = []
        for h in range(2):
            H, P = form.attention(k, h), want[k][0, h].numpy()
            assert np.array_equal(H == 0, P == 0)
            ratio = np.where(P > 0, H / np.where(P > 0, P, 1.0), np.nan)
            d = np.nanmean(ratio, axis=0)
            assert np.nanmax(np.abs(ratio / d - 1.0)) <= 1e-12 and np.all(d > 0)
            factors.append(d)
            assert np.max(np.abs(H.sum(axis=1) - 1.0)) > 1e-3
        assert np.max(np.abs(factors[0] / factors[1] - 1.0)) <= 1e-12


def test_routing_is_the_library_routers(model):
    U = 3.0 * _X(4)
    gate = model.library.model.layers[1].mlp.gate
    with torch.no_grad(), library_float64():
        _, weights, index = gate(torch.from_numpy(U))
    G, s = routing_gates(model.stack.blocks[1].ffn, U)
    want = np.zeros_like(G)
    np.put_along_axis(want, index.numpy(), weights.numpy(), axis=1)
    assert np.max(np.abs(G - want)) <= 1e-14 and np.all(s == 1.0)
    chosen_groups = {tuple(sorted(set(np.flatnonzero(row) // 2))) for row in G}
    assert all(len(g) == 1 for g in chosen_groups) and len(chosen_groups) == 2  # one group per token, both used


def test_logits_and_their_attributions(model):
    assert_logit_attributions(model, np.arange(2, 2 + N) % V, by=("head", "source", "neuron", "expert"),
                              reverse_by="source")


def test_views_rebuild_the_library_state(model):
    ids = np.arange(N) % V
    form = model.duat_form(input_ids=ids)
    with torch.no_grad(), library_float64():
        want = model.library.model(input_ids=torch.from_numpy(ids)[None]).last_hidden_state[0].numpy()
    assert_views_rebuild(model, form, want)


@pytest.mark.slow  # the library's hooked runs per unit (about 1.5 s): CI's second step
def test_patching_matches_library_hooks(model):
    from patching_support import assert_patching_matches_library

    assert_patching_matches_library(model)


def test_grouped_key_value_heads_are_refused_by_name():
    library = _library("deepseek_v3", num_key_value_heads=1, experts_implementation="eager")
    with pytest.raises(UnsupportedError, match=r"num_key_value_heads=1 \(deepseek_v3\): latent attention has a key"):
        from_module(library)


def test_another_topk_method_is_refused_by_name():
    library = _library("deepseek_v2", experts_implementation="eager")
    library.model.layers[1].mlp.gate.topk_method = "noaux_tc"
    with pytest.raises(UnsupportedError, match=r"topk_method='noaux_tc' \(deepseek_v2\)"):
        from_module(library)
