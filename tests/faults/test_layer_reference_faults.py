"""Fault injection at ``symuat.models.layer_reference``: other families, bad depths and ids, checkpoints whose layer
tensors are missing, extra, of the wrong shape or not finite.  Each case expects one named symuat error."""

from __future__ import annotations

import json

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, T = require_torch()
pytestmark = pytest.mark.xdist_group("models")


from symuat.errors import InvalidValueError, UnsupportedError  # noqa: E402
from symuat.models.layer_reference import layer_reference  # noqa: E402

V = 40


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    path = tmp_path_factory.mktemp("llama")
    randomize(T.LlamaModel(T.LlamaConfig(hidden_size=16, num_attention_heads=2, num_hidden_layers=2,
                                         intermediate_size=24, max_position_embeddings=32,
                                         vocab_size=V))).save_pretrained(path)
    return path


def _edited(src, dst, edit):
    """A copy of the checkpoint ``src`` whose tensors ``edit`` changed in place (dict name -> tensor)."""
    dst.mkdir()
    (dst / "config.json").write_text((src / "config.json").read_text())
    from safetensors.torch import load_file, save_file  # imports torch: not at collection

    tensors = load_file(str(src / "model.safetensors"))
    edit(tensors)
    save_file(tensors, str(dst / "model.safetensors"))
    return dst


def test_other_family_refused(tmp_path):
    randomize(T.GPT2Model(T.GPT2Config(n_embd=16, n_head=2, n_layer=1, n_positions=32,
                                       vocab_size=V))).save_pretrained(tmp_path)
    with pytest.raises(UnsupportedError, match=r"model type 'gpt2'.*supported: \['gpt_oss', 'llama', "
                                               r"'llama4_text', 'mistral'"):
        layer_reference(tmp_path, [1, 2])


def test_gemma_refused(tmp_path):
    """Gemma has the same module names but scales its embeddings: refused by name, never run."""
    randomize(T.GemmaModel(T.GemmaConfig(hidden_size=16, num_attention_heads=2, num_hidden_layers=1,
                                         intermediate_size=24, head_dim=8, num_key_value_heads=1,
                                         vocab_size=V))).save_pretrained(tmp_path)
    with pytest.raises(UnsupportedError, match="model type 'gemma'"):
        layer_reference(tmp_path, [1, 2])


@pytest.mark.parametrize("family, why", [
    ("deepseek_v3", r"its checkpoints store the routed experts one by one"),
    ("deepseek_v2", r"the per-layer loader reads the tensors as stored and does not re-fuse them"),
    ("modernbert", r"its base model is embeddings \(with a LayerNorm\)"),
    ("umt5", r"an encoder \(or encoder–decoder\) of T5Stack blocks"),
])
def test_families_symuat_reads_but_this_chain_does_not_run_are_refused_with_the_reason(tmp_path, family, why):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": family}))  # refused before any weight is read
    with pytest.raises(UnsupportedError, match=rf"model type '{family}' of .* is not supported \(.*{why}"):
        layer_reference(tmp_path, [1, 2])


def test_not_a_directory(tmp_path):
    with pytest.raises(InvalidValueError, match="is not a directory"):
        layer_reference(tmp_path / "nothing", [1])


@pytest.mark.parametrize("layers", [0, 3, -1, True, 1.0, "2"])
def test_bad_depth(llama, layers):
    with pytest.raises(InvalidValueError, match=r"layers=.*expected an int in 1\.\.2"):
        layer_reference(llama, [1, 2], layers=layers)


@pytest.mark.parametrize("ids, match", [([], "non-empty 1-D"), ([[1, 2]], "non-empty 1-D"), ([1.5], "ints"),
                                        ([0, V], r"outside 0\.\.39"), ([-1], r"outside 0\.\.39")])
def test_bad_ids(llama, ids, match):
    with pytest.raises(InvalidValueError, match=match):
        layer_reference(llama, ids)


def test_missing_layer_tensor(llama, tmp_path):
    path = _edited(llama, tmp_path / "c", lambda t: t.pop("layers.1.mlp.up_proj.weight"))
    with pytest.raises(InvalidValueError, match=r"layer 1 .*missing \['mlp.up_proj.weight'\]"):
        layer_reference(path, [1, 2])
    assert len(layer_reference(path, [1, 2], layers=1).outputs) == 1  # the prefix never reads layer 1


def test_unexpected_layer_tensor(llama, tmp_path):
    path = _edited(llama, tmp_path / "c", lambda t: t.__setitem__("layers.0.self_attn.q_proj.bias",
                                                                    torch.zeros(16, dtype=torch.float64)))
    with pytest.raises(InvalidValueError, match=r"layer 0 .*unexpected \['self_attn.q_proj.bias'\]"):
        layer_reference(path, [1, 2])


def test_wrong_shape(llama, tmp_path):
    path = _edited(llama, tmp_path / "c", lambda t: t.__setitem__("layers.0.mlp.up_proj.weight",
                                                                    torch.zeros(25, 16, dtype=torch.float64)))
    with pytest.raises(InvalidValueError, match=r"layers.0.mlp.up_proj.weight: checkpoint \(25, 16\), model"):
        layer_reference(path, [1, 2])


def test_nan_weight(llama, tmp_path):
    def poison(t):
        t["layers.1.mlp.down_proj.weight"][0, 0] = float("nan")
    path = _edited(llama, tmp_path / "c", poison)
    with pytest.raises(InvalidValueError, match="layers.1.mlp.down_proj.weight has NaN"):
        layer_reference(path, [1, 2])


def test_nan_embedding_row(llama, tmp_path):
    def poison(t):
        t["embed_tokens.weight"][5, 3] = float("inf")
    path = _edited(llama, tmp_path / "c", poison)
    with pytest.raises(InvalidValueError, match="embed_tokens.weight has NaN or infinite entries"):
        layer_reference(path, [1, 5])
    assert len(layer_reference(path, [1, 2]).outputs) == 2  # only the prompt's rows are read


def test_no_embedding(llama, tmp_path):
    path = _edited(llama, tmp_path / "c", lambda t: t.pop("embed_tokens.weight"))
    with pytest.raises(InvalidValueError, match="has no embed_tokens.weight"):
        layer_reference(path, [1, 2])


def test_vocab_mismatch(llama, tmp_path):
    path = _edited(llama, tmp_path / "c", lambda t: None)
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, "vocab_size": V + 1}))
    with pytest.raises(InvalidValueError, match=r"embed_tokens.weight: checkpoint \(40, 16\), config \(41, 16\)"):
        layer_reference(path, np.array([1, 2]))


def test_sliding_layer_without_window(tmp_path):
    randomize(T.Qwen2Model(T.Qwen2Config(hidden_size=16, num_attention_heads=2, num_hidden_layers=1,
                                         intermediate_size=24, vocab_size=V))).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "layer_types": ["sliding_attention"],
                                                      "sliding_window": None}))
    with pytest.raises(InvalidValueError, match="layer 0 is a sliding_attention layer but the config's sliding_wi"):
        layer_reference(tmp_path, [1, 2])


def test_unknown_layer_type(tmp_path):
    randomize(T.Qwen3Model(T.Qwen3Config(hidden_size=16, num_attention_heads=2, num_hidden_layers=1, head_dim=8,
                                         intermediate_size=24, vocab_size=V))).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "layer_types": ["chunked_attention"]}))
    with pytest.raises((UnsupportedError, InvalidValueError), match="chunked_attention"):
        layer_reference(tmp_path, [1, 2])


# ---- load(dir, layers=k) and symuat model --layers (symuat.models.prefix) --------------------------------------------

@pytest.mark.parametrize("layers", [0, 3, -1, True, 1.5])
def test_prefix_bad_depth(llama, layers):
    from symuat.models import load

    with pytest.raises(InvalidValueError, match=r"layers=.*expected an int in 1\.\.2"):
        load(llama, layers=layers)


def test_prefix_of_a_module_refused():
    from symuat.models import load

    with pytest.raises(InvalidValueError, match="layers=1 needs a checkpoint directory, got a LlamaModel"):
        load(randomize(T.LlamaModel(T.LlamaConfig(hidden_size=16, num_attention_heads=2, num_hidden_layers=2,
                                                  intermediate_size=24, vocab_size=V))), layers=1)


def test_prefix_unexpected_key_still_refused(llama, tmp_path):
    from symuat.models import load

    path = _edited(llama, tmp_path / "c", lambda t: t.__setitem__("layers.0.self_attn.q_proj.bias",
                                                                    torch.zeros(16, dtype=torch.float64)))
    with pytest.raises(InvalidValueError, match=r"1 unexpected \(layers.0.self_attn.q_proj.bias\)"):
        load(path, layers=1)


def test_prefix_missing_key(llama, tmp_path):
    """A missing tensor of a loaded layer is refused; one of an unread later layer is not needed."""
    from symuat.models import load

    path = _edited(llama, tmp_path / "c", lambda t: t.pop("layers.1.mlp.up_proj.weight"))
    with pytest.raises(InvalidValueError, match=r"1 missing \(layers.1.mlp.up_proj.weight\)"):
        load(path, layers=2)
    assert load(path, layers=1).stack.depth == 1


def test_cli_prefix_bad_depth(llama):
    from click.testing import CliRunner
    from faults_support import one_error_line

    from symuat.cli import main

    res = CliRunner().invoke(main, ["model", str(llama), "--layers", "5"])
    one_error_line(res, "layers=5: expected an int in 1..2")
