"""``symuat derive`` output (symuat.derive_format): natural order, one residual name, Ã_0 = I, a compiling align*."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from click.testing import CliRunner

from symuat.cli import main
from symuat.derive_format import natural_key, table_latex, table_text
from symuat.expansion import substitution_table

MACROS = Path(__file__).parents[1] / "latex" / "symuat-macros.tex"


def _derive(*args: str) -> str:
    result = CliRunner().invoke(main, ["derive", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def _line(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith(start))


def test_natural_key_orders_numbers_by_value():
    names = [f"U_{{{j}}}^{{(11)}}" for j in (10, 2, 11, 1, 9)]
    assert sorted(names, key=natural_key) == [f"U_{{{j}}}^{{(11)}}" for j in (1, 2, 9, 10, 11)]


def test_sigma_terms_in_natural_order_in_both_formats():
    text, latex = _derive("--depth", "11", "--no-verify"), _derive("--depth", "11", "--no-verify", "--format", "latex")
    residual_text = _line(text, "UAT^R_{11} =")
    start = latex.index(r"\mathrm{UAT}^{R}_{11} &=")
    residual_latex = latex[start:latex.index(r"\mathbf{x}'_{11}")]
    for printed in (residual_text, residual_latex):
        order = [int(j) for j in re.findall(r"\\tilde\{(?:\\mathbf\{)?U\}?\}?_\{(\d+)\}\^\{\(11\)\}", printed)]
        assert order == list(range(1, 12)), order


def test_one_residual_name_and_identity_initial_value():
    table = substitution_table(3)
    text, latex = table_text(table), table_latex(table)
    assert "R_{" not in text.replace("UAT^R_{", "")
    assert [f"UAT^R_{{{i}}} =" for i in range(4)] == re.findall(r"UAT\^R_\{\d\} =", text)
    assert len(re.findall(r"\\mathrm\{UAT\}\^\{R\}_\{\d\} &=", latex)) == 4
    assert r"\mathrm{UAT}^{R}_{2}" in _line(latex, r"\tilde{\boldsymbol{\beta}}_{3}")
    assert "UAT^R_{2}" in _line(text, r"\tilde{\beta}_{3}")
    assert _line(text, r"\tilde{A}_{0}").strip() == r"\tilde{A}_{0} = I"
    assert _line(latex, r"\tilde{\mathbf{A}}_{0}").strip() == r"\tilde{\mathbf{A}}_{0} &= \mathbf{I} \\"


def test_latex_is_one_complete_align_environment():
    latex = table_latex(substitution_table(4))
    lines = [line for line in latex.splitlines() if not line.startswith("%")]
    assert lines[0] == r"\begin{align*}" and lines[-1] == r"\end{align*}"
    assert latex.count(r"\begin{align*}") == 1 and latex.count(r"\end{align*}") == 1
    body = lines[1:-1]
    assert all(line.endswith(r" \\") for line in body[:-1]) and not body[-1].endswith(r"\\")
    assert all("&" in line for line in body)


def test_latex_output_compiles_with_the_project_macros(pdflatex, tmp_path):
    shutil.copy(MACROS, tmp_path / "symuat-macros.tex")
    body = _derive("--depth", "3", "--format", "latex")
    (tmp_path / "doc.tex").write_text("\\documentclass{article}\n\\usepackage{amsmath,amssymb,graphicx}\n"
                                      "\\input{symuat-macros}\n\\begin{document}\n" + body + "\\end{document}\n")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=tmp_path,
                          capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    assert (tmp_path / "doc.pdf").stat().st_size > 1000
