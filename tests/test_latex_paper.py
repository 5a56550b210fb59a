"""A user's own paper (``symuat latex/build --derivations DIR``): its appendix, not DUAT's.

Its own title, authors (accents intact) and versions; only its entries; no DUAT appendix or figure; an errata
section with every counterexample, including a statement recorded as proved that the audit refutes (which is
never shown as ``proved (grid …)``); its coverage.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from symuat import Correction, Entry, Identity, Origin, Paper, Prose, Status, audit, dims_grid, register_source
from symuat.build import latex_files
from symuat.latex.front import is_own_paper
from symuat.ledger import sources

ROOT = Path(__file__).resolve().parents[1]
REQUIRE_TEX = os.environ.get("SYMUAT_REQUIRE_TEX") == "1"

@pytest.fixture(scope="module", autouse=True)
def _own_sources():
    """This module's paper, registered while its tests run only: the registry is global, and the session's own
    documents (tests/test_determinism.py) must not list another paper."""
    saved = dict(sources._REGISTRY)
    register_source(Paper("accents", "Accent paper",
                          authors=("François Fleuret", "Łukasz Kaiser", "Jürgen Schmidhuber"),
                          title="Transposes of products, revisited", venue="Notes, 2026",
                          equations=("eq1", "eq2", "eq3", "eq4", "eq5", "eq6")))
    register_source(Origin("accents-notes", "Accent notes"))
    yield
    sources._REGISTRY.clear()
    sources._REGISTRY.update(saved)


def _transpose(rhs) -> Identity:
    return Identity({"A": ("n", "n"), "B": ("n", "n")}, lhs=lambda A, B: (A * B).T, rhs=rhs,
                    dims=dims_grid(n=(1, 2)), reference=lambda A, B: (A @ B).T)


RIGHT = r"(\mathbf{A}\mathbf{B})^T = \mathbf{B}^T\mathbf{A}^T"


@pytest.fixture(scope="module")
def records():
    right = _transpose(lambda A, B: B.T * A.T)
    return audit([
        Entry("accents:eq1", "Eq. 1", RIGHT, Status.PROVED, right),
        Entry("accents:eq2", "Eq. 2", r"(\mathbf{A}\mathbf{B})^T = \mathbf{A}^T\mathbf{B}^T", Status.ERRATUM,
              _transpose(lambda A, B: A.T * B.T), correction=Correction(RIGHT, right)),
        Entry("accents:eq3", "Eq. 3, 4", r"(\mathbf{A}\mathbf{B})^T = \mathbf{B}\mathbf{A}", Status.PROVED,
              _transpose(lambda A, B: B * A)),  # false, recorded proved: the audit refutes it
        Entry("accents:eq5", "Eq. 5", r"\mathrm{rank}", Status.PROSE, Prose("Not an identity.")),
        Entry("accents-notes:again", "a note", RIGHT, Status.PROVED, right),
    ])


@pytest.fixture(scope="module")
def files(records):
    return latex_files(records, derivations="my_paper")


def test_the_records_of_a_user_paper_give_its_own_document(records, files):
    assert is_own_paper(records)
    assert set(files) == {"main.tex", "appendix-audit.tex", "appendix-sources.tex", "symuat-macros.tex",
                          "ledger.json"}  # no DUAT appendix, no figure
    text = "".join(v for v in files.values() if isinstance(v, str))
    assert "Dynamic Universal" not in text and "duat:" not in text and "Wei Wang" not in text


def test_the_title_page_has_the_papers_title_and_authors_with_their_accents(files):
    main = files["main.tex"]
    assert r"\emph{Transposes of products, revisited}" in main
    assert r"Fran\c{c}ois Fleuret, \L{}ukasz Kaiser and J\"{u}rgen Schmidhuber" in main
    assert "?" not in main.split(r"\begin{titlepage}")[1].split(r"\end{titlepage}")[0]
    assert r"symuat audit -{}-derivations my\_paper" in main


def test_the_errata_hold_every_counterexample_and_say_what_is_proved(files):
    main, audit_tex = files["main.tex"], files["appendix-audit.tex"]
    assert r"\subsection*{Errata (2)}" in main
    errata = audit_tex.split(r"\subsection{Errata}")[1]
    assert errata.count(r"\textbf{Counterexample.} At sizes $n=2$") == 2
    eq2, eq3 = errata.split(r"\paragraph{\ledgerid{accents:eq3}}")
    assert r"\textbf{Corrected} (proved):" in eq2
    assert "recorded proved, computed refuted" in eq3 and r"\textbf{No correction is recorded.}" in eq3


def test_a_refuted_entry_shows_its_computed_status_never_a_grid(records, files):
    audit_tex = files["appendix-audit.tex"]
    row = next(line for line in audit_tex.splitlines() if r"\label{ledger:accents:eq3}" in line)
    assert r"refuted \newline (recorded proved)" in row and "grid" not in row
    assert "(refuted, recorded proved; Accent paper, Eq. 3, 4)" in audit_tex
    refuted = next(r for r in records if r.entry.id == "accents:eq3")
    assert refuted.grid is None and refuted.status_label == "proved" and refuted.computed_label == "refuted"


def test_the_summary_counts_the_computed_statuses_and_the_json_has_them(files):
    assert "Accent paper & 1 & 0 & 1 & 0 & 1 & 1 & 4" in files["main.tex"]  # proved … prose, refuted, total
    assert "the recorded status of 1 of the 5 entries differs" in files["main.tex"]
    data = json.loads(files["ledger.json"])
    computed = {e["id"]: e["computed"] for e in data["entries"]}
    assert computed == {"accents:eq1": "proved", "accents:eq2": "erratum", "accents:eq3": "refuted",
                        "accents:eq5": "prose", "accents-notes:again": "proved"}
    assert data["computed_summary"]["refuted"] == 1 and data["summary"]["proved"] == 3
    assert all(e["grid"] is None for e in data["entries"] if e["computed"] != "proved")


def test_coverage_counts_a_reference_that_names_two_equations(files):
    assert "Numbered equations of Accent paper with no entry (1): eq6." in files["main.tex"]


def test_a_source_that_is_not_a_paper_gets_its_own_section(files):
    assert files["appendix-sources.tex"].startswith("% Generated by symuat; do not edit.\n\\section{Accent notes}")
    assert r"\input{appendix-sources}" in files["main.tex"]


@pytest.mark.slow
def test_the_worked_example_builds_a_pdf_without_overfull_boxes(tmp_path):
    """``symuat build --derivations docs/examples/lora`` (CI's slow step, with TeX): the paper's own title, an
    errata section, 0 overfull boxes."""
    if not (shutil.which("latexmk") or shutil.which("pdflatex")) or not shutil.which("pdftotext"):
        if REQUIRE_TEX:
            pytest.fail("SYMUAT_REQUIRE_TEX=1 but TeX or pdftotext is missing")
        pytest.skip("TeX not installed (CI installs it and sets SYMUAT_REQUIRE_TEX=1)")
    out = tmp_path / "lora"
    done = subprocess.run([sys.executable, "-m", "symuat.cli", "build", "--derivations", "docs/examples/lora",
                           "--out", str(out), "--quiet", "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    log = (out / "main.log").read_text(errors="replace")
    assert "Overfull" not in log
    text = subprocess.run(["pdftotext", "-layout", str(out / "main.pdf"), "-"], capture_output=True,
                          text=True, check=True).stdout
    assert "LoRA: Low-Rank Adaptation of Large Language Models" in text and "Edward J. Hu" in text
    assert "Errata (1)" in text and "lora:sec4.1.claim5" in text and "Counterexample." in text
    assert "Dynamic Universal" not in text
