"""LaTeX output: escaping, golden templates, determinism, and a real pdflatex compile."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import sympy

from symuat import Entry, Identity, Source, Status, audit, dims_grid
from symuat.build import latex_files
from symuat.errors import OutputError
from symuat.latex.escape import escape_text
from symuat.latex.render import render_audit, write_files

GOLDEN = Path(__file__).parent / "golden"
REQUIRE_TEX = os.environ.get("SYMUAT_REQUIRE_TEX") == "1"


def _tiny_records():
    same = Identity(lambda d: {"W": (d["n"], d["n"]), "x": (d["n"], 1)},
                    lambda e, d: e["W"] * e["x"], lambda e, d: e["W"] * e["x"], dims_grid(n=(1, 2)))
    entries = [
        Entry("duat:eq5", Source("duat", "Eq. 5 & 100% of #_{x}"), r"\mathbf{W}\mathbf{x}", Status.PROVED, same,
              note="W' = W ⊗ I_M, σ ∈ ℝ; special: $ & % # _ { } ~ ^ \\"),
    ]
    return audit(entries)


def test_escape_text_handles_every_special_character():
    text = escape_text(r"$ & % # _ { } ~ ^ \ ⊗ ◇ § unknown:☃")
    assert "\\$" in text and "\\&" in text and "\\%" in text and "\\#" in text and "\\_" in text
    assert r"$\otimes$" in text and r"\S{}" in text and "?" in text
    assert "☃" not in text


def test_audit_template_matches_golden():
    got = render_audit(_tiny_records())
    golden = GOLDEN / "appendix-audit-tiny.tex"
    if os.environ.get("SYMUAT_UPDATE_GOLDEN") == "1":
        golden.write_text(got)
    assert got == golden.read_text(), "template output changed; rerun with SYMUAT_UPDATE_GOLDEN=1 if intended"


def test_latex_files_are_deterministic():
    records = _tiny_records()
    assert latex_files(records) == latex_files(_tiny_records())


def test_unwritable_directory_is_an_output_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match="cannot create output directory"):
        write_files(blocker / "sub", {"a.tex": "x"})


def _compile(directory: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "main.tex"],
                          cwd=directory, capture_output=True, text=True, encoding="utf-8", errors="replace")


@pytest.mark.skipif(shutil.which("pdflatex") is None and not REQUIRE_TEX,
                    reason="pdflatex not installed (CI sets SYMUAT_REQUIRE_TEX=1 and installs it)")
@pytest.mark.xdist_group("audit")
def test_full_document_compiles_without_errors_or_undefined_references(tmp_path, audited):
    assert shutil.which("pdflatex"), "SYMUAT_REQUIRE_TEX=1 but pdflatex is missing"
    write_files(tmp_path, latex_files(audited))
    for _ in range(2):
        done = _compile(tmp_path)
        assert done.returncode == 0, done.stdout[-3000:]
    log = (tmp_path / "main.log").read_text(errors="replace")
    assert not re.search(r"LaTeX Warning: (Reference|Citation) .* undefined", log), log[-3000:]
    assert "There were undefined references" not in log
    assert (tmp_path / "main.pdf").stat().st_size > 10_000
    assert sympy  # sympy printing is part of the pipeline
