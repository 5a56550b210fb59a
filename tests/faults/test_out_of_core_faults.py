"""Fault injection at ``load(dir, out_of_core=True)`` and ``check_layers``: bad depths and arguments, a missing shard,
tensors of the wrong dtype or shape, a missing layer key, a non-finite weight, a family that cannot go out of core
(asked for, or needed because it does not fit), positions the streamed stack does not take, and a tampered weight
that the per-layer reference check must catch.  Each case expects one named symuat error or the failing verdict
with its witness."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, T = require_torch()
pytestmark = pytest.mark.xdist_group("models")


from symuat.errors import (  # noqa: E402
    ArgumentTypeError,
    InvalidValueError,
    OutOfMemoryError,
    ShapeError,
    UnsupportedError,
)
from symuat.models import check_layers, load  # noqa: E402

V = 40
IDS = np.array([3, 1, 4, 1, 5, 9, 2])


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    path = tmp_path_factory.mktemp("llama")
    randomize(T.LlamaForCausalLM(T.LlamaConfig(hidden_size=16, num_attention_heads=2, num_hidden_layers=3,
                                               intermediate_size=24, max_position_embeddings=32, vocab_size=V)),
              seed=4).to(torch.bfloat16).save_pretrained(path, max_shard_size="4KB")
    return path


def _edited(src, dst, key, edit):
    """A copy of the checkpoint ``src`` whose tensor ``key`` is ``edit(tensor)`` (None: removed)."""
    shutil.copytree(src, dst)
    shard = dst / json.loads((src / "model.safetensors.index.json").read_text())["weight_map"][key]
    from safetensors.torch import load_file, save_file  # imports torch: not at collection

    tensors = load_file(str(shard))
    value = edit(tensors[key].clone())
    if value is None:
        del tensors[key]
    else:
        tensors[key] = value
    save_file(tensors, str(shard), metadata={"format": "pt"})
    return dst


@pytest.mark.parametrize("layers", [0, 4, -1, True, "2", 1.5])
def test_bad_depth(llama, layers):
    with pytest.raises(InvalidValueError, match=r"layers=.*: expected an int in 1\.\.3"):
        load(llama, layers=layers, out_of_core=True)


def test_out_of_core_not_a_bool(llama):
    with pytest.raises(ArgumentTypeError, match="out_of_core must be True, False or None, got str"):
        load(llama, out_of_core="yes")


def test_out_of_core_with_device(llama):
    with pytest.raises(UnsupportedError, match="out_of_core with device='cpu'"):
        load(llama, out_of_core=True, device="cpu")


def test_out_of_core_of_a_module(llama):
    module = T.LlamaModel(T.LlamaConfig(hidden_size=16, num_attention_heads=2, num_hidden_layers=1,
                                        intermediate_size=24, vocab_size=V))
    with pytest.raises(InvalidValueError, match="out_of_core=True needs a checkpoint directory, got a LlamaModel"):
        load(module, out_of_core=True)


def test_missing_shard(llama, tmp_path):
    shutil.copytree(llama, tmp_path / "c")
    shard = json.loads((llama / "model.safetensors.index.json").read_text())["weight_map"][
        "model.layers.1.mlp.up_proj.weight"]
    (tmp_path / "c" / shard).unlink()
    with pytest.raises(InvalidValueError, match=r"names 1 shard\(s\) that are not there: \['model-"):
        load(tmp_path / "c", out_of_core=True)


def test_wrong_dtype(llama, tmp_path):
    path = _edited(llama, tmp_path / "c", "model.layers.2.self_attn.k_proj.weight", lambda t: t.to(torch.int32))
    with pytest.raises(InvalidValueError, match=r"model\.layers\.2\.self_attn\.k_proj\.weight is stored as I32 .*"
                                                r"expected a floating-point weight"):
        load(path, out_of_core=True)


def test_wrong_shape(llama, tmp_path):
    path = _edited(llama, tmp_path / "c", "model.layers.1.mlp.down_proj.weight", lambda t: t[:, :-1].contiguous())
    with pytest.raises(InvalidValueError, match=r"model\.layers\.1\.mlp\.down_proj\.weight: checkpoint \(16, 23\), "
                                                r"model \(16, 24\)"):
        load(path, out_of_core=True)


def test_missing_layer_key(llama, tmp_path):
    path = _edited(llama, tmp_path / "c", "model.layers.0.input_layernorm.weight", lambda t: None)
    with pytest.raises(InvalidValueError, match=r"layer 0 of the checkpoint does not match its config: missing "
                                                r"\['input_layernorm\.weight'\]"):
        load(path, out_of_core=True)


def test_wrong_embedding_shape(llama, tmp_path):
    path = _edited(llama, tmp_path / "c", "model.embed_tokens.weight", lambda t: t[:-1].contiguous())
    with pytest.raises(ShapeError, match=r"model\.embed_tokens\.weight: checkpoint \(39, 16\), config \(40, 16\)"):
        load(path, out_of_core=True)


def test_non_finite_weight_found_when_read(llama, tmp_path):
    """Values are read when the form reaches the layer: the NaN is refused there, by name."""
    def nan(t):
        t[0, 0] = float("nan")
        return t

    model = load(_edited(llama, tmp_path / "c", "model.layers.2.self_attn.o_proj.weight", nan), out_of_core=True)
    with pytest.raises(InvalidValueError, match=r"model\.layers\.2\.self_attn\.o_proj\.weight has NaN or infinite"):
        model.duat_form(input_ids=IDS)


def test_family_refused_by_name(tmp_path):
    randomize(T.GPT2Model(T.GPT2Config(n_embd=16, n_head=2, n_layer=1, n_positions=32,
                                       vocab_size=V))).save_pretrained(tmp_path)
    with pytest.raises(UnsupportedError, match=r"out_of_core: model type 'gpt2' .* cannot be loaded out of core; "
                                               r"supported: \['llama'\]"):
        load(tmp_path, out_of_core=True)


def test_family_too_big_refused_before_loading(tmp_path, monkeypatch):
    """A model that does not fit and cannot go out of core: refused from the headers, nothing allocated."""
    randomize(T.GPT2Model(T.GPT2Config(n_embd=16, n_head=2, n_layer=1, n_positions=32,
                                       vocab_size=V))).save_pretrained(tmp_path)
    monkeypatch.setenv("SYMUAT_MEMORY_LIMIT", "10K")
    with pytest.raises(OutOfMemoryError, match=r"model type 'gpt2' cannot be loaded out of core \(supported: "
                                               r"\['llama'\]\)"):
        load(tmp_path)


def test_no_layer_fits(llama, monkeypatch):
    monkeypatch.setenv("SYMUAT_MEMORY_LIMIT", "1K")
    with pytest.raises(OutOfMemoryError, match="reading one layer of .* in float64 .*no layer fits"):
        load(llama, out_of_core=True)


def test_explicit_positions_refused(llama):
    model = load(llama, out_of_core=True)
    with pytest.raises(UnsupportedError, match="default positions 0..N-1 only"):
        model.duat_form(input_ids=IDS, position_ids=IDS)


def test_tampered_weight_fails_the_layer_check(llama, tmp_path):
    """The reference read from a checkpoint with one changed weight in layer 1: layer 0 passes, layer 1 and every
    later layer fail, and the verdict names a failing layer as its witness."""
    model = load(llama, out_of_core=True)
    assert check_layers(model, IDS).passed

    def bump(t):
        t[3, 5] += 0.5
        return t

    tampered = _edited(llama, tmp_path / "c", "model.layers.1.mlp.gate_proj.weight", bump)
    check = check_layers(model, IDS, directory=tampered)
    assert not check.passed and check.worst >= 1
    assert check.errors[0] <= 1e-12 and all(e > 1e-6 for e in check.errors[1:])
    assert "FAILED" in repr(check)


def test_check_of_an_in_memory_model_needs_the_directory(llama):
    with pytest.raises(InvalidValueError, match="check_layers needs directory="):
        check_layers(load(llama, out_of_core=False), IDS)


def test_patched_layer_refused_by_the_probe(llama, monkeypatch):
    """A library MLP that computes something else than its weights say: the first read of layer 0 probes it."""
    from transformers.models.llama import modeling_llama

    original = modeling_llama.LlamaMLP.forward
    monkeypatch.setattr(modeling_llama.LlamaMLP, "forward", lambda self, x: 2 * original(self, x))
    model = load(llama, out_of_core=True)
    with pytest.raises(UnsupportedError, match="layer 0 of the module does not compute what its weights and config"):
        model.duat_form(input_ids=IDS)


def test_lm_logits_refusals(llama, tmp_path):
    from symuat.models.out_of_core import lm_logits

    model = load(llama, out_of_core=True)
    with pytest.raises(InvalidValueError, match="chunk=0: expected a positive int"):
        lm_logits(model, np.zeros((2, 16)), chunk=0)
    with pytest.raises(ShapeError, match=r"hidden of shape \(2, 15\): expected finite \(N, 16\)"):
        lm_logits(model, np.zeros((2, 15)))
    with pytest.raises(InvalidValueError, match="lm_logits is for an out-of-core model"):
        lm_logits(load(llama, out_of_core=False), np.zeros((2, 16)))
    randomize(T.LlamaModel(T.LlamaConfig(hidden_size=16, num_attention_heads=2, num_hidden_layers=1,
                                         intermediate_size=24, vocab_size=V))).save_pretrained(tmp_path)
    with pytest.raises(UnsupportedError, match="has no lm_head.weight and does not tie it"):
        lm_logits(load(tmp_path, out_of_core=True), np.zeros((2, 16)))


def test_lm_logits_estimates_its_memory_before_allocating(llama, monkeypatch):
    from symuat.models.out_of_core import lm_logits

    model = load(llama, out_of_core=True)
    monkeypatch.setenv("SYMUAT_MEMORY_LIMIT", "1K")
    with pytest.raises(OutOfMemoryError, match=r"out of memory computing 2 x \d+ logits: about .* needed.*pass fewer "
                                               r"hidden states at a time, or a smaller chunk"):
        lm_logits(model, np.zeros((2, 16)))


def test_in_memory_refused_from_the_headers(llama, monkeypatch):
    """``out_of_core=False`` on a model whose float64 weights exceed the memory allowed: refused before loading."""
    monkeypatch.setenv("SYMUAT_MEMORY_LIMIT", "10K")
    with pytest.raises(OutOfMemoryError, match=r"out of memory loading .* in float64: about .* needed, 10\.0 KiB "
                                               r"allowed by SYMUAT_MEMORY_LIMIT; load\(\.\.\., out_of_core=True\)"):
        load(llama, out_of_core=False)
