r"""The ``symuat`` command line.

``symuat audit`` recomputes every ledger entry and prints the ledger (a table, or
the JSON object of ``docs/ledger-format.md`` with ``--format json``); it exits 1 when a computed
status disagrees with the recorded one.  Every :class:`~symuat.errors.SymuatError`
is printed as one line on stderr with exit code 2.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps

import click

from .build import build
from .errors import SymuatError
from .expansion import substitution_table, verify_depth
from .latex.figures import plot_available
from .latex.printer import paper_latex
from .ledger.audit import AuditRecord, audit, ledger_json
from .ledger.coverage import coverage
from .ledger.registry import load_entries
from .soundness import assess, kill_rates, ledger_mutants
from .soundness.kill_rate import table_kill_outcomes

__all__ = ["main"]


def _one_line_errors(command: Callable) -> Callable:
    @wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except SymuatError as exc:
            click.echo(f"symuat: error: {exc}", err=True)
            sys.exit(2)

    return wrapper


def _records(derivations: str | None, seed: int) -> tuple[AuditRecord, ...]:
    entries = load_entries(directory=derivations) if derivations else load_entries()
    return audit(entries, seed=seed)


def _table(records: tuple[AuditRecord, ...]) -> str:
    rows = [("status", "id", "source", "evidence", "agrees")]
    for r in records:
        levels = ",".join(f"{e.level.value}{'' if e.holds else '✗'}" for e in r.evidence) or "-"
        rows.append((r.entry.status.value, r.entry.id, f"{r.entry.source.version} {r.entry.source.ref}",
                     levels, "yes" if r.agrees else f"NO (computed {r.computed.value if r.computed else 'none'})"))
    widths = [min(max(len(row[i]) for row in rows), 48) for i in range(len(rows[0]))]
    lines = ["  ".join(cell[:48].ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


@click.group()
@click.version_option(package_name="symuat")
def main() -> None:
    """Machine-checked audit of the Dynamic Universal Approximation Theory paper."""


@main.command("audit")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="Output format: a table, or the JSON object of docs/ledger-format.md.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the exact and float checks.")
@click.option("--derivations", type=click.Path(file_okay=False), default=None,
              help="A derivations package or directory of modules (default: the paper's, symuat_paper).")
@_one_line_errors
def audit_command(fmt: str, seed: int, derivations: str | None) -> None:
    """Recompute every ledger entry; exit 1 if a computed status disagrees with its record."""
    records = _records(derivations, seed)
    if fmt == "json":
        click.echo(json.dumps(ledger_json(records), indent=2, sort_keys=False, ensure_ascii=False))
    else:
        click.echo(_table(records))
        summary = ledger_json(records)["summary"]
        click.echo("\n" + ", ".join(f"{k}: {v}" for k, v in summary.items()) + f"; {len(records)} entries\n")
        click.echo(coverage(r.entry for r in records).to_text())
    disagreeing = [r.entry.id for r in records if not r.agrees]
    if disagreeing:
        click.echo(f"symuat: {len(disagreeing)} entries disagree with their record: {', '.join(disagreeing)}",
                   err=True)
        sys.exit(1)


@main.command("derive")
@click.option("--depth", type=int, default=3, show_default=True, help="Number of layers L (>= 1).")
@click.option("--format", "fmt", type=click.Choice(["text", "latex"]), default="text", show_default=True)
@click.option("--verify/--no-verify", default=True, show_default=True,
              help="Check every layer's substitution locally (polynomial in L).")
@_one_line_errors
def derive_command(depth: int, fmt: str, verify: bool) -> None:
    """Print the DUAT form of an L-layer residual network and its substitution table (seed 001 Fig. 2)."""
    table = substitution_table(depth)
    if fmt == "text":
        click.echo(table.to_text())
    else:
        for i in range(depth + 1):
            click.echo(f"% box {i}")
            for row in table.box(i):
                click.echo(f"{paper_latex(row.symbol)} = {paper_latex(row.definition)} \\\\")
        click.echo(f"\\mathbf{{x}}'_{{{depth}}} = {paper_latex(table.form())}")
    if verify:
        result = verify_depth(depth, table)
        click.echo(f"% verified layer by layer: {'holds' if result.holds else 'FAILS'}", err=not result.holds)
        if not result.holds:
            sys.exit(1)


def _say_if_no_figures() -> None:
    if not plot_available():
        click.echo("matplotlib is not installed (pip install 'symuat[plot]'): wrote the document without figures")


@main.command("build")
@click.option("--out", type=click.Path(file_okay=False), default="latex", show_default=True,
              help="Output directory for the LaTeX appendices, main.tex and ledger.json.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the exact and float checks.")
@click.option("--pdf/--no-pdf", default=True, show_default=True, help="Compile main.tex when TeX is installed.")
@click.option("--depth", type=int, default=3, show_default=True, help="Largest depth of the DUAT tables.")
@_one_line_errors
def build_command(out: str, seed: int, pdf: bool, depth: int) -> None:
    """The main job: audit the ledger, write the LaTeX appendices, compile them to PDF."""
    result = build(out=out, seed=seed, pdf=pdf, depth=depth)
    click.echo(f"audited {len(result.records)} entries; wrote {len(result.files)} files to {out}/")
    _say_if_no_figures()
    if result.pdf is not None:
        click.echo(f"compiled {result.pdf} with {result.compiler}")
    elif pdf:
        click.echo("no LaTeX compiler (latexmk or pdflatex) found: wrote the .tex files only")
    if result.disagreeing:
        click.echo(f"symuat: {len(result.disagreeing)} entries disagree with their record: "
                   f"{', '.join(result.disagreeing)}", err=True)
        sys.exit(1)


@main.command("latex")
@click.option("--out", type=click.Path(file_okay=False), required=True, help="Output directory.")
@click.option("--depth", type=int, default=3, show_default=True, help="Largest depth of the DUAT tables.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the exact and float checks.")
@_one_line_errors
def latex_command(out: str, depth: int, seed: int) -> None:
    """Write the LaTeX appendices and main.tex (no compilation)."""
    result = build(out=out, seed=seed, pdf=False, depth=depth)
    click.echo(f"wrote {len(result.files)} files to {out}/")
    _say_if_no_figures()
    if result.disagreeing:
        click.echo(f"symuat: entries disagree with their record: {', '.join(result.disagreeing)}", err=True)
        sys.exit(1)


@main.command("soundness")
@click.option("--sample", type=click.IntRange(min=1), default=20, show_default=True,
              help="Assess every k-th mutant of the proved ledger statements (1 = all, ~15 min).")
@click.option("--depth", type=int, default=3, show_default=True, help="Depth of the mutated substitution table.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the exact and float checks.")
@_one_line_errors
def soundness_command(sample: int, depth: int, seed: int) -> None:
    """Kill rates of each evidence level on systematic mutants of the proved statements."""
    outcomes = [assess(m, seed=seed) for m in ledger_mutants()[::sample]]
    outcomes += table_kill_outcomes(depth, seed=seed)
    click.echo(kill_rates(outcomes).to_text())


if __name__ == "__main__":  # pragma: no cover
    main()
