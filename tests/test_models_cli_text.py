"""``symuat model DIR --text … [--pair …] [--plot FILE]`` (issue 21): signed term shares by default (they sum to 1),
the frozen comparison of a second text, the figure, and the refusals (one error line, exit code 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from models_support import randomize, require_torch

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from test_models_load import _tokenizer  # noqa: E402

from symuat.models.cli import model_command  # noqa: E402


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    path = tmp_path_factory.mktemp("llama_text")
    cfg = transformers.LlamaConfig(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=24,
                                   max_position_embeddings=32, vocab_size=30, num_key_value_heads=1)
    randomize(transformers.LlamaForCausalLM(cfg), seed=2).save_pretrained(path)
    _tokenizer(False).save_pretrained(path)
    return str(path)


def _run(*args):
    return CliRunner().invoke(model_command, list(args))


def test_text_json_signed_shares_pair_and_plot(ckpt, tmp_path):
    png = tmp_path / "f.png"
    r = _run(ckpt, "--text", "the cat sat on", "--pair", "a dog ran far", "--plot", str(png), "--format", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["share_kind"] == "signed" and out["tokens"] == ["the", "cat", "sat", "on"]
    for layer in out["layers"]:
        assert layer["relative_error"] <= 1e-12
        assert abs(sum(layer["shares"].values()) - 1.0) <= 1e-12
    rel = out["pair"]["relative_change_per_token"]
    assert len(rel) == 4 and all(np.isfinite(rel)) and rel[0] > 0  # B differs from A from the first token on
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = _run(ckpt, "--text", "the cat", "--shares", "norm")
    assert text.exit_code == 0 and "do not sum to 1" in text.output and "tokens: the cat" in text.output


def test_text_pair_on_the_torch_backend_is_the_numpy_report(ckpt):
    """``--device cpu`` with ``--text`` and ``--pair``: the per-layer check runs on torch, the frozen comparison on the
    form converted to NumPy; every figure equals the NumPy run's within 1e-12."""
    args = [ckpt, "--text", "the cat sat on", "--pair", "a dog ran far", "--format", "json"]
    want, r = json.loads(_run(*args).output), _run(*args, "--device", "cpu")
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert got["tokens"] == want["tokens"]
    for a, b in zip(want["layers"], got["layers"]):
        assert b["relative_error"] <= 1e-12
        assert all(abs(a["shares"][k] - b["shares"][k]) <= 1e-12 for k in a["shares"])
    assert np.allclose(got["pair"]["relative_change_per_token"], want["pair"]["relative_change_per_token"],
                       rtol=1e-12, atol=0)


@pytest.mark.parametrize("args, match", [
    (["--text", "the cat", "--pair", "the cat sat"], "--pair has 3 tokens"),
    (["--pair", "the"], "--pair needs --text"),
    (["--text", "the", "--tokens", "3"], "--text excludes"),
    (["--text", "the cat", "--plot", "f.gif"], "must end in"),
    (["--text", "the cat", "--plot", "f.png", "--head", "2"], "head must be"),
])
def test_refusals(ckpt, args, match):
    r = _run(ckpt, *args)
    assert r.exit_code == 2 and match in r.output
