"""The second worked example, docs/examples/lora (LoRA, Hu et al. 2022): audited, written as that paper's appendix
and site through the CLI.  Its PDF is compiled by CI's slow step (tests/test_latex_paper.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from symuat.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "lora"
STATUSES = {"lora:eq1": "prose", "lora:eq2": "prose", "lora:eq3.step1": "proved", "lora:eq3.step2": "proved",
            "lora:sec4.1.claim1": "prose", "lora:sec4.1.claim2": "proved", "lora:sec4.1.claim3": "proved",
            "lora:sec4.1.claim4": "proved", "lora:sec4.1.claim5": "erratum",
            "lora-merging:sum-of-factors": "proved", "lora-merging:stacked": "proved"}


@pytest.fixture(scope="module")
def ledger() -> dict:
    result = CliRunner().invoke(main, ["audit", "--format", "json", "--quiet", "--derivations", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_every_entry_gets_its_recorded_status(ledger):
    assert {e["id"]: e["computed"] for e in ledger["entries"]} == STATUSES
    assert all(e["agrees"] for e in ledger["entries"])
    assert ledger["coverage"]["missing"] == {"lora": []}


def test_the_invented_misprint_has_the_smallest_counterexample_and_a_proved_correction(ledger):
    misprint = next(e for e in ledger["entries"] if e["id"] == "lora:sec4.1.claim5")
    assert misprint["counterexample"]["dims"] == {"d": 1, "k": 1, "r": 1}
    assert misprint["correction_evidence"] and all(ev["holds"] for ev in misprint["correction_evidence"])
    assert "invented" in misprint["note"].lower() and "invented misprint" in misprint["source"]["ref"]


def test_the_example_is_written_as_its_own_appendix_and_site(tmp_path):
    latex = CliRunner().invoke(main, ["latex", "--out", str(tmp_path / "tex"), "--quiet", "--derivations",
                                      str(EXAMPLE)])
    assert latex.exit_code == 0, latex.output
    main_tex = (tmp_path / "tex" / "main.tex").read_text()
    assert r"\emph{LoRA: Low-Rank Adaptation of Large Language Models}" in main_tex
    assert r"\subsection*{Errata (1)}" in main_tex and "Every numbered equation of LoRA has an entry." in main_tex
    assert sorted(p.name for p in (tmp_path / "tex").iterdir()) == [
        "appendix-audit.tex", "appendix-sources.tex", "ledger.json", "main.tex", "symuat-macros.tex"]
    site = CliRunner().invoke(main, ["html", "--out", str(tmp_path / "site"), "--quiet", "--derivations",
                                     str(EXAMPLE)])
    assert site.exit_code == 0, site.output
    assert sorted(p.name for p in (tmp_path / "site").iterdir()) == [  # no DUAT figure
        "dependencies.html", "index.html", "lora-merging.html", "lora.html", "style.css"]
    page = (tmp_path / "site" / "lora.html").read_text()
    assert f"symuat html --derivations {EXAMPLE} --out DIR" in page
    assert "9 entries, as the audit computes them:" in page and "Every recorded status agrees." in page
