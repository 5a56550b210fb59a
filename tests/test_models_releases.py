"""The supported transformers range is one fact: pyproject's ``torch`` extra, ``TESTED_TRANSFORMERS``, the two
installs of ``.ci/run`` (the system's and the second models step's venv) and docs/models.md all name the same two
releases (issue 28)."""

from __future__ import annotations

import re
from pathlib import Path

from symuat.models.hf_common import TESTED_TRANSFORMERS

ROOT = Path(__file__).resolve().parent.parent


def test_the_range_is_declared_once_everywhere():
    lo, hi = TESTED_TRANSFORMERS
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'"transformers>={lo},<={hi}"' in pyproject
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(rf"pip install torch==\S+ transformers=={re.escape(lo)} ", ci)
    assert f'"$tf_venv/bin/pip" install -q transformers=={hi}' in ci
    assert f"Supported transformers releases: **{lo} to {hi}**" in (ROOT / "docs" / "models.md").read_text()
