"""Bad input to the importers: each case is one clear symuat error that names what is wrong."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import library_states, randomize, require_torch, row_errors

torch, T = require_torch()
#: One worker imports transformers' model classes (about 3.5 s per process) and runs every model test.
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import InvalidValueError, ShapeError, UnsupportedError  # noqa: E402
from symuat.models import from_module, from_pretrained  # noqa: E402
from symuat.models.report import model_report  # noqa: E402
from symuat.numeric import stack_output  # noqa: E402


def _gpt2(**kw):
    return randomize(T.GPT2Model(T.GPT2Config(n_embd=16, n_head=2, n_layer=2, n_positions=16, **kw)))


def _llama(**kw):
    cfg = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=24,
               max_position_embeddings=32)
    cfg.update(kw)
    return randomize(T.LlamaModel(T.LlamaConfig(**cfg)))


def test_unsupported_layer_is_named():
    model = _gpt2()
    model.h[1].mlp.c_fc = torch.nn.Conv1d(16, 64, 1).double().eval()
    with pytest.raises(UnsupportedError, match=r"h\.1\.mlp\.c_fc is a Conv1d"):
        from_module(model)


def test_unsupported_module_and_model_type():
    with pytest.raises(UnsupportedError, match="unsupported module LSTM"):
        from_module(torch.nn.LSTM(4, 4))
    codegen = T.CodeGenModel(T.CodeGenConfig(n_embd=16, n_head=2, n_layer=1, n_positions=8, rotary_dim=4,
                                             vocab_size=30))
    with pytest.raises(UnsupportedError, match="unsupported model type 'codegen'"):
        from_module(codegen)


def test_wrong_input_width():
    model = _gpt2()
    stack = from_module(model)
    with pytest.raises(ShapeError, match="16"):
        stack_output(stack, np.zeros((3, 15)))
    with pytest.raises(ShapeError, match=r"expects \(N, 16\)"):
        model_report(model, stack, np.zeros((3, 15)))


def test_nan_weights_are_named():
    model = _llama()
    with torch.no_grad():
        model.layers[0].mlp.up_proj.weight[2, 3] = float("nan")
    with pytest.raises(InvalidValueError, match=r"layers\.0\.mlp\.up_proj\.weight has 1 NaN"):
        from_module(model)


@pytest.mark.parametrize("make,match", [
    (lambda: _gpt2(activation_function="mish"), "unsupported activation 'mish'"),
    (lambda: _gpt2(add_cross_attention=True), "add_cross_attention"),
])
def test_unsupported_config_option_is_named(make, match):
    with pytest.raises(UnsupportedError, match=match):
        from_module(make())


def test_sliding_window_shorter_than_the_input_is_a_mask():
    model = randomize(T.MistralModel(T.MistralConfig(hidden_size=16, num_attention_heads=2, num_hidden_layers=1,
                                                     intermediate_size=24, num_key_value_heads=1,
                                                     sliding_window=4, max_position_embeddings=32)))
    stack = from_module(model)
    X = np.random.default_rng(0).standard_normal((4, 16))
    assert row_errors(library_states(model, X)[-1], stack_output(stack, X), slice(None)) <= 1e-12
    X = np.random.default_rng(1).standard_normal((9, 16))
    assert row_errors(library_states(model, X)[-1], stack_output(stack, X), slice(None)) <= 1e-12


def test_not_a_checkpoint(tmp_path):
    with pytest.raises(InvalidValueError, match="is not a directory"):
        from_pretrained(tmp_path / "missing")
    with pytest.raises(InvalidValueError, match="no config.json"):
        from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}')
    with pytest.raises(InvalidValueError, match=r"no \*\.safetensors"):
        from_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(InvalidValueError, match="cannot load the checkpoint"):
        from_pretrained(tmp_path)


def test_unsupported_model_type_in_checkpoint(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "codegen"}')
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(UnsupportedError, match="unsupported model type 'codegen'"):
        from_pretrained(tmp_path)


def test_causal_flag_only_for_torch_encoders():
    with pytest.raises(InvalidValueError, match="torch.nn encoders only"):
        from_module(_gpt2(), causal=True)


def test_conv1d_orientation_is_read_not_guessed():
    """GPT-2's Conv1D is already in x out; transposing it (the README mistake of issue 11) would be wrong."""
    model = _gpt2()
    stack = from_module(model)
    np.testing.assert_array_equal(stack.blocks[0].ffn.W1, model.h[0].mlp.c_fc.weight.detach().numpy())
    enc = torch.nn.TransformerEncoderLayer(16, 2, 24, dropout=0.0).double().eval()
    np.testing.assert_array_equal(from_module(enc).blocks[0].ffn.W1, enc.linear1.weight.detach().numpy().T)
