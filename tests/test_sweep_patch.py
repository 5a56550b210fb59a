"""``symuat sweep --patch``: a patching sweep's rows equal the library's own runs patched by torch hooks."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from sweep_support import gpt2_checkpoint, require, rows

require("torch", "transformers", flag="SYMUAT_REQUIRE_TORCH")
require("pyarrow", flag="SYMUAT_REQUIRE_TORCH")
pytestmark = pytest.mark.xdist_group("models")  # the worker that imports torch

from patching_support import library_patched  # noqa: E402

from symuat.cli import main  # noqa: E402
from symuat.errors import InvalidValueError  # noqa: E402
from symuat.models import load  # noqa: E402
from symuat.sweep import summary, sweep  # noqa: E402

#: (clean, corrupted) token ids; then three prompts that must become error rows
PAIRS = [([3, 7, 11, 2], [3, 9, 11, 2]), ([5, 1, 8], [6, 1, 8])]
BAD = [({"input_ids": [1, 2, 3], "corrupt_ids": [1, 2]},
        "the clean run has 3 tokens and the corrupted run 2: patching needs the same length"),
       ({"input_ids": [1, 2, 3]}, "a patching sweep needs each prompt's corrupted run: 'corrupt' (a text) or "
                                  "'corrupt_ids' (token ids)"),
       ({"input_ids": [1, 2], "corrupt_ids": [1, 99]}, "corrupted token id 99 is outside the vocabulary [0, 40)")]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("patch")
    gpt2_checkpoint(root / "gpt2")
    lines = [json.dumps({"input_ids": a, "corrupt_ids": b}) for a, b in PAIRS] + [json.dumps(r) for r, _ in BAD]
    (root / "prompts.jsonl").write_text("\n".join(lines) + "\n")
    return root


@pytest.mark.parametrize("over", ["resid", "head"])
def test_every_patch_equals_the_library_run_patched_by_a_hook(setup, tmp_path, over):
    sweep(setup / "gpt2", setup / "prompts.jsonl", tmp_path / "out", patch=over, engine="serial")
    got = rows(tmp_path / "out")
    model = load(setup / "gpt2")
    for row, (clean, corrupted) in zip(got, PAIRS):
        assert row["status"] == "ok" and row["error"] <= 1e-12 and row["corrupt_token_ids"] == corrupted
        t = row["target_id"]
        _, clean_logits = library_patched(model, clean, clean, ("resid", 0))  # patching a run into itself
        assert t == int(np.argmax(clean_logits[-1]))
        assert abs(row["value"] - clean_logits[-1, t]) <= 1e-12 * max(1.0, abs(clean_logits[-1, t]))
        L, N = model.stack.depth, len(clean)
        units = ([("head", k, h) for k in range(L) for h in range(2)] if over == "head" else
                 [("resid", k, n) for k in range(L + 1) for n in range(N)])
        assert len(row["parts"]) == len(units)
        for unit, part, value in zip(units, row["parts"], row["values"]):
            _, logits = library_patched(model, clean, corrupted, unit)
            assert abs(value - logits[-1, t]) <= 1e-12 * max(1.0, abs(logits[-1, t])), (part, unit)
        # the last layer's residual at the last position carries the whole clean run: it restores the clean logit
        if over == "resid":
            assert abs(row["values"][-1] - row["value"]) <= 1e-12
    assert [r["status"] for r in got[len(PAIRS):]] == ["error"] * len(BAD)
    assert [r["reason"] for r in got[len(PAIRS):]] == [reason for _, reason in BAD]


def test_labels_top_k_and_summary_rank_effects(setup, tmp_path):
    sweep(setup / "gpt2", setup / "prompts.jsonl", tmp_path / "all", patch="head", engine="serial")
    sweep(setup / "gpt2", setup / "prompts.jsonl", tmp_path / "top", patch="head", top=2, engine="serial")
    full, top = rows(tmp_path / "all"), rows(tmp_path / "top")
    assert full[0]["parts"] == ["L0.H0", "L0.H1", "L1.H0", "L1.H1"]
    for f, t in zip(full[:len(PAIRS)], top):
        effects = {p: v - f["corrupted_value"] for p, v in zip(f["parts"], f["values"])}
        want = sorted(effects, key=lambda p: (-abs(effects[p]), f["parts"].index(p)))[:2]
        assert t["parts"] == want and t["other"] is None and t["rest"] is None
    ranked, counts = summary(tmp_path / "all", top=4)
    assert counts == {"ok": len(PAIRS), "error": len(BAD)}
    for r in ranked:  # the mean effect of each patch across the ok rows
        effects = [f["values"][f["parts"].index(r.part)] - f["corrupted_value"] for f in full[:len(PAIRS)]]
        assert abs(r.mean - np.mean(effects)) <= 1e-15 and abs(r.mean_abs - np.mean(np.abs(effects))) <= 1e-15


def test_frozen_mode_and_the_cli(setup, tmp_path):
    res = CliRunner().invoke(main, ["sweep", str(setup / "gpt2"), "--prompts", str(setup / "prompts.jsonl"),
                                    "--patch", "resid", "--patch-mode", "frozen", "--out", str(tmp_path / "cli"),
                                    "--engine", "serial", "--quiet"])
    assert res.exit_code == 0, res.output
    frozen = rows(tmp_path / "cli")[0]
    sweep(setup / "gpt2", setup / "prompts.jsonl", tmp_path / "re", patch="resid", engine="serial")
    recomputed = rows(tmp_path / "re")[0]
    # position 0 reads the same token in both runs: patching it changes nothing, in either mode
    for run in (frozen, recomputed):  # (within rounding: the patched run is evaluated from the patched layer on)
        assert abs(run["values"][0] - run["corrupted_value"]) <= 1e-15
    # downstream dynamic parameters held (the final norm's included) or not: the patches' results differ
    assert max(abs(a - b) for a, b in zip(frozen["values"], recomputed["values"])) > 1e-6
    assert json.loads((tmp_path / "cli" / "sweep.json").read_text())["options"]["patch_mode"] == "frozen"


def test_an_attribution_sweep_refuses_a_corrupted_run_by_row(setup, tmp_path):
    sweep(setup / "gpt2", setup / "prompts.jsonl", tmp_path / "att", by="layer", engine="serial")
    got = rows(tmp_path / "att")
    assert got[0]["status"] == "error" and "give --patch for a patching sweep" in got[0]["reason"]
    assert got[3]["status"] == "ok"  # a prompt without a corrupted run is attributed as before


@pytest.mark.parametrize("kwargs, match", [
    ({"patch": "neuron"}, r"patch must be one of \('resid', 'attn', 'ffn', 'head'\)"),
    ({"patch_mode": "frozen"}, "patch_mode is for a patching sweep: give patch too"),
    ({"patch": "resid", "patch_mode": "held"}, r"patch_mode must be one of \('recomputed', 'frozen'\)"),
])
def test_bad_patch_options_are_refused_before_any_work(setup, tmp_path, kwargs, match):
    with pytest.raises(InvalidValueError, match=match):
        sweep(setup / "gpt2", setup / "prompts.jsonl", tmp_path / "x", engine="serial", **kwargs)
    assert not (tmp_path / "x").exists()
