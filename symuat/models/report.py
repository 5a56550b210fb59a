r"""Per-layer check of an imported model: the DUAT form against the library's own hidden states.

For every depth :math:`\ell = 1..L` the DUAT form of the first :math:`\ell` blocks (Eq. 11 / 33) is
evaluated at the input and compared with the library's hidden state :math:`\ell` (the last one with the
final norm), token by token.  Each term :math:`t = \tilde A\mathbf x'_0`, :math:`\tilde c`,
:math:`\tilde U_j\sigma(\tilde V_j\mathbf x'_0+\tilde\beta_j)` gets a share of :math:`\mathbf x'_\ell`:
``"signed"`` (default) :math:`\langle t, \mathbf x'_\ell\rangle / \lVert\mathbf x'_\ell\rVert^2` — the shares
sum to 1 because the terms sum to :math:`\mathbf x'_\ell`, a negative share opposes the output — or ``"norm"``
:math:`\lVert t\rVert / \lVert \mathbf x'_\ell\rVert` (does not sum to 1: terms cancel each other).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from ..errors import InvalidValueError, OutOfMemoryError, ShapeError
from ..numeric import TransformerStack, duat_form
from ..numeric.backend import to_numpy
from ..numeric.memory import form_bytes, out_of_memory
from ._torch import require_torch
from .device import to_device
from .precision import library_float64

__all__ = ["LayerCheck", "ModelReport", "library_hidden_states", "model_report"]


@dataclass(frozen=True)
class LayerCheck:
    r"""Layer :math:`\ell`: worst relative error over real tokens and each DUAT term's share of the norm."""

    layer: int
    relative_error: float
    shares: Tuple[Tuple[str, float], ...]


@dataclass(frozen=True)
class ModelReport:
    r"""The per-layer checks of one model at one input."""

    family: str
    tokens: int
    width: int
    layers: Tuple[LayerCheck, ...]
    share_kind: str = "signed"
    backend: str = "numpy"  #: where the form was evaluated ("numpy", "torch:cpu", "torch:cuda:0", …)

    @property
    def max_error(self) -> float:
        """The largest per-layer error; NaN if any is NaN (``max`` alone would drop it)."""
        errs = [c.relative_error for c in self.layers]
        return float("nan") if any(e != e for e in errs) else max(errs)

    def to_json(self) -> dict:
        return {"family": self.family, "tokens": self.tokens, "width": self.width, "max_relative_error": self.max_error,
                "share_kind": self.share_kind, "backend": self.backend,
                "layers": [{"layer": c.layer, "relative_error": c.relative_error, "shares": dict(c.shares)}
                           for c in self.layers]}

    def to_text(self) -> str:
        lines = [f"{self.family}: {len(self.layers)} layers, N={self.tokens} tokens, width {self.width}, "
                 f"evaluated on {self.backend}",
                 f"{'layer':>5}  {'rel. error':>10}  " + ("signed term shares <t, x'_l>/||x'_l||^2 (sum to 1)"
                                                          if self.share_kind == "signed" else
                                                          "term shares ||t||/||x'_l|| (do not sum to 1)")]
        for c in self.layers:
            shares = "  ".join(f"{name} {s:+.3f}" if self.share_kind == "signed" else f"{name} {s:.3f}"
                               for name, s in c.shares)
            lines.append(f"{c.layer:>5}  {c.relative_error:10.1e}  {shares}")
        lines.append(f"max relative error {self.max_error:.1e}")
        return "\n".join(lines)


def library_hidden_states(model: Any, X: np.ndarray, mask: Optional[np.ndarray] = None) -> list:
    r"""The library's ``hidden_states`` for one sequence (float64 throughout, :func:`library_float64`)."""
    torch = require_torch()
    am = None if mask is None else torch.tensor(np.asarray(mask)[None], dtype=torch.long)
    with torch.no_grad(), library_float64():
        out = model(inputs_embeds=torch.from_numpy(np.ascontiguousarray(X))[None], attention_mask=am,
                    output_hidden_states=True)
    return [h[0].double().numpy() for h in out.hidden_states]


def _relative_error(got: np.ndarray, want: np.ndarray, depth: int) -> float:
    err = float(np.max(np.linalg.norm(got - want, axis=1) / np.maximum(np.linalg.norm(want, axis=1), 1e-300)))
    if not np.isfinite(err):
        raise InvalidValueError(f"layer {depth}: the relative error is {err} (non-finite output of the library or of "
                                "the DUAT form); no verdict")
    return err


SHARES = ("signed", "norm")


def _shares(lin: np.ndarray, bias: np.ndarray, terms: list, kind: str = "signed") -> tuple:
    total = lin + bias
    for t in terms:
        total = total + t
    if kind == "signed":
        nn = max(float(total @ total), 1e-300)

        def share(t):
            return float(t @ total) / nn
    else:
        norm = max(float(np.linalg.norm(total)), 1e-300)

        def share(t):
            return float(np.linalg.norm(t)) / norm
    shares = [("A~x0", share(lin)), ("c~", share(bias))]
    shares += [(f"U~{j} app_{j}", share(s)) for j, s in enumerate(terms, start=1)]
    return tuple(shares), total


def model_report(model: Any, stack: TransformerStack, X: Any, mask: Optional[Any] = None,
                 shares: str = "signed", device: Any = None) -> ModelReport:
    r"""Compare the DUAT form of every depth with the library (module docstring).

    One evaluation of the form: box :math:`\ell` of the derived table is the form of the first :math:`\ell`
    layers (``duat_form(..., on_box=...)``).  A non-finite error raises :class:`InvalidValueError` naming the
    layer; running out of memory raises :class:`~symuat.errors.OutOfMemoryError` with the estimate.
    ``device`` (a torch device, e.g. ``"cuda"``): the form is evaluated there with the torch backend
    (docs/backends.md); each box's terms come back to the host for the shares and errors.
    """
    if shares not in SHARES:
        raise InvalidValueError(f"shares must be one of {SHARES}, got {shares!r}")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != stack.width:
        raise ShapeError(f"input has shape {X.shape}; the model expects (N, {stack.width}) inputs_embeds")
    N, M = X.shape
    real = np.ones(N, bool) if mask is None else np.asarray(mask, bool)
    try:
        want = library_hidden_states(model, X, mask)[1:]
    except OutOfMemoryError:
        raise
    except MemoryError as exc:
        raise out_of_memory(exc, f"in the library's forward pass at N={N}", form_bytes(stack, N)) from None
    if len(want) != stack.depth:
        raise ShapeError(f"the library returned {len(want)} hidden states for {stack.depth} blocks")
    L, checks = stack.depth, []

    def on_box(i, lin, bias, terms):
        if i == L and stack.final_norm is not None:
            return  # depth L is compared after the final norm (box L + 1)
        depth = min(i, L)
        values, total = _shares(lin, bias, terms, shares)
        got = total.reshape(N, M)[real]
        checks.append(LayerCheck(depth, _relative_error(got, want[depth - 1][real], depth), values))

    def on_box_host(i, lin, bias, terms):  # the torch backend's box values, read on the host (N x M each)
        on_box(i, to_numpy(lin), to_numpy(bias), [to_numpy(t) for t in terms])

    evaluated, X_eval, callback = stack, X, on_box
    if device is not None:
        evaluated, X_eval, callback = to_device(stack, device), to_device(X, device), on_box_host
    try:
        backend = duat_form(evaluated, X_eval, attention_mask=None if mask is None else np.asarray(mask, float),
                            on_box=callback).backend
    except OutOfMemoryError:
        raise
    except MemoryError as exc:
        raise out_of_memory(exc, f"evaluating the DUAT form at N={N}", form_bytes(stack, N)) from None
    family = getattr(getattr(model, "config", None), "model_type", type(model).__name__)
    return ModelReport(str(family), N, stack.width, tuple(checks), shares, backend)
