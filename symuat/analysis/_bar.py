r"""A rich progress bar on stderr for the long analyses (chunks of an attribution, layers of a pullback).

Silent without a TTY or when ``quiet``.  (:mod:`symuat.progress` sits above this layer, so the analyses keep their
own few lines of :mod:`rich.progress`.)
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["bar"]


@contextmanager
def bar(quiet: bool, what: str, total: int) -> Iterator[Callable[[str], None]]:
    """Yields ``step(label)``, to call once per unit of ``total``; a bar on stderr unless ``quiet`` or no TTY."""
    if quiet or not sys.stderr.isatty():
        yield lambda label: None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[label]}"), console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(what, total=total, label="")
        yield lambda label: progress.update(task, advance=1, label=label)
