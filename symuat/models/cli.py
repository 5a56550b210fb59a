r"""``symuat model DIR``: load a local checkpoint, evaluate its DUAT form, compare with the library.

Registered on the main CLI with one ``main.add_command`` line; torch is imported only when it runs.
"""

from __future__ import annotations

import json
import sys
from typing import Optional

import click
import numpy as np

from ..errors import InvalidValueError, ShapeError, SymuatError

__all__ = ["model_command"]


def _input(path: Optional[str], tokens: int, seed: int, width: int) -> np.ndarray:
    if path is None:
        return np.random.default_rng(seed).standard_normal((tokens, width))
    try:
        X = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InvalidValueError(f"cannot read --input {path!r} as a .npy array: {exc}") from None
    if X.ndim != 2 or X.shape[1] != width:
        raise ShapeError(f"--input has shape {X.shape}; the model expects (N, {width}) inputs_embeds")
    if not np.all(np.isfinite(X)):
        raise InvalidValueError("--input has NaN or infinite entries")
    return X.astype(np.float64)


@click.command("model")
@click.argument("directory", type=click.Path())
@click.option("--tokens", type=click.IntRange(min=1), default=8, show_default=True, help="Tokens N (random input).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random input.")
@click.option("--input", "input_path", type=click.Path(), default=None,
              help="A .npy (N, width) inputs_embeds array instead of a random input.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def model_command(directory: str, tokens: int, seed: int, input_path: Optional[str], fmt: str) -> None:
    """Per-layer DUAT reconstruction error and term shares of a local save_pretrained checkpoint."""
    try:
        from transformers.utils import logging as hf_logging

        from .importer import load_pretrained
        from .report import model_report

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()

        model, stack = load_pretrained(directory)
        report = model_report(model, stack, _input(input_path, tokens, seed, stack.width))
    except SymuatError as exc:
        click.echo(f"symuat: error: {exc}", err=True)
        sys.exit(2)
    if fmt == "json":
        click.echo(json.dumps(report.to_json(), indent=2, sort_keys=True))
    else:
        click.echo(report.to_text())
