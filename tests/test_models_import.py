"""The core stays NumPy-only: importing symuat (and its CLI, and symuat.models) never imports torch;
README's "Checking a real model" example runs as printed and matches the library."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from models_support import require_torch, row_errors

README = Path(__file__).resolve().parents[1] / "README.md"


def test_import_symuat_does_not_import_torch():
    code = "import sys, symuat, symuat.cli, symuat.models; sys.exit(int('torch' in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def _readme_example() -> str:
    text = README.read_text()
    section = text[text.index("## Checking a real model"):]
    return re.search(r"```python[^\n]*\n(.*?)```", section, re.S).group(1)


@pytest.mark.xdist_group("models")  # torch and transformers are imported once, by the models worker
def test_readme_example_runs(tmp_path, monkeypatch):
    torch, _ = require_torch()
    from symuat.models import library_float64

    monkeypatch.chdir(tmp_path)
    env: dict = {}
    exec(compile(_readme_example(), str(README), "exec"), env)  # noqa: S102 - the README's own code
    model = env["model"].double().eval()
    with torch.no_grad(), library_float64():
        want = model(inputs_embeds=torch.from_numpy(env["X"])[None]).last_hidden_state[0].numpy()
    assert os.path.isdir(tmp_path / "tiny-llama")
    assert row_errors(want, np.asarray(env["form"].output), slice(None)) <= 1e-12
