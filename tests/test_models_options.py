"""Config options read exactly or refused by name: the ``quick_gelu``, ``relu2`` and ``gelu_fast`` activations, the
``dynamic`` and ``longrope`` RoPE types (static angles up to the length the config names, longer inputs refused by the
position limit) and Gemma-1's ``use_bidirectional_attention`` (refused by name).  Tiny random float64 models, every
token and layer within 1e-12 of the library under ``library_float64``."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import assert_reproduces, randomize, require_torch

torch, T = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import ShapeError, UnsupportedError  # noqa: E402
from symuat.models import from_module, library_float64, load  # noqa: E402
from symuat.models.hf_common import static_rope_positions  # noqa: E402
from symuat.numeric import activation_function  # noqa: E402

_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=24, vocab_size=30)
N = 9


def _X(seed, M=16, n=N):
    return np.random.default_rng(seed).standard_normal((n, M))


def test_new_activations_are_their_formulas():
    x = np.array([-2.0, 0.0, 0.5, 3.0])
    assert activation_function("relu2")(x).tolist() == [0.0, 0.0, 0.25, 9.0]
    assert np.allclose(activation_function("quick_gelu")(x), x / (1 + np.exp(-1.702 * x)), rtol=1e-14, atol=0)
    fast, tanh = activation_function("gelu_fast")(x), activation_function("gelu_tanh")(x)
    assert np.allclose(fast, tanh, rtol=1e-10) and not np.array_equal(fast, tanh)  # a different rounded constant


@pytest.mark.parametrize("act", ["quick_gelu", "relu2", "gelu_fast"])
def test_gpt2_activation(act):
    model = randomize(T.GPT2Model(T.GPT2Config(n_embd=16, n_head=2, n_layer=2, n_positions=32,
                                               activation_function=act)))
    stack = from_module(model)
    assert stack.activation == act
    assert_reproduces(model, stack, _X(1))
    assert_reproduces(model, stack, _X(2), mask=[1] * (N - 2) + [0, 0])


def test_gated_relu2_llama():
    model = randomize(T.LlamaModel(T.LlamaConfig(**_S, max_position_embeddings=32, hidden_act="relu2")))
    stack = from_module(model)
    assert stack.blocks[0].ffn.activation == "relu2"
    assert_reproduces(model, stack, _X(3))


def test_gelu_fast_module_under_a_gelu_tanh_config_is_refused():
    model = randomize(T.GPT2Model(T.GPT2Config(n_embd=16, n_head=2, n_layer=1, n_positions=32,
                                               activation_function="gelu_new")))
    model.h[0].mlp.act = T.activations.FastGELUActivation().eval()
    with pytest.raises(UnsupportedError, match=r"h\.0\.mlp\.act is FastGELUActivation \(gelu_fast\) but the config "
                                               "says gelu_tanh"):
        from_module(model)


def _dynamic():
    rope = {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}
    return randomize(T.LlamaModel(T.LlamaConfig(**_S, max_position_embeddings=16, rope_parameters=rope)))


def test_dynamic_rope_is_exact_below_its_length_and_limited_there():
    model = _dynamic()
    with torch.no_grad(), library_float64():  # grow the module's cached frequencies first: a long input rescales
        model(inputs_embeds=torch.from_numpy(_X(4, n=24))[None])
    stack = from_module(model)  # the short table call resets the module to its original frequencies
    assert stack.blocks[0].attention.rotary.cos.shape[0] == 15
    assert_reproduces(model, stack, _X(5, n=15))
    assert_reproduces(model, stack, _X(6), mask=[1] * (N - 1) + [0])
    with pytest.raises(ShapeError, match="covers at most 15 positions"):
        load(model).duat_form(input_ids=np.arange(16) % 30)


def test_dynamic_rope_really_rescales_beyond_its_length():
    """Beyond the limit the library's angles change with N: a stack with the short table would be wrong there."""
    model = _dynamic()
    base = model.rotary_emb
    with torch.no_grad(), library_float64():
        short = base(torch.zeros(1, dtype=torch.float64), torch.arange(4)[None])[0]
        long = base(torch.zeros(1, dtype=torch.float64), torch.arange(24)[None])[0]
    assert float(torch.max(torch.abs(short[0] - long[0, :4]))) > 1e-3


def _longrope(original=12):
    rope = {"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": [1.0, 1.5, 2.0, 3.0],
            "long_factor": [2.0, 4.0, 8.0, 16.0], "original_max_position_embeddings": original}
    return randomize(T.Phi3Model(T.Phi3Config(**_S, num_key_value_heads=1, max_position_embeddings=48,
                                              original_max_position_embeddings=original, rope_parameters=rope,
                                              pad_token_id=0)))


def test_longrope_short_factors_are_exact_and_limited():
    model = _longrope()
    stack = from_module(model)
    rot = stack.blocks[0].attention.rotary
    assert rot.cos.shape[0] == 12
    default = 10000.0 ** -(np.arange(0, 8, 2) / 8)
    assert np.allclose(rot.inv_freq, default / np.array([1.0, 1.5, 2.0, 3.0]), rtol=1e-6)  # the short factors
    assert_reproduces(model, stack, _X(7, n=12))
    assert_reproduces(model, stack, _X(8), mask=[1] * (N - 3) + [0] * 3)
    with pytest.raises(ShapeError, match="covers at most 12 positions"):
        load(model).duat_form(input_ids=np.arange(13) % 30)


def test_longrope_token_ids_padded_batch():
    model = load(_longrope())
    ids = np.random.default_rng(9).integers(1, 30, size=(2, N))
    mask = np.ones_like(ids)
    mask[1, :4] = 0  # left padding
    forms = model.duat_form(input_ids=ids, attention_mask=mask)
    with torch.no_grad(), library_float64():
        want = model.library(input_ids=torch.as_tensor(ids), attention_mask=torch.as_tensor(mask)).last_hidden_state
    for b, form in enumerate(forms):
        w = want[b].numpy()[mask[b].astype(bool)]
        assert np.max(np.linalg.norm(form.output - w, axis=1) / np.linalg.norm(w, axis=1)) <= 1e-12


def test_static_rope_positions_refuses_an_unknown_switch_length():
    from types import SimpleNamespace as C

    with pytest.raises(UnsupportedError, match="longrope.*original_max_position_embeddings"):
        static_rope_positions(C(), C(rope_parameters={}), "longrope")
    with pytest.raises(UnsupportedError, match="'dynamic' without original_max_seq_len"):
        static_rope_positions(C(), C(), "dynamic")


def test_gemma1_bidirectional_attention_is_refused_by_name():
    model = randomize(T.GemmaModel(T.GemmaConfig(**_S, max_position_embeddings=32, head_dim=8,
                                                 use_bidirectional_attention=True)))
    with pytest.raises(UnsupportedError, match=r"use_bidirectional_attention=True \(gemma\)"):
        from_module(model)
