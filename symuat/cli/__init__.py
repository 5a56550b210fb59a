r"""The ``symuat`` command line.

``symuat audit`` recomputes every ledger entry (or takes it from the audit cache,
:mod:`symuat.ledger.cache`) and prints the ledger (a table with a legend, or the
JSON ledger with ``--format json``); it exits 1 when a computed status disagrees
with the recorded one.  ``symuat explain ID`` prints one entry in full.  Every :class:`~symuat.errors.SymuatError`
is printed as one line on stderr with exit code 2.

The ledger's commands are here; every other command is imported when it is first used (:data:`_LAZY`): the paper's
document and table (:mod:`symuat.cli.paper`), the model importers, the site and the sweep.  A warm
``symuat audit`` imports none of them.
"""

from __future__ import annotations

import gc
import importlib
import json
import sys

import click

from ..errors import InvalidValueError
from ..ledger.audit import AuditRecord, computed_summary, ledger_json, summary
from ..ledger.cache import id_matches
from ..ledger.coverage import coverage
from ..ledger.text import LEGEND, explain, table
from .common import (
    audit_records,
    cache_option,
    coq_option,
    derivations_option,
    one_line_errors,
    quiet_option,
    report_disagreements,
    seed_option,
    stdout_to_devnull,
)

__all__ = ["main", "run"]


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "none"


def _summary_line(records: tuple[AuditRecord, ...]) -> str:
    """``computed: proved 9, refuted 2; recorded: proved 11; 11 entries``: the computed statuses first."""
    return (f"computed: {_counts(computed_summary(records))}; recorded: {_counts(summary(records))}; "
            f"{len(records)} {'entry' if len(records) == 1 else 'entries'}")


def _some(ids, limit: int = 10) -> str:
    """The first ``limit`` of ``ids``, comma-separated, and how many more."""
    ids = list(ids)
    return ", ".join(ids[:limit]) + (f", … and {len(ids) - limit} more" if len(ids) > limit else "")


#: commands imported when first used (click's lazily loaded subcommands): ``name → "module:attribute"``, so that
#: ``symuat audit`` imports neither the document's build, nor torch's importers, the site or the sweep
_LAZY = {
    "derive": "symuat.cli.paper:derive_command",
    "build": "symuat.cli.paper:build_command",
    "latex": "symuat.cli.paper:latex_command",
    "soundness": "symuat.cli.paper:soundness_command",
    "model": "symuat.models.cli:model_command",
    "families": "symuat.models.cli:families_command",
    "html": "symuat.html.cli:html_command",
    "sweep": "symuat.sweep.cli:sweep_command",
    "summary": "symuat.sweep.cli:summary_command",
}


#: click's "no arguments given, show the help" (click >= 8.2; older releases print the help themselves).
_NO_ARGS = getattr(click.exceptions, "NoArgsIsHelpError", ())


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
        except _NO_ARGS as exc:  # ``symuat`` alone: the help, as ``symuat --help`` prints it
            click.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
            sys.exit(0)
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


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="symuat")
def main() -> None:
    """Machine-checked audit of the Dynamic Universal Approximation Theory paper."""


@main.command("audit")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="Output format: a table, or the JSON ledger object.")
@click.option("--only", "only", multiple=True, metavar="PATTERN",
              help="Audit only the matching entries: an id, an id prefix (duat:eq13 selects duat:eq13.step1, ...) "
                   "or a glob (quote it: 'duat:fig*'); repeatable.")
@seed_option
@derivations_option
@cache_option
@coq_option
@quiet_option
@one_line_errors
def audit_command(fmt: str, only: tuple[str, ...], seed: int, derivations: str | None, no_cache: bool,
                  no_coq: bool, quiet: bool) -> None:
    """Recompute every ledger entry; exit 1 if a computed status disagrees with its record."""
    records = audit_records(derivations, seed, only=only, cache=not no_cache, quiet=quiet, coq=not no_coq)
    unmatched = [p for p in only if not any(id_matches(r.entry.id, p) for r in records)]
    if unmatched:  # with another pattern that matches: a typo would pass unseen
        raise InvalidValueError(f"no ledger entry matches {', '.join(map(repr, unmatched))}")
    if fmt == "json":
        click.echo(json.dumps(ledger_json(records), indent=2, sort_keys=False, ensure_ascii=False))
    else:
        click.echo(table(records))
        click.echo("\n" + _summary_line(records) + (" (the Coq level left out: coq ? on each linked theorem)"
                                                     if no_coq else "") + "\n")
        click.echo(LEGEND)
        if not only:
            click.echo("\n" + coverage(r.entry for r in records).to_text())
    report_disagreements(records)


@main.command("explain")
@click.argument("entry_id", metavar="ID")
@seed_option
@derivations_option
@cache_option
@quiet_option
@one_line_errors
def explain_command(entry_id: str, seed: int, derivations: str | None, no_cache: bool, quiet: bool) -> None:
    """Print one entry: statement as printed, each level's verdict, counterexample and correction.

    ID may leave out its version prefix (``eq11.part2.rule4``) when one version only has that place.
    """
    if any(c in entry_id for c in "*?["):
        raise InvalidValueError(f"symuat explain takes one id, not a pattern: {entry_id!r} (symuat audit --only "
                                "PATTERN lists the entries a pattern selects)")
    if ":" in entry_id:
        records = audit_records(derivations, seed, only=(entry_id,), cache=not no_cache, quiet=quiet)
        exact = [r for r in records if r.entry.id == entry_id]
    else:
        try:
            records = audit_records(derivations, seed, only=(f"*:{entry_id}", f"*:{entry_id}.*"), cache=not no_cache,
                                    quiet=quiet)
        except InvalidValueError:
            raise InvalidValueError(f"no ledger entry has the place {entry_id!r} in any version; give an id with "
                                    "its version prefix, such as duat:eq11") from None
        exact = [r for r in records if r.entry.id.split(":", 1)[1] == entry_id]
        if len(exact) > 1:
            raise InvalidValueError(f"the place {entry_id!r} is in several versions; give one of "
                                    + _some(r.entry.id for r in exact))
    if not exact:
        raise InvalidValueError(f"no ledger entry has the id {entry_id!r}; entries under it: "
                                + _some(r.entry.id for r in records))
    click.echo(explain(exact[0]))
    report_disagreements(exact)


def run() -> None:
    """The ``symuat`` program (and ``python -m symuat.cli``): :func:`main`, after which the process ends.

    Before it ends, every object still alive is frozen (``gc.freeze``): the interpreter's last garbage collection
    then skips the SymPy and NumPy heap of the command (0.1 to 0.2 s of a 1 s warm ``symuat audit``).  Objects are
    still freed, and the standard streams flushed, as at any exit; only finalizers of objects in reference cycles,
    which Python never promises to run at exit, may not run.  Called in-process (tests), :func:`main` freezes
    nothing.

    Standard output that cannot be written is one error line on stderr, exit 2 (closed, a full disk); a reader
    that stops reading (``symuat audit | head``) ends the command quietly with 141, as a pipe's writer killed by
    ``SIGPIPE`` would.
    """
    try:
        if sys.stdout is None:
            click.echo("symuat: error: the standard output is closed", err=True)
            sys.exit(2)
        try:
            main()
        finally:
            sys.stdout.flush()  # a write error shows now, not as a warning at exit
    except BrokenPipeError:
        stdout_to_devnull()
        sys.exit(141)
    except OSError as exc:
        stdout_to_devnull()
        click.echo(f"symuat: error: cannot write the output: {exc.strerror or exc}", err=True)
        sys.exit(2)
    finally:
        gc.freeze()
