r"""The paper's commands of ``symuat``, imported when first used (:data:`symuat.cli._LAZY`).

``symuat derive`` prints the DUAT form and substitution table of an L-layer network (seed 001 Fig. 2); ``symuat
build`` and ``symuat latex`` write the document (the audit, the LaTeX appendices, ``ledger.json``, the PDF);
``symuat soundness`` measures the kill rates of the evidence levels on mutants of the proved statements.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from ..build import BuildResult, build, compile_pdf
from ..derive_format import table_latex, table_text
from ..expansion import substitution_table, verify_depth
from ..latex.figures import plot_available
from ..ledger.audit import check_seed
from ..progress import progress, status
from ..soundness import assess, kill_rates, ledger_mutants
from ..soundness.kill_rate import table_kill_outcomes
from .common import (
    MAX_DERIVE_DEPTH,
    MAX_DOCUMENT_DEPTH,
    cache_option,
    checked_path,
    derivations_option,
    one_line_errors,
    quiet_option,
    report_disagreements,
    seed_option,
)

__all__ = ["derive_command", "build_command", "latex_command", "soundness_command"]


@click.command("derive")
@click.option("--depth", type=click.IntRange(1, MAX_DERIVE_DEPTH), default=3, show_default=True,
              help=f"Number of layers L (1 to {MAX_DERIVE_DEPTH}).")
@click.option("--format", "fmt", type=click.Choice(["text", "latex"]), default="text", show_default=True,
              help="Plain text, or a complete LaTeX align* environment (needs amsmath and latex/symuat-macros.tex).")
@click.option("--verify/--no-verify", default=True, show_default=True,
              help="Check every layer's substitution locally (polynomial in L).")
@one_line_errors
def derive_command(depth: int, fmt: str, verify: bool) -> None:
    """Print the DUAT form of an L-layer residual network and its substitution table (seed 001 Fig. 2)."""
    table = substitution_table(depth)
    click.echo(table_text(table) if fmt == "text" else table_latex(table))
    if verify:
        result = verify_depth(depth, table)
        click.echo(f"% verified layer by layer: {'holds' if result.holds else 'FAILS'}", err=not result.holds)
        if not result.holds:
            sys.exit(1)


_document_depth_option = click.option("--depth", type=click.IntRange(1, MAX_DOCUMENT_DEPTH), default=3,
                                      show_default=True,
                                      help=f"Largest depth of the DUAT tables (1 to {MAX_DOCUMENT_DEPTH}).")


def _document(out: str, seed: int, depth: int, derivations: str | None, no_cache: bool, quiet: bool) -> BuildResult:
    """The audit, the LaTeX appendices, main.tex and ledger.json in ``out`` (no PDF), with a progress bar."""
    with progress(quiet) as (on_start, on_done):
        return build(out=out, seed=seed, pdf=False, depth=depth, use_cache=not no_cache, on_start=on_start,
                     on_done=on_done, derivations=derivations)


def _say_if_no_figures() -> None:
    if not plot_available():
        click.echo("matplotlib is not installed (pip install 'symuat[plot]'): wrote the document without figures")


@click.command("build")
@click.option("--out", type=click.Path(file_okay=False), default="latex", show_default=True, callback=checked_path,
              help="Output directory for the LaTeX appendices, main.tex and ledger.json.")
@seed_option
@click.option("--pdf/--no-pdf", default=True, show_default=True, help="Compile main.tex when TeX is installed.")
@_document_depth_option
@derivations_option
@cache_option
@quiet_option
@one_line_errors
def build_command(out: str, seed: int, pdf: bool, depth: int, derivations: str | None, no_cache: bool,
                  quiet: bool) -> None:
    """The main job: audit the ledger, write the LaTeX appendices, compile them to PDF.

    With --derivations DIR the document is that paper's appendix: its title, authors, entries and errata.
    """
    result = _document(out, seed, depth, derivations, no_cache, quiet)
    if pdf:
        with status(quiet, f"compiling {out}/main.tex"):
            pdf_path, compiler = compile_pdf(Path(out))
        result = replace(result, pdf=pdf_path, compiler=compiler)
    click.echo(f"audited {len(result.records)} entries; wrote {len(result.files)} files to {out}/")
    _say_if_no_figures()
    if result.pdf is not None:
        click.echo(f"compiled {result.pdf} with {result.compiler}")
    elif pdf:
        click.echo("no LaTeX compiler (latexmk or pdflatex) found: wrote the .tex files only")
    report_disagreements(result.records)


@click.command("latex")
@click.option("--out", type=click.Path(file_okay=False), required=True, callback=checked_path, help="Output directory.")
@_document_depth_option
@seed_option
@derivations_option
@cache_option
@quiet_option
@one_line_errors
def latex_command(out: str, depth: int, seed: int, derivations: str | None, no_cache: bool, quiet: bool) -> None:
    """Write the LaTeX appendices and main.tex (no compilation); --derivations DIR: that paper's appendix."""
    result = _document(out, seed, depth, derivations, no_cache, quiet)
    click.echo(f"wrote {len(result.files)} files to {out}/")
    _say_if_no_figures()
    report_disagreements(result.records)


@click.command("soundness")
@click.option("--sample", type=click.IntRange(min=1), default=20, show_default=True,
              help="Assess every k-th mutant of the proved ledger statements (1 = all, ~15 min).")
@click.option("--depth", type=click.IntRange(2, 6), default=3, show_default=True,
              help="Depth of the mutated substitution table (2 to 6: its induction's generic step is box 2 or later).")
@seed_option
@quiet_option
@one_line_errors
def soundness_command(sample: int, depth: int, seed: int, quiet: bool) -> None:
    """Kill rates of each evidence level on systematic mutants of the proved statements."""

    check_seed(seed)
    with status(quiet, "building the mutants of the proved statements"):
        mutants = ledger_mutants()[::sample]
    outcomes = []
    with progress(quiet, "assessing mutants") as (on_start, on_done):
        if on_start is not None:
            on_start(len(mutants))
        for m in mutants:
            outcomes.append(assess(m, seed=seed))
            if on_done is not None:
                on_done(m.source)
    with status(quiet, f"assessing the mutants of the depth-{depth} substitution table"):
        outcomes += table_kill_outcomes(depth, seed=seed)
    click.echo(kill_rates(outcomes).to_text())
