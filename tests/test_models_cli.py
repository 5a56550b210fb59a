"""`symuat model DIR`: per-layer errors and term shares; bad input gives one line and exit code 2."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from models_support import randomize, require_torch

torch, T = require_torch()
#: One worker imports transformers' model classes (about 3.5 s per process) and runs every model test.
pytestmark = pytest.mark.xdist_group("models")

from symuat.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpt2")
    randomize(T.GPT2Model(T.GPT2Config(n_embd=16, n_head=2, n_layer=2, n_positions=32))).save_pretrained(path)
    return path


def _run(*args):
    return CliRunner().invoke(main, ["model", *map(str, args)])


def test_text_report(checkpoint):
    res = _run(checkpoint, "--tokens", 5, "--seed", 3)
    assert res.exit_code == 0, res.output
    assert "gpt2: 2 layers, N=5 tokens, width 16, evaluated on numpy" in res.output
    assert "A~x0" in res.output and "U~2 app_2" in res.output


def test_json_report_is_deterministic_and_accurate(checkpoint):
    first, second = _run(checkpoint, "--format", "json"), _run(checkpoint, "--format", "json")
    assert first.exit_code == 0, first.output
    assert first.output == second.output
    data = json.loads(first.output)
    assert [layer["layer"] for layer in data["layers"]] == [1, 2]
    assert data["max_relative_error"] <= 1e-12
    assert set(data["layers"][1]["shares"]) == {"A~x0", "c~", "U~1 app_1", "U~2 app_2"}


def test_given_input(checkpoint, tmp_path):
    good, bad = tmp_path / "x.npy", tmp_path / "bad.npy"
    np.save(good, np.random.default_rng(0).standard_normal((4, 16)))
    np.save(bad, np.zeros((4, 15)))
    assert _run(checkpoint, "--input", good, "--format", "json").exit_code == 0
    res = _run(checkpoint, "--input", bad)
    assert res.exit_code == 2 and "expects (N, 16)" in res.output


def _one_line_error(res, match):
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("symuat: error:") and match in lines[0], res.output


def test_not_a_checkpoint(tmp_path):
    _one_line_error(_run(tmp_path), "no config.json")
    _one_line_error(_run(tmp_path / "nope"), "is not a directory")


def test_nan_weights(tmp_path):
    model = randomize(T.GPT2Model(T.GPT2Config(n_embd=16, n_head=2, n_layer=1, n_positions=8)))
    with torch.no_grad():
        model.h[0].attn.c_proj.weight[0, 0] = float("nan")
    model.save_pretrained(tmp_path)
    _one_line_error(_run(tmp_path), "h.0.attn.c_proj.weight has 1 NaN")


def test_unsupported_config_option(tmp_path):
    model = randomize(T.GPT2Model(T.GPT2Config(n_embd=16, n_head=2, n_layer=1, n_positions=8,
                                               activation_function="mish")))
    model.save_pretrained(tmp_path)
    _one_line_error(_run(tmp_path), "unsupported activation 'mish'")


def test_unsupported_model_type(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "codegen"}))
    (tmp_path / "model.safetensors").write_bytes(b"")
    _one_line_error(_run(tmp_path), "unsupported model type 'codegen'")


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(  # evaluated at setup
    "not torch.cuda.is_available()", reason="no GPU"))])
def test_a_torch_device_gives_the_numpy_report(checkpoint, device):
    """``--device cpu`` (and ``cuda`` where a GPU is): the form evaluated with the torch backend; every layer's error
    within 1e-12 and the shares equal NumPy's within 1e-12 (random input and text alike)."""
    want = json.loads(_run(checkpoint, "--format", "json", "--tokens", 6).output)
    res = _run(checkpoint, "--format", "json", "--tokens", 6, "--device", device)
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    assert want["backend"] == "numpy" and got["backend"] == ("torch:cpu" if device == "cpu" else "torch:cuda:0")
    assert got["max_relative_error"] <= 1e-12 and len(got["layers"]) == len(want["layers"]) == 2
    for a, b in zip(want["layers"], got["layers"]):
        assert a["shares"].keys() == b["shares"].keys()
        assert all(abs(a["shares"][k] - b["shares"][k]) <= 1e-12 for k in a["shares"])


def test_a_bad_device_is_one_error_line(checkpoint):
    res = _run(checkpoint, "--device", "gpu")
    assert res.exit_code == 2 and res.stderr.startswith("symuat: error: device must be None (NumPy) or a torch device")
