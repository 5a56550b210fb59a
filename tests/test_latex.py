"""LaTeX output: escaping, golden templates, determinism, and a real pdflatex compile."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

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
              note=r"$W' = W \otimes I_M$, 50\% of the paper's Fig.~5"),
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


def test_latex_files_are_deterministic(without_figures):
    # the text only: figure bytes are compared across processes in tests/test_determinism.py
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


#: Math regions of generated LaTeX, and commands whose argument is code or a key rather than prose.
_MATH = re.compile(r"\\\[.*?\\\]|(?<!\\)\$[^$]*(?<!\\)\$|\\begin\{(align\*|equation|aligned)\}.*?\\end\{\1\}", re.S)
_CODE = re.compile(r"\\(texttt|ledgerid|label|ref|pageref|eqref|input|includegraphics)(\[[^\]]*\])?"
                   r"\{(?:[^{}]|\{[^{}]*\})*\}"
                   r"|\\hyperref\[[^\]]*\]")
#: ASCII math left in text (raw or escaped), seed file names, citations of the project's private spec.
_LEFTOVER = re.compile(r"_\{|\\_\\\{|\\_[A-Za-z0-9]|sqrt\(|\^\{|\\textasciicircum|\d{3}_[0-9a-f]{16}|SPEC\s*(§|\\S)")


def _prose_of(tex: str) -> str:
    text = "\n".join(line for line in tex.splitlines() if not line.lstrip().startswith("%"))
    return _CODE.sub(" ", _MATH.sub(" ", text))


def test_leftover_check_catches_ascii_math_seed_names_and_spec_citations():
    for bad in (r"weights W'\_\{1,2\} here", "scale 1/sqrt(M)", "x_{i} in text", "seed 001_280f2464439a611b.txt",
                r"as in SPEC \S{}5", r"UAT\_1\textasciicircum{}R"):
        assert _LEFTOVER.search(_prose_of(bad)), bad
    for good in (r"$W'_{1,2}$ and \[x_{i}\]", r"\texttt{substitution\_table}", r"\label{ledger:duat:eq5}"):
        assert not _LEFTOVER.search(_prose_of(good)), good


@pytest.mark.xdist_group("audit")
def test_generated_tex_has_no_ascii_math_seed_names_or_spec_citations(audited_files):
    for name, text in audited_files.items():
        if name.endswith(".tex"):
            hits = [m.group(0) for m in _LEFTOVER.finditer(_prose_of(text))]
            assert not hits, f"{name}: {hits[:10]}"


@pytest.mark.xdist_group("audit")
def test_document_includes_every_figure_it_writes(audited_files):
    from symuat.latex.figures import plot_available

    figures = sorted(n for n in audited_files if n.endswith(".pdf"))
    if not plot_available():
        assert not figures and os.environ.get("SYMUAT_REQUIRE_PLOT") != "1", "matplotlib missing"
        return
    assert len(figures) >= 7  # five sparsity figures, attention heatmaps, term attribution
    included = set(re.findall(r"\\includegraphics(?:\[[^\]]*\])?\{([^}]*)\}", "".join(
        t for n, t in audited_files.items() if n.endswith(".tex"))))
    assert included == set(figures)
    assert all(audited_files[f].startswith(b"%PDF") for f in figures)


@pytest.mark.xdist_group("audit")
def test_no_formula_is_scaled(audited_files):
    tex = "".join(t for n, t in audited_files.items() if n.endswith(".tex"))
    assert r"\resizebox" not in tex and r"\scalebox" not in tex and r"\tiny" not in tex


@pytest.mark.skipif(shutil.which("pdflatex") is None and not REQUIRE_TEX,
                    reason="pdflatex not installed (CI sets SYMUAT_REQUIRE_TEX=1 and installs it)")
@pytest.mark.xdist_group("audit")
@pytest.mark.slow  # pdflatex on the whole appendix (CI's slow step; smaller documents compile in the default run)
def test_full_document_compiles_cleanly(tmp_path, audited_files):
    assert shutil.which("pdflatex"), "SYMUAT_REQUIRE_TEX=1 but pdflatex is missing"
    write_files(tmp_path, audited_files)
    for _ in range(2):
        done = _compile(tmp_path)
        assert done.returncode == 0, done.stdout[-3000:]
    log = (tmp_path / "main.log").read_text(errors="replace")
    assert not re.search(r"LaTeX Warning: (Reference|Citation) .* undefined", log), log[-3000:]
    assert "There were undefined references" not in log
    overfull = re.findall(r"^Overfull \\hbox.*$", log, re.M)
    underfull = re.findall(r"^Underfull \\hbox.*$", log, re.M)
    assert not overfull, overfull
    assert len(underfull) <= 10, underfull
    assert (tmp_path / "main.pdf").stat().st_size > 10_000
    for figure in (n for n in audited_files if n.endswith(".pdf")):
        assert f"<./{figure}" in log or f"<{figure}" in log, f"{figure} is not in the PDF"
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", "main.pdf", "-"], cwd=tmp_path, capture_output=True, text=True,
                              encoding="utf-8", errors="replace").stdout
        assert "¡" not in text and "¿" not in text
        assert "Machine-checked appendices" in text and "Summary" in text
    if shutil.which("pdfimages") and any(n.endswith(".pdf") for n in audited_files):
        listing = subprocess.run(["pdfimages", "-list", "main.pdf"], cwd=tmp_path, capture_output=True,
                                 text=True).stdout.splitlines()[2:]
        assert len(listing) >= 7, listing  # the sparsity patterns and heatmaps are raster images
