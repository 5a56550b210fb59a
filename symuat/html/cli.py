r"""``symuat html --out DIR``: the audit ledger as a static web site.

Registered on the main CLI with one ``main.add_command`` line.  Errors are one line on stderr, exit code 2;
exit code 1 when a computed status disagrees with its record (the site is written all the same, and says so).
"""

from __future__ import annotations

import sys

import click

from ..errors import SymuatError
from ..latex.figures import plot_available
from ..ledger.text import disagreement
from ..progress import progress
from ..validation import check_path
from .mathml import mathml_available
from .write import write_site

__all__ = ["html_command"]


def _checked_path(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    try:
        return None if value is None else check_path(f"--{param.name}", value)
    except SymuatError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


@click.command("html")
@click.option("--out", type=click.Path(file_okay=False), required=True, help="Output directory of the site.",
              callback=_checked_path)
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the exact and float checks (a non-negative integer).")
@click.option("--derivations", type=click.Path(file_okay=False), default=None,
              callback=_checked_path,
              help="Directory of derivation modules (default: the shipped `derivations` package).")
@click.option("--no-cache", "no_cache", is_flag=True, default=False,
              help="Recompute every entry; neither read nor write the audit cache.")
@click.option("--quiet", "-q", is_flag=True, default=False, help="No progress bar.")
def html_command(out: str, seed: int, derivations: str | None, no_cache: bool, quiet: bool) -> None:
    """Write the audit ledger as a static, offline web site (index, one page per paper version, figures)."""
    try:
        with progress(quiet) as (on_start, on_done):
            records, written = write_site(out, seed=seed, use_cache=not no_cache, derivations=derivations,
                                          on_start=on_start, on_done=on_done)
    except SymuatError as exc:
        click.echo(f"symuat: error: {exc}", err=True)
        sys.exit(2)
    click.echo(f"audited {len(records)} entries; wrote {len(written)} files to {out}/ (open {out}/index.html)")
    if not mathml_available():
        click.echo("latex2mathml is not installed (pip install 'symuat[html]'): formulas are shown as LaTeX source")
    if not plot_available():
        click.echo("matplotlib is not installed (pip install 'symuat[plot]'): wrote the site without figures")
    line = disagreement(records)
    if line:
        click.echo(line, err=True)
        sys.exit(1)
