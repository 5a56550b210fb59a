"""README's command is the fast tier (tests/conftest.py ``SLOW_GROUPS``): the tests that import torch (xdist group
``models``), compile coq/ (group ``coq``), run a program README's install does not bring (``coqc``, ``pdflatex``,
Chromium) or need the session's whole-ledger audit with its Coq level are marked ``slow`` and run in CI's slow step;
the audit of every entry at the other levels stays in README's command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = ["tests/test_numeric_backend.py", "tests/test_coq.py", "tests/test_determinism.py", "tests/test_ledger.py",
           "tests/faults/test_coq_build_faults.py", "tests/test_html_pages.py", "symuat/models/guards.py",
           "symuat/models/hf_common.py"]
PLUGIN = """
import json
import pytest

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    print("ITEMS " + json.dumps({i.nodeid: i.get_closest_marker("slow") is not None for i in items}))
"""


def test_torch_coq_and_the_whole_ledger_audit_are_in_the_slow_step(tmp_path):
    (tmp_path / "markers_plugin.py").write_text(PLUGIN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", "-p",
                           "no:cacheprovider", "-p", "markers_plugin", "-m", "", *MODULES], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    slow = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("ITEMS "))[6:])
    tier = {name.split("::")[1].split("[")[0]: is_slow for name, is_slow in slow.items()}
    assert tier["test_torch_helpers_agree_with_numpy"] is True  # models: imports torch
    assert tier["test_the_numpy_backend_needs_no_array_api_compat"] is False  # same module, NumPy only
    assert tier["test_lemmas_compile_and_are_closed"] is True  # coq: compiles coq/
    assert tier["test_an_unwritable_keep_directory_compiles_into_a_temporary_one"] is True  # runs coqc
    assert tier["test_a_short_difference_starts_in_view_beside_long_sides"] is True  # runs Chromium
    assert tier["test_accented_names_are_intact"] is False  # the same pages, in Python
    assert tier["symuat.models.guards.check_forwards"] is True  # a docstring example that imports torch
    assert tier["symuat.models.hf_common.sliding_window"] is False  # one that does not
    assert tier["test_committed_latex_is_what_this_session_writes"] is True  # the whole-ledger audit with Coq
    assert tier["test_entry"] is False and tier["test_ids_unique_and_required_present"] is False  # every entry
    assert all(is_slow for name, is_slow in slow.items() if "test_determinism.py" in name)
