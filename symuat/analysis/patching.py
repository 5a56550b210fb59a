r"""Exact activation patching and edits between two runs of one model (issue 32).

Two forms of the same stack and length — a *clean* ``source`` and a *corrupted* ``form`` — are run with their sites
recorded (:mod:`symuat.analysis.sites`: the residual stream at a layer and position, a sublayer's output, a head's
output :math:`z_h`, a neuron, an expert).  :func:`patch` replaces one site of ``form``'s run by its value in
``source`` (or by any ``value``: an edit) and runs the rest of the network:

``mode="recomputed"``
    symuat's own forward through the numeric stack from the patched layer on: every downstream dynamic parameter
    (attention matrices, norms, activation gates, routing) responds to the patch.  It equals the library run with
    the same patch done by a torch hook (tests/patching_support.py) within :math:`10^{-12}`.
``mode="frozen"``
    Every downstream dynamic parameter held at ``form``'s run (:func:`~symuat.analysis.frozen.frozen`, ``gates``
    ``"held"`` or ``"live"``; a mixture of experts' routing held in both): with held gates the output is affine in
    the patched value, so the effect is the patch's direct path through the held network.

:func:`patch_sweep` patches every (layer, position) of the residual stream or of a sublayer, or every (layer, head),
and returns one number per patch (:class:`PatchSweep`, plotted by :func:`~symuat.analysis.plot.plot_patching`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np

from ..errors import InvalidValueError, ShapeError
from ..numeric.head import as_head
from ._bar import bar
from .frozen import frozen
from .plot import plot_patching
from .sites import Site, run_sites, site

__all__ = ["Patched", "PatchSweep", "patch", "patch_sweep", "MODES", "SWEEPS"]

#: How the network after a patch is evaluated (module docstring).
MODES = ("recomputed", "frozen")
#: What a sweep patches: (site kind, what its columns are).
SWEEPS = {"resid": "position", "attn": "position", "ffn": "position", "head": "head"}


@dataclass(frozen=True)
class Patched:
    r"""One patched run: ``output`` (the last hidden state, final norm included) next to ``base``, the unpatched run
    of the same form; ``logits`` through the LM head when the form has one."""

    unit: Site
    mode: str
    output: np.ndarray
    base: np.ndarray
    unembedding: Any = field(default=None, repr=False)

    @property
    def effect(self) -> np.ndarray:
        """``output - base``."""
        return self.output - self.base

    @property
    def logits(self) -> np.ndarray:
        """The patched run's logits :math:`x U^{\\mathsf T} + b` (needs an LM head)."""
        return _logits(self.output, self.unembedding)


def _logits(output: np.ndarray, unembedding: Any) -> np.ndarray:
    """The logits of ``output`` through the form's head (:class:`~symuat.numeric.head.Head`: transform, scale, cap);
    a refused head raises its reason."""
    head = as_head(unembedding)
    if head is None:
        raise InvalidValueError("this form has no LM head (form.unembedding is None): give metric= or a direction "
                                "target instead of logits")
    return head.logits(output)


def _check_mode(mode: Any) -> str:
    if mode not in MODES:
        raise InvalidValueError(f"mode must be one of {MODES}, got {mode!r}")
    return mode


def _check_pair(form: Any, source: Any) -> None:
    if source.X0.shape != form.X0.shape:
        raise ShapeError(f"the source form has shape {source.X0.shape}, the patched form {form.X0.shape}: patching "
                         "needs two runs of the same length")
    a, b = form.stack, source.stack
    same = a is b or (a.depth == b.depth and a.kind == b.kind and all(
        x.attention.W_O is y.attention.W_O or np.array_equal(x.attention.W_O, y.attention.W_O)
        for x, y in zip(a.blocks, b.blocks)))
    if not same:
        raise InvalidValueError("the source form belongs to another model (its stack differs): patch between two "
                                "forms of the same model")


def _value_at(values: dict, s: Site) -> np.ndarray:
    v = values[("neurons", s.layer)][:, s.index] if s.kind == "neuron" else values[s.key]
    return v if s.positions is None else v[list(s.positions)]


def _record_key(s: Site) -> tuple:
    return ("neurons", s.layer) if s.kind == "neuron" else s.key


class _Runner:
    """The patched form's residual stream per layer (to start a patched run at its layer) and its held values."""

    def __init__(self, form: Any, mode: str, gates: str):
        self.form, self.mode, self.gates = form, mode, gates
        self.held = frozen(form, gates).held if mode == "frozen" else None
        _, rec = run_sites(form.stack, form.X0, form.attention_mask, record={("resid",)}, held=self.held,
                           gates=gates)
        self.resid = [rec[("resid", k)] for k in range(form.depth + 1)]

    def __call__(self, s: Site, value: np.ndarray) -> np.ndarray:
        form = self.form
        try:  # an overflow (e.g. in a norm's variance) must not turn into a finite wrong answer
            with np.errstate(over="raise", invalid="raise"):
                out, _ = run_sites(form.stack, form.X0, form.attention_mask, patches={s: value}, record=set(),
                                   held=self.held, gates=self.gates, start=(s.layer, self.resid[s.layer]))
        except FloatingPointError:
            out = np.array([np.inf])
        if not np.all(np.isfinite(out)):
            raise InvalidValueError(f"patching {s.label()} ({self.mode}) gives a non-finite output: the patched "
                                    "value overflows the network downstream")
        return out


def _edit_value(form: Any, s: Site, value: Any) -> np.ndarray:
    _, rec = run_sites(form.stack, form.X0, form.attention_mask, record={_record_key(s)})
    want = _value_at(rec, s).shape
    v = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(v)):
        raise InvalidValueError(f"the value for {s.label()} must be finite")
    try:
        return np.broadcast_to(v, want).copy()
    except ValueError:
        raise ShapeError(f"the value for {s.label()} has shape {v.shape}; the unit's value has shape {want}") from None


def patch(form: Any, unit: Any, source: Any = None, *, value: Any = None, mode: str = "recomputed",
          gates: str = "held") -> Patched:
    r"""Replace ``unit``'s output in ``form``'s run by its output in ``source`` (patching) or by ``value`` (an edit).

    Parameters
    ----------
    form : DUATForm
        The run that is changed (e.g. the corrupted input).
    unit : tuple or Site
        ``("resid", layer, position)``, ``("attn"|"ffn", layer[, positions])``, ``("head", layer, h[, positions])``,
        ``("neuron", layer, j[, positions])``, ``("expert", layer, e[, positions])``; 0-based, positions default to
        all (:mod:`symuat.analysis.sites`).
    source : DUATForm, optional
        The run the value comes from (e.g. the clean input): same model, same length.
    value : array, optional
        Instead of ``source``: the unit's new value (broadcast to its shape at the positions).
    mode : ``"recomputed"`` or ``"frozen"``
        Module docstring.
    gates : ``"held"`` or ``"live"``
        With ``mode="frozen"``: hold the activation gates too, or re-apply them.

    Raises
    ------
    InvalidValueError, ShapeError
        An unknown unit (the message lists the valid forms), a source of another model or length, a bad value.
    UnsupportedError
        A neuron of a mixture-of-experts layer (patch its ``expert``), an expert of a dense layer.

    Notes
    -----
    In ``mode="frozen"`` a mixture of experts keeps its routing diagonal :math:`D(u)` held (which experts each token
    uses, their weights and the shared expert's gate): with ``gates="live"`` it equals the library run whose routers
    replay their output and whose norms replay their diagonal (tests/test_models_families_moe.py).
    """
    mode = _check_mode(mode)
    s = site(form.stack, form.X0.shape[0], unit)
    if (source is None) == (value is None):
        raise InvalidValueError("give exactly one of source (a form to patch from) and value (an edit)")
    if source is not None:
        _check_pair(form, source)
        _, rec = run_sites(source.stack, source.X0, source.attention_mask, record={_record_key(s)})
        v = _value_at(rec, s)
    else:
        v = _edit_value(form, s, value)
    out = _Runner(form, mode, gates)(s, v)
    return Patched(s, mode, out, form.output, form.unembedding)


@dataclass(frozen=True)
class PatchSweep:
    r"""A patching grid: ``values[r, c]`` is the metric of the run with row ``r`` (a layer) and column ``c`` (a
    position or a head) patched from the source; ``clean`` and ``corrupted`` are the metric of the two runs, so
    :attr:`normalized` is 1 where a patch restores the clean value and 0 where it changes nothing."""

    kind: str
    mode: str
    values: np.ndarray
    rows: Tuple[str, ...]
    columns: Tuple[str, ...]
    clean: float
    corrupted: float
    metric: str

    @property
    def normalized(self) -> np.ndarray:
        """``(values - corrupted) / (clean - corrupted)``; refused when both runs give the same metric."""
        d = self.clean - self.corrupted
        if d == 0.0:
            raise InvalidValueError("the clean and corrupted runs have the same metric: nothing to normalize by")
        return (self.values - self.corrupted) / d

    def plot(self, path: Any = None, normalized: bool = False) -> Any:
        """A heatmap (:func:`~symuat.analysis.plot.plot_patching`)."""
        return plot_patching(self, path, normalized)


def _metric(form: Any, metric: Any, target: Any, position: int) -> Tuple[Callable, str]:
    if (metric is None) == (target is None):
        raise InvalidValueError("give exactly one of metric (a function of the output) and target (a token id or "
                                "an output direction)")
    N, M = form.X0.shape
    pos = site(form.stack, N, ("resid", 0, position)).positions[0]
    if metric is not None:
        if not callable(metric):
            raise InvalidValueError(f"metric must be a function of the (N, M) output, got {type(metric).__name__}")
        return lambda out: float(metric(out)), getattr(metric, "__name__", "metric")
    if isinstance(target, (int, np.integer)) and not isinstance(target, bool):
        _logits(form.output[:1], form.unembedding)  # refuses a form without an LM head
        V = as_head(form.unembedding).vocab
        if not 0 <= target < V:
            raise InvalidValueError(f"target token id {target} is outside the vocabulary (0..{V - 1})")
        return (lambda out: float(_logits(out[pos:pos + 1], form.unembedding)[0, target]),
                f"logit[{target}] @ {pos}")
    d = np.asarray(target, dtype=float)
    if d.shape != (M,) or not np.all(np.isfinite(d)):
        raise InvalidValueError(f"target must be a token id or a finite output direction of shape ({M},), got "
                                f"{getattr(target, 'shape', target)!r}")
    return lambda out: float(out[pos] @ d), f"direction @ {pos}"


def patch_sweep(form: Any, source: Any, over: str = "resid", *, metric: Optional[Callable] = None,
                target: Any = None, position: int = -1, mode: str = "recomputed", gates: str = "held",
                tokens: Optional[Sequence[str]] = None, positions: Optional[Sequence[int]] = None,
                quiet: bool = False) -> PatchSweep:
    r"""Patch every (layer, position) of ``over`` (``"resid"``: layers 0..L; ``"attn"``, ``"ffn"``: 0..L-1) or
    every (layer, head) (``over="head"``, all positions) from ``source`` into ``form``; one number per patch.
    ``positions`` restricts the columns of a (layer, position) sweep (at real lengths, the tokens of interest).

    The number is ``metric(output)`` or, with ``target``, the logit of token ``target`` (or the output along a
    direction) at ``position``.  Column labels are ``tokens`` (default: ``form.tokens`` when the form has them).
    A rich progress bar runs on a terminal unless ``quiet``.
    """
    mode = _check_mode(mode)
    if over not in SWEEPS:
        raise InvalidValueError(f"over must be one of {sorted(SWEEPS)}, got {over!r}")
    _check_pair(form, source)
    f, name = _metric(form, metric, target, position)
    N, L = form.X0.shape[0], form.depth
    if over == "head":
        if positions is not None:
            raise InvalidValueError("positions= restricts a (layer, position) sweep; a head sweep patches all")
        heads = {b.attention.n_heads for b in form.stack.blocks}
        if len(heads) > 1:
            raise InvalidValueError(f"the layers have different head counts {sorted(heads)}: no (layer, head) grid")
        rows, cols = L, heads.pop()
        where = list(range(cols))
    else:
        where = list(range(N)) if positions is None else list(site(form.stack, N, ("resid", 0, positions)).positions)
        rows, cols = (L + 1 if over == "resid" else L), len(where)
    _, rec = run_sites(source.stack, source.X0, source.attention_mask, record={(over,)})
    run = _Runner(form, mode, gates)
    values = np.empty((rows, cols))
    with bar(quiet, f"patching {over}", rows * cols) as step:
        for r in range(rows):
            for c in range(cols):
                s = Site(over, r, c) if over == "head" else Site(over, r, None, (where[c],))
                values[r, c] = f(run(s, _value_at(rec, s)))
                if not np.isfinite(values[r, c]):
                    raise InvalidValueError(f"the metric of the run patched at {s.label()} is {values[r, c]}: a "
                                            "sweep holds finite numbers only")
                step(s.label())
    labels = tokens if tokens is not None else getattr(form, "tokens", None)
    if labels is not None and len(labels) != N:
        raise ShapeError(f"tokens has {len(labels)} labels, the form {N} positions")
    columns = (tuple(f"H{h}" for h in range(cols)) if over == "head" else
               tuple(f"{labels[n]} ({n})" if positions is not None else labels[n] for n in where)
               if labels is not None else tuple(str(n) for n in where))
    return PatchSweep(over, mode, values, tuple(f"L{r}" for r in range(rows)), columns, f(source.output),
                      f(form.output), name)
