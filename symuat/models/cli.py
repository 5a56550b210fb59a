r"""``symuat model DIR``: load a local checkpoint, evaluate its DUAT form, compare with the library.

Registered on the main CLI with one ``main.add_command`` line; torch is imported only when it runs.
Every option is validated before the model is loaded or run (from the checkpoint's config alone); every
failure is one ``symuat: error:`` line and exit code 2; JSON never holds a bare ``NaN``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import click
import numpy as np

from ..errors import InvalidValueError, ShapeError, SymuatError

__all__ = ["model_command"]


def _read_input(path: str, width: int, limit: int) -> np.ndarray:
    p = Path(path)
    if not p.is_file():
        raise InvalidValueError(f"--input {path!r} is not a file")
    try:
        X = np.load(p, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise InvalidValueError(f"cannot read --input {path!r} as a .npy array: {exc}") from None
    if not isinstance(X, np.ndarray):
        X.close()
        raise InvalidValueError(f"--input {path!r} is an .npz archive; give one .npy array (np.save)")
    if X.dtype.kind not in "fiu":
        raise InvalidValueError(f"--input has dtype {X.dtype}; expected real numbers (inputs_embeds)")
    if X.ndim != 2 or X.shape[1] != width:
        raise ShapeError(f"--input has shape {X.shape}; the model expects (N, {width}) inputs_embeds")
    if X.shape[0] < 1:
        raise ShapeError(f"--input has no tokens (shape {X.shape})")
    if X.shape[0] > limit:
        raise ShapeError(f"--input has {X.shape[0]} tokens; the model covers at most {limit} positions")
    X = X.astype(np.float64)
    if not np.all(np.isfinite(X)):
        raise InvalidValueError("--input has NaN or infinite entries")
    return X


def _input(directory: str, path: Optional[str], tokens: Optional[int], seed: int) -> np.ndarray:
    from .importer import checkpoint_shape

    if seed < 0:
        raise InvalidValueError(f"--seed must be >= 0, got {seed}")
    if path is not None and tokens is not None:
        raise InvalidValueError("--tokens and --input exclude each other (the input file fixes N)")
    width, limit = checkpoint_shape(directory)
    if path is not None:
        return _read_input(path, width, limit)
    tokens = 8 if tokens is None else tokens
    if not 1 <= tokens <= limit:
        raise InvalidValueError(f"--tokens must be between 1 and {limit} (the model's positions), got {tokens}")
    return np.random.default_rng(seed).standard_normal((tokens, width))


@click.command("model")
@click.argument("directory", type=click.Path())
@click.option("--tokens", type=int, default=None, help="Tokens N of the random input  [default: 8]")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random input (>= 0).")
@click.option("--input", "input_path", type=click.Path(), default=None,
              help="A .npy (N, width) inputs_embeds array instead of a random input.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def model_command(directory: str, tokens: Optional[int], seed: int, input_path: Optional[str], fmt: str) -> None:
    """Per-layer DUAT reconstruction error and term shares of a local save_pretrained checkpoint."""
    try:
        from transformers.utils import logging as hf_logging

        from ._torch import sharing
        from .importer import load_pretrained
        from .report import model_report

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()

        X = _input(directory, input_path, tokens, seed)
        with sharing():  # the command owns the model: the stack uses the library's tensors, no second copy
            model, stack = load_pretrained(directory)
        report = model_report(model, stack, X)
        text = _json(report) if fmt == "json" else report.to_text()
    except SymuatError as exc:
        click.echo(f"symuat: error: {exc}", err=True)
        sys.exit(2)
    click.echo(text)


def _json(report) -> str:
    try:
        return json.dumps(report.to_json(), indent=2, sort_keys=True, allow_nan=False)
    except ValueError as exc:  # a non-finite number: model_report refuses them first; never write bare NaN
        raise InvalidValueError(f"the report holds a non-finite number: {exc}") from None
