r"""``symuat model DIR``: load a local checkpoint, evaluate its DUAT form, compare with the library;
``symuat families``: the families it reads.

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

from ..errors import InvalidValueError, ShapeError, SymuatError, UnsupportedError
from ..numeric.backend import to_numpy

__all__ = ["model_command", "families_command"]


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


def _one_stack(directory: str) -> None:
    """``symuat model`` reports one stack: an encoder–decoder checkpoint (T5) is refused before any weight is read.
    A missing or unreadable config is left to the loader, whose error names what is wrong."""
    try:
        config = json.loads((Path(directory) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(config, dict) and config.get("is_encoder_decoder") is True:
        raise UnsupportedError(f"{directory!r} is an encoder–decoder ({config.get('model_type')}): `symuat model` "
                               "reports one stack; evaluate it from Python with symuat.models.load(directory)"
                               ".duat_form(input_ids=..., decoder_input_ids=...) (docs/models.md)")


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
@click.option("--text", default=None, help="Real text (the checkpoint's tokenizer) instead of a random input.")
@click.option("--pair", default=None,
              help="A second text B with as many tokens: report B's output under the text's frozen parameters.")
@click.option("--shares", type=click.Choice(["signed", "norm"]), default="signed", show_default=True,
              help="signed <t,x>/||x||^2 (sum to 1) or ||t||/||x|| term shares.")
@click.option("--plot", "plot_path", type=click.Path(), default=None,
              help="Draw term x layer, source x token, head x layer and attention to FILE (.png/.svg/.pdf).")
@click.option("--layer", type=int, default=0, show_default=True, help="Layer of the attention panel (0-based).")
@click.option("--head", type=int, default=0, show_default=True, help="Head of the attention panel (0-based).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--layers", type=int, default=None,
              help="Load only the first K layers (final norm kept, no LM head): a prefix of a big model.")
@click.option("--device", default=None,
              help="Evaluate the DUAT form with the torch backend on this device (cpu, cuda, cuda:1, ...) in float64; "
                   "default: NumPy.")
def model_command(directory: str, tokens: Optional[int], seed: int, input_path: Optional[str], text: Optional[str],
                  pair: Optional[str], shares: str, plot_path: Optional[str], layer: int, head: int,
                  fmt: str, layers: Optional[int], device: Optional[str]) -> None:
    """Per-layer DUAT reconstruction error and term shares of a local save_pretrained checkpoint."""
    try:
        from transformers.utils import logging as hf_logging

        from ._torch import sharing
        from .importer import load_pretrained
        from .report import model_report

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        if device is not None:
            from .device import check_device

            device = check_device(device)  # a bad device is refused before any weight is read

        _one_stack(directory)
        if text is None and (pair is not None):
            raise InvalidValueError("--pair needs --text (B is compared with the text's frozen parameters)")
        if text is None:
            X = _input(directory, input_path, tokens, seed)
            if layers is not None:
                from .prefix import prefix_config

                prefix_config(directory, layers)  # --layers checked before the input is drawn or weights are read
            with sharing():  # the command owns the model: the stack uses the library's tensors, no second copy
                if layers is None:
                    library, stack = load_pretrained(directory)
                else:
                    from .prefix import load_prefix

                    library, stack = load_prefix(directory, layers)
            report = model_report(library, stack, X, shares=shares, device=device)
            if plot_path is not None:
                from ..numeric import duat_form

                duat_form(stack, X).plot(plot_path, layer=layer, head=head)
            extra: dict = {}
        else:
            if input_path is not None or tokens is not None:
                raise InvalidValueError("--text excludes --input and --tokens (the text fixes the input)")
            report, extra = _text_report(directory, text, pair, shares, plot_path, layer, head, layers, device)
        out = _json(report, extra) if fmt == "json" else report.to_text() + _extra_text(extra)
    except SymuatError as exc:
        click.echo(f"symuat: error: {exc}", err=True)
        sys.exit(2)
    click.echo(out)


def _text_report(directory, text, pair, shares, plot_path, layer, head, layers=None, device=None):
    from .model import load
    from .report import model_report

    model = load(directory, layers=layers, device=device, out_of_core=False)  # the report runs the library
    if model.tokenizer is None:
        raise InvalidValueError(f"{directory!r} has no tokenizer: --text needs one")
    form = model.duat_form(text=text)
    toks = form.to_str_tokens()  # the tokens the form was made from
    report = model_report(model.library, model.stack, to_numpy(form.X0), shares=shares, device=device)
    form = form.to_numpy() if pair is not None or plot_path is not None else form  # the analyses run on NumPy
    extra: dict = {"tokens": toks}
    if pair is not None:
        form_b = model.duat_form(text=pair).to_numpy()
        if form_b.X0.shape != form.X0.shape:
            raise ShapeError(f"--pair has {form_b.X0.shape[0]} tokens, --text {form.X0.shape[0]}: the frozen "
                             "parameters of one input apply to inputs of the same length")
        Fb = form.frozen("live")(form_b.X0)
        rel = np.linalg.norm(Fb - form_b.output, axis=1) / np.maximum(np.linalg.norm(form_b.output, axis=1), 1e-300)
        extra["pair"] = {"tokens": form_b.to_str_tokens(), "relative_change_per_token": [float(r) for r in rel]}
    if plot_path is not None:
        form.plot(plot_path, layer=layer, head=head)  # labelled with the form's tokens
    return report, extra


def _extra_text(extra: dict) -> str:
    lines = []
    if "tokens" in extra:
        lines.append("tokens: " + " ".join(extra["tokens"]))
    if "pair" in extra:
        rel = "  ".join(f"{r:.3f}" for r in extra["pair"]["relative_change_per_token"])
        lines.append("pair B under the text's frozen parameters (the DUAT function with A's H_h and norms):")
        lines.append(f"  ||F_A(x_B) - x_B|| / ||x_B|| per token: {rel}")
    return "".join("\n" + line for line in lines)


def _json(report, extra: Optional[dict] = None) -> str:
    try:
        return json.dumps({**report.to_json(), **(extra or {})}, indent=2, sort_keys=True, allow_nan=False)
    except ValueError as exc:  # a non-finite number: model_report refuses them first; never write bare NaN
        raise InvalidValueError(f"the report holds a non-finite number: {exc}") from None


@click.command("families")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def families_command(fmt: str) -> None:
    """List the transformers families symuat reads exactly, the transformers versions tested, and the options each
    refuses by name (no torch needed)."""
    from .families import families_json, families_text

    click.echo(families_text() if fmt == "text" else json.dumps(families_json(), indent=2, ensure_ascii=False))
