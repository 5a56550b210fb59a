r"""The check for large models: every layer of the DUAT form against the per-layer library reference (issue 30).

:func:`check_layers` evaluates the form of ``model`` at one row of ids, keeping each box's value (box :math:`i` is
the residual stream after layer :math:`i`, ``duat_form(..., on_box=...)``), and compares it with
:func:`~symuat.models.layer_reference`, the library's own decoder layers run one at a time in float64 from the
checkpoint.  Neither computation shares the other's code: the form is symuat's table of structured operators, the
reference is transformers' modules.  The error of layer :math:`i` is the largest relative row error
:math:`\max_t \|f_t - r_t\| / \|r_t\|` (the definition of ``benchmarks/``); the check passes when every layer's
error is at most ``tol`` (NaN never passes).  It works for an out-of-core model (its layers are read once for the
form and once for the reference, one at a time) and for one in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Tuple

import numpy as np

from ..errors import InvalidValueError
from ..numeric import duat_form
from .layer_reference import layer_reference

__all__ = ["LayerCheck", "check_layers", "layer_errors", "form_layers"]


@dataclass(frozen=True)
class LayerCheck:
    r"""Per-layer errors of a form against the library reference.

    Attributes
    ----------
    errors : tuple of float
        ``errors[i]``: layer ``i`` (0-based), max over tokens of the relative row error.
    tol : float
    """

    errors: Tuple[float, ...]
    tol: float

    def __post_init__(self) -> None:
        if not self.errors:
            raise InvalidValueError("a layer check needs at least one layer")
        if not self.tol > 0:
            raise InvalidValueError(f"tol={self.tol!r}: expected a positive number")

    @property
    def passed(self) -> bool:
        """Every layer within ``tol`` (a NaN fails)."""
        return all(e <= self.tol for e in self.errors)

    @property
    def worst(self) -> int:
        """The layer with the largest error (a NaN counts as the largest): the witness of a failed check."""
        return int(np.argmax([np.inf if np.isnan(e) else e for e in self.errors]))

    def __repr__(self) -> str:
        return (f"LayerCheck({len(self.errors)} layers, max error {max(self.errors):.1e} at layer {self.worst}, "
                f"tol {self.tol:.0e}: {'passed' if self.passed else 'FAILED'})")


def layer_errors(form_outputs: Any, reference_outputs: Any) -> Tuple[float, ...]:
    r"""Per layer, :math:`\max_t \|f_t - r_t\| / \|r_t\|` of two sequences of (N, M) arrays."""
    if len(form_outputs) != len(reference_outputs):
        raise InvalidValueError(f"{len(form_outputs)} form layers, {len(reference_outputs)} reference layers")
    out = []
    for f, r in zip(form_outputs, reference_outputs):
        f, r = np.asarray(f), np.asarray(r)
        if f.shape != r.shape:
            raise InvalidValueError(f"a form layer of shape {f.shape}, its reference {r.shape}")
        den = np.maximum(np.linalg.norm(r, axis=1), np.finfo(float).tiny)
        out.append(float(np.max(np.linalg.norm(f - r, axis=1) / den)))
    return tuple(out)


def form_layers(model: Any, input_ids: Any) -> Tuple[np.ndarray, ...]:
    r"""The DUAT form's layer outputs (boxes :math:`1..L`, each (N, M)) of ``model`` at one row of ids (default
    positions), from one evaluation."""
    ids = np.asarray(input_ids)
    if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iu":
        raise InvalidValueError(f"input_ids of shape {ids.shape} and dtype {ids.dtype}: expected a non-empty 1-D "
                                "row of ints")
    X = model.inputs_embeds(ids, None)
    N, L = ids.size, model.stack.depth
    boxes: dict = {}

    def keep(i, lin, bias, terms):
        if i <= L:
            x = lin + bias
            for t in terms:
                x = x + t
            boxes[i] = x.reshape(N, -1)

    duat_form(model.stack, X, on_box=keep)
    if model.out_of_core:
        model.stack.blocks.release()
    return tuple(boxes[i] for i in range(1, L + 1))


def check_layers(model: Any, input_ids: Any, directory: Optional[Any] = None, tol: float = 1e-12) -> LayerCheck:
    r"""Every layer of ``model``'s DUAT form at ``input_ids`` against :func:`~symuat.models.layer_reference` of the
    checkpoint ``directory`` (default: the one an out-of-core model was loaded from).

    >>> model = load("path/to/llama-8b", out_of_core=True)              # doctest: +SKIP
    >>> check_layers(model, ids).passed                                  # doctest: +SKIP
    True
    """
    if directory is None:
        directory = getattr(model.stack.blocks, "origin", None)
        if directory is None:
            raise InvalidValueError("check_layers needs directory= (the checkpoint) for a model loaded in memory")
    ref = layer_reference(Path(directory), input_ids, layers=model.stack.depth)
    return LayerCheck(layer_errors(form_layers(model, input_ids), ref.outputs), float(tol))
