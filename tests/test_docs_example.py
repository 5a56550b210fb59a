"""The worked example of docs/writing-derivations.md is a real package that ``symuat audit --derivations`` audits."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from symuat.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "examples" / "my_paper"


def test_example_is_short_and_quoted_verbatim_in_the_docs():
    text = (EXAMPLE / "__init__.py").read_text()
    assert len(text.splitlines()) < 30
    assert text in (ROOT / "docs" / "writing-derivations.md").read_text()


def test_example_audits_through_the_cli():
    result = CliRunner().invoke(main, ["audit", "--format", "json", "--derivations", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    entries = {e["id"]: e for e in json.loads(result.output)["entries"]}
    assert {k: e["status"] for k, e in entries.items()} == {"toy:eq1": "proved", "toy:eq2": "erratum",
                                                             "toy:eq3": "prose"}
    assert all(e["agrees"] for e in entries.values())
    assert entries["toy:eq2"]["counterexample"]["dims"] == {"n": 2}
    assert all(ev["holds"] for ev in entries["toy:eq2"]["correction_evidence"])
    assert entries["toy:eq1"]["source"] == {"seed": "", "version": "toy", "ref": "Eq. 1"}


def test_example_coverage_names_the_users_paper_only():
    result = CliRunner().invoke(main, ["audit", "--derivations", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert "numbered equations of Toy paper (toy) with no entry (0): none" in result.output
    assert "DUAT" not in result.output and "duat" not in result.output
