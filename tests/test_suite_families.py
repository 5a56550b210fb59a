"""README's command runs every model test function, each on at least one family (tests/conftest.py
``DEFAULT_FAMILIES``); the other families of a test are marked ``slow`` and run in CI's slow step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from models_support import require_torch

require_torch()  # without transformers the model modules collect no test (skipped; a failure in CI)

ROOT = Path(__file__).resolve().parent.parent
MODULES = ["tests/test_models_families_dense.py", "tests/test_models_families_phimoe.py", "tests/test_models_hf.py"]
PLUGIN = """
import json
import pytest

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    print("ITEMS " + json.dumps({i.nodeid: i.get_closest_marker("slow") is not None for i in items}))
"""


def test_every_model_test_runs_by_default_and_every_family_in_the_slow_step(tmp_path):
    (tmp_path / "markers_plugin.py").write_text(PLUGIN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", "-p",
                           "no:cacheprovider", "-p", "markers_plugin", "-m", "", *MODULES], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    slow = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("ITEMS "))[6:])
    default = [test for test, is_slow in slow.items() if not is_slow]
    assert {test.split("[")[0] for test in default} == {test.split("[")[0] for test in slow}  # every function
    assert slow["tests/test_models_hf.py::test_every_token_every_layer[gpt2]"] is False  # a default family
    assert slow["tests/test_models_hf.py::test_every_token_every_layer[qwen2]"] is True  # beyond the default
    assert [t for t in default if "test_models_families_dense.py::test_every_token_every_layer" in t] == [
        "tests/test_models_families_dense.py::test_every_token_every_layer[cohere]"]  # none default: the first
    assert slow["tests/test_models_families_phimoe.py::test_every_token_every_layer[phimoe]"] is True  # its own mark
