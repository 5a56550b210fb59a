r"""``symuat sweep`` and ``symuat summary``: a sweep over a prompt file, and its parts ranked across the prompts."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator, Optional

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from ..errors import SymuatError
from .engines import ENGINES
from .options import BY, PATCH, PATCH_MODES
from .summary import summary_text
from .sweep import sweep

__all__ = ["sweep_command", "summary_command"]


class _Rate(ProgressColumn):
    """Prompts per second since the start."""

    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:.2f} prompts/s")


@contextmanager
def _bar(quiet: bool) -> Iterator[tuple]:
    """``(on_start, on_rows)`` driving a rich bar on stderr (prompts/s, ETA); silent without a TTY or with --quiet."""
    if quiet or not sys.stderr.isatty():
        yield None, None
        return
    with Progress(TextColumn("sweeping"), BarColumn(), MofNCompleteColumn(), _Rate(), TimeElapsedColumn(),
                  TextColumn("ETA"), TimeRemainingColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("sweep", total=None)

        def start(total: int, done: int) -> None:
            bar.update(task, total=total, completed=done)
            bar.reset(task, total=total, completed=done)

        def rows(n: int) -> None:
            bar.advance(task, n)

        yield start, rows


def _target(value: str) -> Any:
    if value == "top":
        return value
    try:
        return int(value)
    except ValueError:
        raise click.BadParameter(f"expected 'top' or a token id, got {value!r}") from None


@click.command("sweep")
@click.argument("model_dir", type=click.Path())
@click.option("--prompts", "prompts", required=True, type=click.Path(),
              help="Prompt file: .jsonl ({\"text\": …} or {\"input_ids\": […]}), .parquet or .txt (one per line).")
@click.option("--by", type=click.Choice(BY), default="head", show_default=True, help="The parts of the attribution.")
@click.option("--target", default="top", show_default=True,
              help="'top' (the library's predicted token at the last position) or a token id.")
@click.option("--top", "top", type=click.IntRange(min=0), default=0, show_default=True,
              help="Keep each row's K largest parts, the others summed in 'other' (0 keeps all).")
@click.option("--patch", type=click.Choice(PATCH), default=None,
              help="A patching sweep: patch each (layer, position) of resid/attn/ffn, or each (layer, head), from the "
                   "prompt's run into its 'corrupt' / 'corrupt_ids' run; rows hold the target logit of each patch.")
@click.option("--patch-mode", type=click.Choice(PATCH_MODES), default="recomputed", show_default=True,
              help="recomputed: the network after the patch responds to it; frozen: its dynamic parameters held.")
@click.option("--out", required=True, type=click.Path(), help="The sweep's directory (new, or one to resume).")
@click.option("--engine", type=click.Choice(ENGINES), default="local", show_default=True,
              help="local: a process pool here; serial: this process; ray: Ray Data (pip install 'symuat[ray]').")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Processes or Ray actors  [default: the CPU count, fewer if memory is short]")
@click.option("--address", default=None, help="A Ray cluster's address (--engine ray).")
@click.option("--batch-size", type=click.IntRange(min=1), default=8, show_default=True,
              help="Prompts per task; each finished batch is written at once.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def sweep_command(model_dir: str, prompts: str, by: str, target: str, top: int, patch: Optional[str],
                  patch_mode: str, out: str, engine: str, workers: Optional[int], address: Optional[str],
                  batch_size: int, quiet: bool) -> None:
    """Exact attributions of MODEL_DIR's target logit over every prompt, as a Parquet dataset in OUT/data
    (with --patch: exact activation patching from each prompt into its corrupted run).

    Re-running the same command skips the prompts already done (resume after Ctrl-C or a crash).
    """
    try:
        with _bar(quiet) as (on_start, on_rows):
            result = sweep(model_dir, prompts, out, by=by, target=_target(target), top=top, engine=engine,
                           workers=workers, address=address, batch_size=batch_size, patch=patch,
                           patch_mode=patch_mode, on_start=on_start, on_rows=on_rows)
    except SymuatError as exc:
        click.echo(f"symuat: error: {exc}", err=True)
        sys.exit(2)
    click.echo(str(result))


@click.command("summary")
@click.argument("out", type=click.Path())
@click.option("--top", "top", type=click.IntRange(min=1), default=20, show_default=True, help="Parts to list.")
def summary_command(out: str, top: int) -> None:
    """Rank the parts of the sweep in OUT by their mean magnitude across the prompts."""
    try:
        text = summary_text(out, top)
    except SymuatError as exc:
        click.echo(f"symuat: error: {exc}", err=True)
        sys.exit(2)
    click.echo(text)
