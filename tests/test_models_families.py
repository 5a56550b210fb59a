"""``symuat families``: the table of supported families is the importer's registry (no family without an importer,
no importer without an entry), names the transformers versions, lists each family's refused options, and the docs
list every family; the command needs neither torch nor transformers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from symuat.cli import main
from symuat.models.families import FAMILY_INFO, TRANSFORMERS_TESTED, families_json, families_text
from symuat.models.importer import FAMILIES

DOCS = Path(__file__).resolve().parents[1] / "docs" / "models.md"


def test_table_is_the_registry():
    assert set(FAMILY_INFO) == set(FAMILIES)
    assert all(info.family == key and info.blocks for key, info in FAMILY_INFO.items())


def test_text_and_json():
    text = CliRunner().invoke(main, ["families"])
    assert text.exit_code == 0 and text.output.strip() == families_text()
    assert f"{len(FAMILIES)} transformers families, tested with transformers {TRANSFORMERS_TESTED}" in text.output
    assert "refused: apply_residual_connection_post_layernorm" in text.output
    out = CliRunner().invoke(main, ["families", "--format", "json"])
    assert out.exit_code == 0 and json.loads(out.output) == families_json()
    assert CliRunner().invoke(main, ["families", "--format", "json"]).output == out.output


def test_bad_format_is_one_line():
    res = CliRunner().invoke(main, ["families", "--format", "yaml"])
    assert res.exit_code == 2


@pytest.mark.slow  # a fresh interpreter (3 s)
def test_no_torch_is_imported():
    code = ("import sys; from symuat.models.families import families_text; families_text(); "
            "import symuat.models.importer; print('torch' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_docs_list_every_family_and_its_refusals():
    text = DOCS.read_text()
    for info in FAMILY_INFO.values():
        assert f"`{info.family}`" in text, info.family
    assert "symuat families" in text
