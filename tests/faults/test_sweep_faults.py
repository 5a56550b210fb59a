"""Fault injection at the sweep's boundary: hostile command lines, prompt files, output folders and stored rows.

Each case has one exact outcome: one ``symuat: error:`` line with exit 2, or the right rows.
"""

from __future__ import annotations

import json
import os

import pytest
from faults_support import one_error_line, run
from sweep_support import gpt2_checkpoint, require, rows

require("torch", "transformers", flag="SYMUAT_REQUIRE_TORCH")
require("pyarrow", flag="SYMUAT_REQUIRE_TORCH")
pytestmark = pytest.mark.xdist_group("models")  # the worker that imports torch


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("fault-model") / "gpt2"
    gpt2_checkpoint(path)
    return path


def _prompts(tmp_path, text="", name="p.jsonl"):
    p = tmp_path / name
    p.write_text(text or json.dumps({"input_ids": [1, 2, 3]}) + "\n")
    return p


#: (arguments after `symuat sweep MODEL --prompts P --out O`, pieces of the one error line)
CASES = {
    "unknown engine": (["--engine", "spark"], ["Invalid value for '--engine'"]),
    "zero workers": (["--workers", "0"], ["Invalid value for '--workers'"]),
    "negative top": (["--top", "-1"], ["Invalid value for '--top'"]),
    "zero batch": (["--batch-size", "0"], ["Invalid value for '--batch-size'"]),
    "unknown by": (["--by", "expert"], ["Invalid value for '--by'"]),
    "target word": (["--target", "logits"], ["expected 'top' or a token id, got 'logits'"]),
    "negative target": (["--target", "-3"], ["target must be 'top' or a token id >= 0, got -3"]),
    "address without ray": (["--address", "127.0.0.1:6379"], ["address is for engine 'ray' only"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_sweep_command_is_one_error_line(case, model, tmp_path):
    extra, pieces = CASES[case]
    result = run(["sweep", str(model), "--prompts", str(_prompts(tmp_path)), "--out", str(tmp_path / "o"),
                  "--engine", "serial", "--quiet", *extra])
    one_error_line(result, *pieces)
    assert not (tmp_path / "o").exists()


def test_missing_model_directory(tmp_path):
    one_error_line(run(["sweep", str(tmp_path / "nope"), "--prompts", str(_prompts(tmp_path)), "--out",
                        str(tmp_path / "o")]), "model directory", "does not exist or is not a directory")


def test_prompt_file_of_unknown_format(model, tmp_path):
    p = _prompts(tmp_path, "a,b\n", "p.csv")
    one_error_line(run(["sweep", str(model), "--prompts", str(p), "--out", str(tmp_path / "o")]),
                   "expected one of .jsonl, .parquet, .txt, got '.csv'")


def test_out_is_a_file(model, tmp_path):
    (tmp_path / "o").write_text("mine")
    one_error_line(run(["sweep", str(model), "--prompts", str(_prompts(tmp_path)), "--out", str(tmp_path / "o")]),
                   "exists and is not a directory")
    assert (tmp_path / "o").read_text() == "mine"


def test_out_holds_a_corrupt_manifest(model, tmp_path):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "sweep.json").write_text("{not json")
    one_error_line(run(["sweep", str(model), "--prompts", str(_prompts(tmp_path)), "--out", str(tmp_path / "o")]),
                   "sweep.json", "it is not a sweep's manifest")


def test_a_changed_model_is_another_sweep(model, tmp_path):
    """Weights edited between two runs into the same folder: refused, the old rows are never mixed with new ones."""
    import shutil

    copy = tmp_path / "m"
    shutil.copytree(model, copy)
    p = _prompts(tmp_path)
    assert run(["sweep", str(copy), "--prompts", str(p), "--out", str(tmp_path / "o"), "--engine", "serial",
                "--quiet"]).exit_code == 0
    (copy / "config.json").write_text((copy / "config.json").read_text().replace('"n_head": 2', '"n_head": 1'))
    one_error_line(run(["sweep", str(copy), "--prompts", str(p), "--out", str(tmp_path / "o")]),
                   "holds a sweep with another model")


def test_a_torn_temporary_file_is_ignored(model, tmp_path):
    """A write killed half-way leaves a hidden temporary file: it is never read as rows."""
    p = _prompts(tmp_path)
    out = tmp_path / "o"
    assert run(["sweep", str(model), "--prompts", str(p), "--out", str(out), "--engine", "serial",
                "--quiet"]).exit_code == 0
    (out / "staging" / ".batch-x.parquet.123.tmp").write_bytes(b"PAR1 torn")
    result = run(["sweep", str(model), "--prompts", str(p), "--out", str(out), "--engine", "serial", "--quiet"])
    assert result.exit_code == 0 and "0 computed, 1 already done" in result.stdout
    assert len(rows(out)) == 1


def test_an_empty_text_line_and_a_model_without_tokenizer_are_error_rows(model, tmp_path):
    p = _prompts(tmp_path, "hello\n\n", "p.txt")
    result = run(["sweep", str(model), "--prompts", str(p), "--out", str(tmp_path / "o"), "--engine", "serial",
                  "--quiet"])
    assert result.exit_code == 0, result.stderr
    assert [(r["status"], r["reason"]) for r in rows(tmp_path / "o")] == [
        ("error", "the model has no tokenizer: give input_ids instead of text")] * 2


def test_summary_of_a_folder_without_a_finished_sweep(tmp_path):
    one_error_line(run(["summary", str(tmp_path)]), "holds no finished sweep")


def test_the_cli_prints_the_result_line(model, tmp_path):
    result = run(["sweep", str(model), "--prompts", str(_prompts(tmp_path)), "--out", str(tmp_path / "o"),
                  "--engine", "serial", "--quiet"])
    assert result.exit_code == 0 and result.stdout.startswith(f"1 rows in {tmp_path / 'o' / 'data'} (1 computed")
    assert os.listdir(tmp_path / "o" / "staging") == []
