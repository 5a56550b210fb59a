"""The core stays NumPy-only: importing symuat (and its CLI, and symuat.models) never imports torch;
README's "Checking a real model" example runs as printed and matches the library."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_import_symuat_does_not_import_torch():
    code = "import sys, symuat, symuat.cli, symuat.models; sys.exit(int('torch' in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


