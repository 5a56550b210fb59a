r"""Progress on stderr for the commands: a rich bar while entries are audited, a spinner for a step.

Silent without a TTY or with ``--quiet``.  No auto-refresh thread: the audit forks processes, which must not
inherit a running thread.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["Callbacks", "progress", "status"]

Callbacks = tuple[Callable[[int], None] | None, Callable[[str], None] | None]


@contextmanager
def progress(quiet: bool, what: str = "auditing") -> Iterator[Callbacks]:
    """A rich progress bar on stderr (``on_start(n)``, ``on_done(label)``); silent without a TTY or with --quiet."""
    if quiet or not sys.stderr.isatty():
        yield None, None
        return
    # no auto-refresh thread: the audit forks worker processes, which must not inherit a running thread
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[entry]}"), console=Console(stderr=True), transient=True,
                  auto_refresh=False, redirect_stdout=False, redirect_stderr=False) as bar:
        task = bar.add_task(what, total=None, entry="", visible=False)

        def start(n: int) -> None:
            bar.update(task, total=n, visible=n > 0)
            bar.refresh()

        def done(entry_id: str) -> None:
            bar.update(task, advance=1, entry=entry_id)
            bar.refresh()

        yield start, done


@contextmanager
def status(quiet: bool, message: str) -> Iterator[None]:
    """A spinner on stderr for a step of unknown length; silent when stderr is no TTY or with --quiet."""
    if quiet or not sys.stderr.isatty():
        yield
        return
    with Console(stderr=True).status(message):
        yield
