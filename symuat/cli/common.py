r"""What the commands of ``symuat`` share: their options, the audit in a child process, the one-line errors."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextlib import suppress
from functools import wraps

import click

from ..errors import SymuatError
from ..ledger.audit import AuditRecord
from ..ledger.isolation import audit_isolated
from ..ledger.text import disagreement
from ..progress import progress
from ..validation import check_path

__all__ = ["one_line_errors", "stdout_to_devnull", "audit_records", "report_disagreements", "checked_path",
           "seed_option", "derivations_option", "cache_option", "quiet_option", "coq_option", "MAX_DERIVE_DEPTH",
           "MAX_DOCUMENT_DEPTH"]


def one_line_errors(command: Callable) -> Callable:
    """Every :class:`~symuat.errors.SymuatError` of ``command`` is one line on stderr, exit code 2; a reader that
    stops reading its output (``symuat audit | head``) ends it quietly with 141, as a pipe's writer killed by
    ``SIGPIPE`` would (click's own answer, exit 1, would read as "a status disagrees")."""

    @wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except SymuatError as exc:
            click.echo(f"symuat: error: {exc}", err=True)
            sys.exit(2)
        except BrokenPipeError:
            stdout_to_devnull()
            sys.exit(141)

    return wrapper


def stdout_to_devnull() -> None:
    """Standard output replaced by ``/dev/null``: what is still buffered for it is dropped, not flushed at exit."""
    with suppress(OSError, ValueError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


def audit_records(derivations: str | None, seed: int, *, only: tuple[str, ...] = (), cache: bool = True,
                  quiet: bool = False, coq: bool = True) -> tuple[AuditRecord, ...]:
    """The audit, run in a child process: derivation code cannot end the command or write to its stdout."""
    with progress(quiet) as (on_start, on_done):
        return audit_isolated(directory=derivations, seed=seed, only=only, use_cache=cache,
                              on_start=on_start, on_done=on_done, coq=coq)


def report_disagreements(records) -> None:
    """Exit 1, naming them, when computed statuses disagree with their records
    (:func:`~symuat.ledger.text.disagreement`)."""
    line = disagreement(records)
    if line:
        click.echo(line, err=True)
        sys.exit(1)


def checked_path(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A path option: non-empty, without NUL, not over the system's length limits."""
    if value is None:
        return None
    try:
        return check_path(f"--{param.name}", value)
    except SymuatError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


seed_option = click.option("--seed", type=int, default=0, show_default=True,
                           help="Seed of the exact and float checks (a non-negative integer).")
derivations_option = click.option("--derivations", type=click.Path(file_okay=False), default=None,
                                  callback=checked_path,
                                  help="Directory of derivation modules (default: the shipped `derivations` package).")
#: Largest depths accepted: ``derive`` prints O(L^2) terms (L = 64: 0.3 MB in 3 s); the document's table is smaller.
MAX_DERIVE_DEPTH, MAX_DOCUMENT_DEPTH = 64, 16
cache_option = click.option("--no-cache", "no_cache", is_flag=True, default=False,
                            help="Recompute every entry; neither read nor write the audit cache.")
quiet_option = click.option("--quiet", "-q", is_flag=True, default=False, help="No progress bar.")
coq_option = click.option("--no-coq", "no_coq", is_flag=True, default=False,
                          help="Leave the Coq level out (no compile): each linked theorem is undecided, and the "
                               "other levels decide the status.")
