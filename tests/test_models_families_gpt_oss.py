"""GPT-OSS: attention sinks (an extra logit per head that takes probability mass), sliding layers alternating with
full ones, and a mixture of experts with a router bias, interleaved gate/up columns with biases, the clamped SwiGLU
and down biases weighed by the routing.  Every token and layer within 1e-12 of the library under
``library_float64`` (the clamps engaged included), right padding, left- and right-padded id batches; the form's
attention matrices are the library's (``output_attentions``: rows summing to less than 1), the routing is the
library router's; the logits, their attributions and activation patching (torch hooks) match the library; another
gate constant is refused by name."""

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
from symuat.numeric import hidden_states  # noqa: E402
from symuat.numeric.moe import clamp_factors, routing_gates  # noqa: E402
from symuat.numeric.stack import ffn_input  # noqa: E402

V, N = 30, 9
_S = dict(hidden_size=16, num_attention_heads=2, num_key_value_heads=1, head_dim=8, num_hidden_layers=2,
          intermediate_size=12, vocab_size=V, max_position_embeddings=32, num_local_experts=4, num_experts_per_tok=2,
          sliding_window=3, pad_token_id=0)


def _library(**k):
    model = randomize(transformers.GptOssForCausalLM(transformers.GptOssConfig(**{**_S, **k})), seed=7)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for layer in model.model.layers:  # sinks that take real mass (the random init's are near 0)
            layer.self_attn.sinks.copy_(1.5 * torch.randn(layer.self_attn.sinks.shape, generator=g,
                                                          dtype=torch.float64))
        model.model.layers[0].post_attention_layernorm.weight.mul_(8.0)  # the experts' clamps engage in layer 0
    return model


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpt_oss")
    _library().save_pretrained(path)
    return load(path)


def _X(seed):
    return np.random.default_rng(seed).standard_normal((N, 16))


def test_every_token_every_layer(model):
    stack = model.stack
    assert [b.attention.sliding_window for b in stack.blocks] == [3, None]
    assert all(b.attention.sinks is not None for b in stack.blocks)
    assert_reproduces(model.library.model, stack, _X(1))
    assert_reproduces(model.library.model, stack, _X(2), mask=[1] * (N - 2) + [0, 0])


def test_the_clamps_engage_and_stay_exact(model):
    """Layer 0's large norm gain drives up and gate pre-activations of routed experts past the limit 7."""
    stack, X = model.stack, _X(3)
    states = hidden_states(stack, X)
    engaged = gate_hit = 0
    for i, b in enumerate(stack.blocks):
        U = ffn_input(b, stack.kind, states[i], None)
        routed = np.repeat(routing_gates(b.ffn, U)[0] > 0, b.ffn.experts[0].hidden, axis=1)
        engaged += int(np.sum((clamp_factors(b.ffn, U) != 1.0) & routed))
        gate_hit += int(np.sum(((U @ b.ffn.W_gate + b.ffn.b_gate) > 7.0) & routed))
    assert engaged > 0 and gate_hit > 0
    assert_reproduces(model.library.model, stack, X)


@pytest.mark.parametrize("side", ["left", "right"])
def test_token_ids_padded_batch(model, side):
    assert_padded_batch(model, side, N, V)


def test_attention_matrices_are_the_librarys_and_leak_to_the_sinks(model):
    ids = np.arange(1, N + 1)
    form = model.duat_form(input_ids=ids)
    with torch.no_grad(), library_float64():
        want = model.library.model(input_ids=torch.as_tensor(ids)[None], output_attentions=True).attentions
    for k in range(2):
        for h in range(2):
            H = form.attention(k, h)
            assert np.max(np.abs(H - want[k][0, h].numpy())) <= 1e-14
            assert np.all(H.sum(axis=1) < 1 - 1e-6)


def test_routing_is_the_library_routers(model):
    U = _X(4)
    router = model.library.model.layers[0].mlp.router
    with torch.no_grad(), library_float64():
        _, scores, index = router(torch.from_numpy(U))
    G, _ = routing_gates(model.stack.blocks[0].ffn, U)
    want = np.zeros_like(G)
    np.put_along_axis(want, index.numpy(), scores.numpy(), axis=1)
    assert np.max(np.abs(G - want)) <= 1e-15


def test_logits_and_their_attributions(model):
    assert_logit_attributions(model, np.arange(2, 2 + N) % V, by=("head", "source", "neuron", "expert"),
                              reverse_by="head")


@pytest.mark.slow  # the library's hooked runs per unit (about 1.5 s): CI's second step
def test_patching_matches_library_hooks(model):
    from patching_support import assert_patching_matches_library

    assert_patching_matches_library(model)


@pytest.mark.parametrize("option", [dict(swiglu_alpha=1.5), dict(swiglu_limit=5.0)])
def test_another_gate_constant_is_refused_by_name(option):
    library = _library(**option, experts_implementation="eager")
    with pytest.raises(UnsupportedError, match=r"swiglu_alpha=.*swiglu_limit=.*\(gpt_oss\).*released gate"):
        from_module(library)


def test_views_rebuild_the_library_state(model):
    """Ã x'_0 + c̃ plus every layer's dynamic term (its routing diagonal, clamp factors and sink-weighted value
    biases held in U, V, β, P, γ) is the library's last hidden state."""
    ids = np.arange(N) % V
    form = model.duat_form(input_ids=ids)
    with torch.no_grad(), library_float64():
        want = model.library.model(input_ids=torch.from_numpy(ids)[None]).last_hidden_state[0].numpy()
    assert_views_rebuild(model, form, want)
