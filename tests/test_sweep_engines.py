"""The sweep's engines on real processes: a local pool and a local Ray cluster (2 workers each), with workers
killed mid-sweep.  Each run's Parquet files equal the serial run's byte for byte; nothing is lost or doubled.

Marked slow (worker start-up dominates): CI runs them in its second step with SYMUAT_REQUIRE_RAY=1.
"""

from __future__ import annotations

import os
import signal

import pytest
from sweep_support import GOOD, REASONS, gpt2_checkpoint, require, rows, same_files, write_prompts

require("torch", "transformers", flag="SYMUAT_REQUIRE_TORCH")
require("pyarrow", "psutil", flag="SYMUAT_REQUIRE_TORCH")
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("models")]  # the worker that imports torch

import psutil  # noqa: E402

from symuat.sweep import sweep  # noqa: E402


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("engines")
    gpt2_checkpoint(root / "gpt2")
    write_prompts(root / "prompts.jsonl")
    sweep(root / "gpt2", root / "prompts.jsonl", root / "serial", engine="serial", batch_size=2)
    return root


def _check(root, out):
    got = rows(out)
    assert len({r["key"] for r in got}) == len(got) == len(GOOD) + len(REASONS)  # nothing lost, nothing twice
    assert [r["reason"] for r in got[len(GOOD):]] == REASONS
    assert same_files(root / "serial", out)


def _kill_once(select):
    """An ``on_rows`` callback that SIGKILLs the processes ``select()`` returns, after the first written batch."""
    killed = []

    def on_rows(n):
        if not killed:
            victims = select()
            assert victims, "no worker process to kill"
            for p in victims:
                os.kill(p.pid, signal.SIGKILL)
            killed.extend(victims)

    return on_rows, killed


def test_local_pool_equals_serial(setup, tmp_path):
    sweep(setup / "gpt2", setup / "prompts.jsonl", tmp_path / "out", engine="local", workers=2, batch_size=2)
    _check(setup, tmp_path / "out")


def test_local_pool_worker_killed_mid_sweep_loses_nothing(setup, tmp_path):
    on_rows, killed = _kill_once(lambda: psutil.Process().children(recursive=True))
    result = sweep(setup / "gpt2", setup / "prompts.jsonl", tmp_path / "out", engine="local", workers=2,
                   batch_size=2, on_rows=on_rows)
    assert killed and result.computed == len(GOOD) + len(REASONS)
    _check(setup, tmp_path / "out")


def _ray_actors():
    return [p for p in psutil.process_iter(["cmdline"])
            if "MapBatches(PromptRunner)" in " ".join(p.info["cmdline"] or ())]


def test_ray_equals_serial_and_survives_a_killed_actor(setup, tmp_path):
    require("ray", flag="SYMUAT_REQUIRE_RAY")
    sweep(setup / "gpt2", setup / "prompts.jsonl", tmp_path / "ray", engine="ray", workers=2, batch_size=2)
    _check(setup, tmp_path / "ray")
    on_rows, killed = _kill_once(lambda: _ray_actors()[:1])
    sweep(setup / "gpt2", setup / "prompts.jsonl", tmp_path / "killed", engine="ray", workers=2, batch_size=2,
          on_rows=on_rows)
    assert len(killed) == 1
    _check(setup, tmp_path / "killed")


def test_ray_interrupted_then_resumed_equals_uninterrupted(setup, tmp_path):
    """Ctrl-C on the Ray engine after the first written batch: the re-run on Ray computes only the rest, and the
    dataset equals the serial run's byte for byte."""
    require("ray", flag="SYMUAT_REQUIRE_RAY")
    seen = []

    def interrupt(n):
        seen.append(n)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(setup / "gpt2", setup / "prompts.jsonl", tmp_path / "out", engine="ray", workers=2, batch_size=2,
              on_rows=interrupt)
    assert len(seen) == 1 and len(list((tmp_path / "out" / "staging").glob("*.parquet"))) == 1
    resumed = sweep(setup / "gpt2", setup / "prompts.jsonl", tmp_path / "out", engine="ray", workers=2,
                    batch_size=2)
    total = len(GOOD) + len(REASONS)
    assert (resumed.computed, resumed.skipped) == (total - seen[0], seen[0])
    _check(setup, tmp_path / "out")
    assert not list((tmp_path / "out" / "staging").iterdir())
