"""``symuat.sweep`` in this process: exact rows checked against the library, error rows, resume, refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sweep_support import (
    GOOD,
    REASONS,
    exact_sum,
    gpt2_checkpoint,
    library_logit,
    require,
    rows,
    same_files,
    write_prompts,
)

require("torch", "transformers", flag="SYMUAT_REQUIRE_TORCH")
require("pyarrow", flag="SYMUAT_REQUIRE_TORCH")
pytestmark = pytest.mark.xdist_group("models")  # the worker that imports torch

from symuat.errors import InvalidValueError, OutOfMemoryError, OutputError  # noqa: E402
from symuat.sweep import summary, summary_text, sweep  # noqa: E402


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    gpt2_checkpoint(root / "gpt2")
    write_prompts(root / "prompts.jsonl")
    result = sweep(root / "gpt2", root / "prompts.jsonl", root / "serial", by="head", engine="serial", batch_size=3)
    return root, result


def test_one_row_per_prompt_each_exact_against_the_library(setup):
    root, result = setup
    got = rows(root / "serial")
    assert (result.rows, result.computed, result.skipped) == (13, 13, 0)
    assert [r["index"] for r in got] == list(range(13))
    for r, ids in zip(got, GOOD):
        assert r["status"] == "ok" and r["token_ids"] == ids and r["n_tokens"] == len(ids)
        want = library_logit(root / "gpt2", ids, r["target_id"])  # the library's own logit, loaded afresh
        assert abs(r["value"] - want) <= 1e-12 * max(1.0, abs(want))
        assert exact_sum(r) <= 1e-12
        assert r["parts"] == ["embed", "L0.H0", "L0.H1", "L0.ffn", "L1.H0", "L1.H1", "L1.ffn"]
        assert r["error"] <= 1e-12


def test_the_target_is_the_library_top_token(setup):
    import torch
    import transformers

    root, _ = setup
    model = transformers.GPT2LMHeadModel.from_pretrained(root / "gpt2", torch_dtype=torch.float64).eval()
    for r, ids in zip(rows(root / "serial"), GOOD):
        with torch.no_grad():
            assert r["target_id"] == int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())


def test_bad_prompts_are_error_rows_with_their_reason(setup):
    root, _ = setup
    bad = rows(root / "serial")[len(GOOD):]
    assert [(r["status"], r["reason"]) for r in bad] == [("error", reason) for reason in REASONS]
    assert all(r["values"] is None and r["value"] is None for r in bad)


def test_a_rerun_skips_everything_and_writes_the_same_bytes(setup, tmp_path):
    root, _ = setup
    before = {f.name: f.read_bytes() for f in (root / "serial" / "data").iterdir()}
    again = sweep(root / "gpt2", root / "prompts.jsonl", root / "serial", by="head", engine="serial")
    assert (again.computed, again.skipped, again.rows) == (0, 13, 13)
    assert {f.name: f.read_bytes() for f in (root / "serial" / "data").iterdir()} == before


def test_interrupted_then_resumed_equals_uninterrupted(setup, tmp_path):
    """Ctrl-C after the first batch: the finished batch stays, the re-run computes only the rest."""
    root, _ = setup
    seen = []

    def interrupt(n):
        seen.append(n)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(root / "gpt2", root / "prompts.jsonl", tmp_path / "out", by="head", engine="serial", batch_size=3,
              on_rows=interrupt)
    assert seen == [3] and len(list((tmp_path / "out" / "staging").glob("*.parquet"))) == 1
    resumed = sweep(root / "gpt2", root / "prompts.jsonl", tmp_path / "out", by="head", engine="serial",
                    batch_size=3)
    assert (resumed.computed, resumed.skipped) == (10, 3)
    assert same_files(root / "serial", tmp_path / "out")
    assert not list((tmp_path / "out" / "staging").iterdir())


def test_top_k_keeps_the_largest_parts_and_sums_the_others(setup, tmp_path):
    root, _ = setup
    sweep(root / "gpt2", root / "prompts.jsonl", tmp_path / "top", by="head", top=2, engine="serial")
    full = {r["index"]: r for r in rows(root / "serial")}
    for r in rows(tmp_path / "top")[:len(GOOD)]:
        f = full[r["index"]]
        ranked = sorted(zip(f["parts"], f["values"]), key=lambda pv: -abs(pv[1]))
        assert list(zip(r["parts"], r["values"])) == ranked[:2]
        assert r["other"] == pytest.approx(sum(v for _, v in ranked[2:]), abs=1e-15)
        assert exact_sum(r) <= 1e-12


def test_summary_ranks_parts_by_mean_magnitude(setup):
    root, _ = setup
    ranked, counts = summary(root / "serial", top=3)
    assert counts == {"ok": 10, "error": 3}
    ok = [r for r in rows(root / "serial") if r["status"] == "ok"]
    means = {p: np.mean([abs(r["values"][r["parts"].index(p)]) for r in ok]) for p in ok[0]["parts"]}
    assert [r.part for r in ranked] == sorted(means, key=lambda p: -means[p])[:3]
    assert ranked[0].mean_abs == pytest.approx(means[ranked[0].part], rel=1e-12)
    assert summary_text(root / "serial", 3).splitlines()[0] == "13 rows: error 3, ok 10"


def test_a_model_without_head_attributes_the_output_direction(tmp_path):
    gpt2_checkpoint(tmp_path / "base", head=False)
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps({"input_ids": ids}) for ids in GOOD[:3]) + "\n")
    sweep(tmp_path / "base", tmp_path / "p.jsonl", tmp_path / "out", by="layer", engine="serial")
    for r in rows(tmp_path / "out"):
        assert r["status"] == "ok" and r["target_id"] is None and r["parts"] == ["embed", "L0", "L1"]
        assert exact_sum(r) <= 1e-12 and abs(r["value"] - r["library_value"]) <= 1e-12 * r["value"]
    (tmp_path / "t.jsonl").write_text(json.dumps({"input_ids": [1, 2], "target": 3}) + "\n")
    sweep(tmp_path / "base", tmp_path / "t.jsonl", tmp_path / "out2", engine="serial")
    (r,) = rows(tmp_path / "out2")
    assert r["status"] == "error" and r["reason"].startswith("a target token needs an LM head")


# ---- refusals (one symuat error, before any worker starts) -------------------------------------------------------
def test_memory_beyond_what_is_available_is_refused_with_both_numbers(setup, tmp_path):
    root, _ = setup
    with pytest.raises(OutOfMemoryError, match=r"the sweep needs about .* \(1000000 worker\(s\) × .* at 16 tokens by "
                                               r"'head'\), but only .* is available now"):
        sweep(root / "gpt2", root / "prompts.jsonl", tmp_path / "o", engine="local", workers=10 ** 6)


def test_another_sweep_in_the_same_folder_is_refused(setup):
    root, _ = setup
    with pytest.raises(InvalidValueError, match="holds a sweep with another options; give another --out"):
        sweep(root / "gpt2", root / "prompts.jsonl", root / "serial", by="layer", engine="serial")


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(engine="spark"), InvalidValueError, "engine must be one of \\('local', 'serial', 'ray'\\)"),
    (dict(batch_size=0), InvalidValueError, "batch_size must be an integer >= 1"),
    (dict(workers=0), InvalidValueError, "workers must be an integer >= 1"),
    (dict(address="127.0.0.1:1"), InvalidValueError, "address is for engine 'ray' only"),
])
def test_bad_arguments(setup, tmp_path, kwargs, error, match):
    root, _ = setup
    with pytest.raises(error, match=match):
        sweep(root / "gpt2", root / "prompts.jsonl", tmp_path / "o", **kwargs)


def test_an_out_folder_that_holds_something_else_is_refused(setup, tmp_path):
    root, _ = setup
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(OutputError, match="is a directory that holds no sweep"):
        sweep(root / "gpt2", root / "prompts.jsonl", tmp_path, engine="serial")
    assert (tmp_path / "mine.txt").read_text() == "keep me"
    with pytest.raises(OutputError, match="exists and is not a directory"):
        sweep(root / "gpt2", root / "prompts.jsonl", tmp_path / "mine.txt", engine="serial")
