r"""The ``symuat`` command line.

``symuat audit`` recomputes every ledger entry (or takes it from the audit cache,
:mod:`symuat.ledger.cache`) and prints the ledger (a table with a legend, or the
JSON ledger with ``--format json``); it exits 1 when a computed status disagrees
with the recorded one.  ``symuat explain ID`` prints one entry in full.  Every :class:`~symuat.errors.SymuatError`
is printed as one line on stderr with exit code 2.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from dataclasses import replace
from functools import wraps
from pathlib import Path

import click

from .build import build, compile_pdf
from .derive_format import table_latex, table_text
from .errors import InvalidValueError, SymuatError
from .expansion import substitution_table, verify_depth
from .latex.figures import plot_available
from .ledger.audit import AuditRecord, check_seed, computed_summary, ledger_json, summary
from .ledger.coverage import coverage
from .ledger.isolation import audit_isolated
from .ledger.text import LEGEND, explain, table
from .progress import progress, status
from .soundness import assess, kill_rates, ledger_mutants
from .soundness.kill_rate import table_kill_outcomes
from .validation import check_path

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


def _records(derivations: str | None, seed: int, *, only: tuple[str, ...] = (), cache: bool = True,
             quiet: bool = False, coq: bool = True) -> tuple[AuditRecord, ...]:
    """The audit, run in a child process: derivation code cannot end the command or write to its stdout."""
    with progress(quiet) as (on_start, on_done):
        return audit_isolated(directory=derivations, seed=seed, only=only, use_cache=cache,
                              on_start=on_start, on_done=on_done, coq=coq)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "none"


def _summary_line(records: tuple[AuditRecord, ...]) -> str:
    """``computed: proved 9, refuted 2; recorded: proved 11; 11 entries``: the computed statuses first."""
    return (f"computed: {_counts(computed_summary(records))}; recorded: {_counts(summary(records))}; "
            f"{len(records)} entries")


def _report_disagreements(records) -> None:
    disagreeing = [r.entry.id for r in records if not r.agrees]
    if disagreeing:
        click.echo(f"symuat: {len(disagreeing)} entries disagree with their record: {', '.join(disagreeing)}",
                   err=True)
        sys.exit(1)


def _path(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A path option: non-empty, without NUL, not over the system's length limits."""
    if value is None:
        return None
    try:
        return check_path(f"--{param.name}", value)
    except SymuatError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


_seed_option = click.option("--seed", type=int, default=0, show_default=True,
                            help="Seed of the exact and float checks (a non-negative integer).")
_derivations_option = click.option("--derivations", type=click.Path(file_okay=False), default=None, callback=_path,
                                   help="Directory of derivation modules (default: the shipped `derivations` package).")
#: Largest depths accepted: ``derive`` prints O(L^2) terms (L = 64: 0.3 MB in 3 s); the document's table is smaller.
MAX_DERIVE_DEPTH, MAX_DOCUMENT_DEPTH = 64, 16
_cache_option = click.option("--no-cache", "no_cache", is_flag=True, default=False,
                             help="Recompute every entry; neither read nor write the audit cache.")
_quiet_option = click.option("--quiet", "-q", is_flag=True, default=False, help="No progress bar.")
_coq_option = click.option("--no-coq", "no_coq", is_flag=True, default=False,
                           help="Leave the Coq level out (no compile): each linked theorem is undecided, and the "
                                "other levels decide the status.")


#: commands defined by the layers above the ledger: ``name → "module:attribute"``, imported when first used (click's
#: lazily loaded subcommands), so that ``symuat audit`` does not import torch's importers, the site or the sweep
_LAZY = {
    "model": "symuat.models.cli:model_command",
    "families": "symuat.models.cli:families_command",
    "html": "symuat.html.cli:html_command",
    "sweep": "symuat.sweep.cli:sweep_command",
    "summary": "symuat.sweep.cli:summary_command",
}


class _Group(click.Group):
    """The ``symuat`` group: every usage error (unknown option, bad value, missing argument) is one line, exit 2;
    the commands of :data:`_LAZY` are imported when they are used or listed."""

    def list_commands(self, ctx) -> list:
        return sorted({*super().list_commands(ctx), *_LAZY})

    def get_command(self, ctx, name):
        if name in _LAZY and name not in self.commands:
            module, attribute = _LAZY[name].split(":")
            self.add_command(getattr(importlib.import_module(module), attribute), name)
        return super().get_command(ctx, name)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as exc:
            click.echo(f"symuat: error: {' '.join(exc.format_message().split())}", err=True)
            sys.exit(2)
        except click.ClickException as exc:
            click.echo(f"symuat: error: {' '.join(exc.format_message().split())}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("symuat: aborted", err=True)
            sys.exit(1)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=_Group)
@click.version_option(package_name="symuat")
def main() -> None:
    """Machine-checked audit of the Dynamic Universal Approximation Theory paper."""


@main.command("audit")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="Output format: a table, or the JSON ledger object.")
@click.option("--only", "only", multiple=True, metavar="PATTERN",
              help="Audit only the matching entries: an id, an id prefix (duat:eq13 selects duat:eq13.step1, ...) "
                   "or a glob (quote it: 'duat:fig*'); repeatable.")
@_seed_option
@_derivations_option
@_cache_option
@_coq_option
@_quiet_option
@_one_line_errors
def audit_command(fmt: str, only: tuple[str, ...], seed: int, derivations: str | None, no_cache: bool,
                  no_coq: bool, quiet: bool) -> None:
    """Recompute every ledger entry; exit 1 if a computed status disagrees with its record."""
    records = _records(derivations, seed, only=only, cache=not no_cache, quiet=quiet, coq=not no_coq)
    if fmt == "json":
        click.echo(json.dumps(ledger_json(records), indent=2, sort_keys=False, ensure_ascii=False))
    else:
        click.echo(table(records))
        click.echo("\n" + _summary_line(records) + (" (the Coq level left out: coq ? on each linked theorem)"
                                                     if no_coq else "") + "\n")
        click.echo(LEGEND)
        if not only:
            click.echo("\n" + coverage(r.entry for r in records).to_text())
    _report_disagreements(records)


@main.command("explain")
@click.argument("entry_id", metavar="ID")
@_seed_option
@_derivations_option
@_cache_option
@_quiet_option
@_one_line_errors
def explain_command(entry_id: str, seed: int, derivations: str | None, no_cache: bool, quiet: bool) -> None:
    """Print one entry: statement as printed, each level's verdict, counterexample and correction.

    ID may leave out its version prefix (``eq11.part2.rule4``) when one version only has that place.
    """
    if ":" in entry_id:
        records = _records(derivations, seed, only=(entry_id,), cache=not no_cache, quiet=quiet)
        exact = [r for r in records if r.entry.id == entry_id]
    else:
        try:
            records = _records(derivations, seed, only=(f"*:{entry_id}", f"*:{entry_id}.*"), cache=not no_cache,
                               quiet=quiet)
        except InvalidValueError:
            raise InvalidValueError(f"no ledger entry has the place {entry_id!r} in any version; give an id with "
                                    "its version prefix, such as duat:eq11") from None
        exact = [r for r in records if r.entry.id.split(":", 1)[1] == entry_id]
        if len(exact) > 1:
            raise InvalidValueError(f"the place {entry_id!r} is in several versions; give one of "
                                    + ", ".join(r.entry.id for r in exact))
    if not exact:
        raise InvalidValueError(f"no ledger entry has the id {entry_id!r}; entries under it: "
                                + ", ".join(r.entry.id for r in records))
    click.echo(explain(exact[0]))
    _report_disagreements(exact)


@main.command("derive")
@click.option("--depth", type=click.IntRange(1, MAX_DERIVE_DEPTH), default=3, show_default=True,
              help=f"Number of layers L (1 to {MAX_DERIVE_DEPTH}).")
@click.option("--format", "fmt", type=click.Choice(["text", "latex"]), default="text", show_default=True,
              help="Plain text, or a complete LaTeX align* environment (needs amsmath and latex/symuat-macros.tex).")
@click.option("--verify/--no-verify", default=True, show_default=True,
              help="Check every layer's substitution locally (polynomial in L).")
@_one_line_errors
def derive_command(depth: int, fmt: str, verify: bool) -> None:
    """Print the DUAT form of an L-layer residual network and its substitution table (seed 001 Fig. 2)."""
    table = substitution_table(depth)
    click.echo(table_text(table) if fmt == "text" else table_latex(table))
    if verify:
        result = verify_depth(depth, table)
        click.echo(f"% verified layer by layer: {'holds' if result.holds else 'FAILS'}", err=not result.holds)
        if not result.holds:
            sys.exit(1)


def _say_if_no_figures() -> None:
    if not plot_available():
        click.echo("matplotlib is not installed (pip install 'symuat[plot]'): wrote the document without figures")


@main.command("build")
@click.option("--out", type=click.Path(file_okay=False), default="latex", show_default=True, callback=_path,
              help="Output directory for the LaTeX appendices, main.tex and ledger.json.")
@_seed_option
@click.option("--pdf/--no-pdf", default=True, show_default=True, help="Compile main.tex when TeX is installed.")
@click.option("--depth", type=click.IntRange(1, MAX_DOCUMENT_DEPTH), default=3, show_default=True,
              help=f"Largest depth of the DUAT tables (1 to {MAX_DOCUMENT_DEPTH}).")
@_derivations_option
@_cache_option
@_quiet_option
@_one_line_errors
def build_command(out: str, seed: int, pdf: bool, depth: int, derivations: str | None, no_cache: bool,
                  quiet: bool) -> None:
    """The main job: audit the ledger, write the LaTeX appendices, compile them to PDF.

    With --derivations DIR the document is that paper's appendix: its title, authors, entries and errata.
    """
    with progress(quiet) as (on_start, on_done):
        result = build(out=out, seed=seed, pdf=False, depth=depth, use_cache=not no_cache, on_start=on_start,
                       on_done=on_done, derivations=derivations)
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
    _report_disagreements(result.records)


@main.command("latex")
@click.option("--out", type=click.Path(file_okay=False), required=True, callback=_path, help="Output directory.")
@click.option("--depth", type=click.IntRange(1, MAX_DOCUMENT_DEPTH), default=3, show_default=True,
              help=f"Largest depth of the DUAT tables (1 to {MAX_DOCUMENT_DEPTH}).")
@_seed_option
@_derivations_option
@_cache_option
@_quiet_option
@_one_line_errors
def latex_command(out: str, depth: int, seed: int, derivations: str | None, no_cache: bool, quiet: bool) -> None:
    """Write the LaTeX appendices and main.tex (no compilation); --derivations DIR: that paper's appendix."""
    with progress(quiet) as (on_start, on_done):
        result = build(out=out, seed=seed, pdf=False, depth=depth, use_cache=not no_cache, on_start=on_start,
                       on_done=on_done, derivations=derivations)
    click.echo(f"wrote {len(result.files)} files to {out}/")
    _say_if_no_figures()
    _report_disagreements(result.records)


@main.command("soundness")
@click.option("--sample", type=click.IntRange(min=1), default=20, show_default=True,
              help="Assess every k-th mutant of the proved ledger statements (1 = all, ~15 min).")
@click.option("--depth", type=click.IntRange(1, 6), default=3, show_default=True,
              help="Depth of the mutated substitution table (1 to 6).")
@_seed_option
@_quiet_option
@_one_line_errors
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



if __name__ == "__main__":  # pragma: no cover
    main()
