"""PhiMoE: SparseMixer routing (two experts per token, each its own masked softmax) read as
``MoEFFNWeights(routing="sparsemixer")``; every token and layer within 1e-12 of the library under
``library_float64`` (a wide and the default threshold), right padding, left- and right-padded id batches, longrope;
the routing differs from a renormalised top-2 softmax; a config that asks for another number of experts is refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from models_support import assert_padded_batch, assert_reproduces, randomize, require_torch

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import InvalidValueError, UnsupportedError  # noqa: E402
from symuat.models import from_module, load  # noqa: E402
from symuat.numeric import GatedFFNWeights, stack_output  # noqa: E402
from symuat.numeric.moe import MoEFFNWeights, routing_gates  # noqa: E402

V, N = 30, 9
_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=12, vocab_size=V,
          max_position_embeddings=32, num_key_value_heads=1, num_local_experts=4, num_experts_per_tok=2)
_LONGROPE = {"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": [1.0, 1.5, 2.0, 3.0],
             "long_factor": [2.0, 4.0, 8.0, 16.0], "original_max_position_embeddings": 16, "short_mscale": 1.2,
             "long_mscale": 1.5}

FAMILIES = {
    "phimoe": lambda T, **k: T.PhimoeModel(T.PhimoeConfig(**{**_S, **k})),
    "phimoe-wide-threshold-longrope": lambda T, **k: T.PhimoeModel(T.PhimoeConfig(
        **{**_S, **k}, router_jitter_noise=0.6, attention_bias=True, rope_parameters=_LONGROPE)),
}


@pytest.fixture(scope="module", params=[pytest.param(f, marks=pytest.mark.slow) if f == "phimoe" else f
                                        for f in sorted(FAMILIES)])
def saved(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param.replace("-", "_"))
    randomize(FAMILIES[request.param](transformers), seed=len(request.param)).save_pretrained(path)
    model = load(path)
    return request.param, model.library, model.stack, model


def _X(seed, M=16):
    return np.random.default_rng(seed).standard_normal((N, M))


def test_every_token_every_layer(saved):
    family, library, stack, _ = saved
    assert {b.ffn.routing for b in stack.blocks} == {"sparsemixer"}
    assert_reproduces(library, stack, _X(1))
    assert_reproduces(library, stack, _X(2), mask=[1] * (N - 1) + [0])


@pytest.mark.parametrize("saved", ["phimoe-wide-threshold-longrope"], indirect=True)
@pytest.mark.parametrize("side", ["left", "right"])
def test_token_ids_padded_batch(saved, side):
    family, _, _, model = saved
    assert_padded_batch(model, side, N, V)


@pytest.mark.parametrize("saved", ["phimoe-wide-threshold-longrope"], indirect=True)
def test_sparsemixer_is_not_a_renormalised_top2(saved):
    """With a wide threshold the two gates are their own softmaxes: neither summing to 1 nor a top-2 softmax."""
    family, _, stack, _ = saved
    X = _X(3)
    moe = stack.blocks[0].ffn
    U = np.random.default_rng(4).standard_normal((N, 16))
    G, _ = routing_gates(moe, U)
    assert np.all((G > 0).sum(axis=1) == 2) and not np.allclose(G.sum(axis=1), 1.0)
    top2 = dataclasses.replace(stack, blocks=tuple(dataclasses.replace(
        b, ffn=dataclasses.replace(b.ffn, routing="softmax", normalize=True)) for b in stack.blocks))
    assert np.max(np.abs(stack_output(stack, X) - stack_output(top2, X))) > 1e-3


def test_sparsemixer_gates_by_hand():
    """Logits (1, 0.9, -3, 0.5), threshold 2*0.1: expert 0 shares its softmax with expert 1 (0.1/1 <= 0.2), not
    with 3 (0.5/1 > 0.2); the second pick (1) shares with nobody: its softmax over {1} is 1."""
    rng = np.random.default_rng(0)
    e = GatedFFNWeights(rng.standard_normal((2, 3)), rng.standard_normal((2, 3)), rng.standard_normal((3, 2)))
    router = np.array([[1.0, 0.9, -3.0, 0.5], [0.0, 0.0, 0.0, 0.0]])
    moe = MoEFFNWeights((e,) * 4, router, 2, normalize=False, routing="sparsemixer", jitter_eps=0.1)
    G, _ = routing_gates(moe, np.array([[1.0, 0.0]]))
    assert G[0].tolist() == pytest.approx([1 / (1 + np.exp(-0.1)), 1.0, 0.0, 0.0], rel=1e-15)
    with pytest.raises(InvalidValueError, match="needs top_k=2, normalize=False"):
        MoEFFNWeights((e,) * 4, router, 2, normalize=True, routing="sparsemixer")
    with pytest.raises(InvalidValueError, match="routing must be one of"):
        MoEFFNWeights((e,) * 4, router, 2, routing="sinkhorn")


@pytest.mark.parametrize("saved", ["phimoe-wide-threshold-longrope"], indirect=True)
def test_longrope_table_stops_where_the_long_factors_start(saved):
    family, _, stack, model = saved
    assert stack.blocks[0].attention.rotary.cos.shape[0] == 16 == model.max_tokens


def test_a_rope_type_with_phimoe_mscale_switch_is_refused():
    rope = {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0, "short_mscale": 1.0, "long_mscale": 1.2,
            "original_max_position_embeddings": 16}
    model = randomize(FAMILIES["phimoe"](transformers, rope_parameters=rope, experts_implementation="eager"))
    with pytest.raises(UnsupportedError, match="rope type 'linear' \\(phimoe\\)"):
        from_module(model)


def test_another_number_of_experts_is_refused_by_name():
    model = randomize(FAMILIES["phimoe"](transformers, num_experts_per_tok=1, experts_implementation="eager"))
    with pytest.raises(UnsupportedError, match=r"num_experts_per_tok=1 \(phimoe\).*always routes every token to 2"):
        from_module(model)
