r"""Pictures of a DUAT form (issue 21): term × layer, source token × output token, head × layer, and one attention
matrix, with axes and token labels.  matplotlib (``symuat[plot]``) is imported only when drawing.

Panels (every value exact, :mod:`symuat.numeric.attribution`):

* **term × layer**: the signed share :math:`\langle t, x'_\ell\rangle/\lVert x'_\ell\rVert^2` of each term of the
  form of the first :math:`\ell` layers (box :math:`\ell` of the derived table; a column sums to 1);
* **source × output token**: :math:`\lVert\text{part}_s[n]\rVert / \lVert x_n\rVert` of ``by="source"`` (or, with a
  ``target`` logit, its signed value); causal models give an upper-left triangle of zeros above the diagonal;
* **head × layer**: signed share of each head's direct part (``by="head"``) over all tokens;
* **attention** :math:`H_h` of the chosen layer and head (rows: queries, columns: keys).
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from ..errors import InvalidValueError, UnsupportedError
from ..numeric.duat_form import duat_form
from .attribution import attribution

__all__ = ["term_layer_shares", "plot_form", "plot_patching"]


def term_layer_shares(form: Any) -> tuple:
    """``(names, S)``: ``S[j, l-1]`` is term ``names[j]``'s signed share at depth ``l`` (NaN where absent)."""
    L = form.depth
    names = ["A~x0", "c~"] + [f"U~{j} app_{j}" for j in range(1, L + 1)]
    S = np.full((len(names), L), np.nan)

    def on_box(i, lin, bias, terms):
        if i > L:
            i = L  # the final norm's box replaces depth L
        x = lin + bias
        for t in terms:
            x = x + t
        nn = float(x @ x)
        col = [lin, bias] + list(terms)
        S[:, i - 1] = np.nan
        for j, t in enumerate(col):
            S[j, i - 1] = float(t @ x) / nn if nn > 0 else np.nan

    duat_form(form.stack, form.X0, form.attention_mask, on_box=on_box)
    return names, S


def _labels(form: Any, tokens: Optional[Sequence[str]]) -> list:
    N = form.X0.shape[0]
    if tokens is None:
        tokens = getattr(form, "tokens", None)  # a form made from text keeps its tokens
    if tokens is None:
        return [str(n) for n in range(N)]
    if len(tokens) != N:
        raise InvalidValueError(f"plot: {len(tokens)} token labels for N={N} tokens")
    return [str(t) for t in tokens]


def _heat(fig, ax, M, title, xlabels, ylabels, xlabel, ylabel, signed=True, annotate=False):
    lim = float(np.nanmax(np.abs(M))) if np.isfinite(M).any() else 1.0
    lim = lim or 1.0
    im = ax.imshow(M, cmap="RdBu_r" if signed else "viridis", vmin=-lim if signed else 0.0, vmax=lim,
                   aspect="auto", interpolation="nearest")
    ax.set_title(title, fontsize=10)
    ax.set_xticks(range(len(xlabels)), xlabels, rotation=60 if max(map(len, xlabels)) > 3 else 0, fontsize=8)
    ax.set_yticks(range(len(ylabels)), ylabels, fontsize=8)
    ax.set_xlabel(xlabel, fontsize=9)
    ax.set_ylabel(ylabel, fontsize=9)
    fig.colorbar(im, ax=ax, shrink=0.85)
    if annotate and M.size <= 80:
        for (r, c), v in np.ndenumerate(M):
            if np.isfinite(v):
                ax.text(c, r, f"{v:.2f}".replace("-0.00", "0.00"), ha="center", va="center", fontsize=7,
                        color="white" if abs(v) > 0.6 * lim else "black")


def _figure_module() -> Any:
    if importlib.util.find_spec("matplotlib") is None:
        raise UnsupportedError("figures need matplotlib: pip install 'symuat[plot]'")
    return importlib.import_module("matplotlib.figure")


def _suffix(path: Any) -> Optional[str]:
    suffix = None if path is None else Path(path).suffix.lower()
    if suffix not in (None, ".png", ".svg", ".pdf"):
        raise InvalidValueError(f"plot: the file must end in .png, .svg or .pdf, got {str(path)!r}")
    return suffix


def _save(fig: Any, path: Any, suffix: Optional[str]) -> None:
    if path is not None:  # no dates or versions in the file: the same call gives the same bytes
        meta = {".png": {"Software": None}, ".svg": {"Date": None}, ".pdf": {"CreationDate": None}}[suffix]
        fig.savefig(path, dpi=110, metadata=meta)


def plot_patching(sweep: Any, path: Any = None, normalized: bool = False) -> Any:
    """A :class:`~symuat.analysis.patching.PatchSweep` as a heatmap (layers × positions or layers × heads), with
    the clean and corrupted metric in the title; saved to ``path`` (.png, .svg or .pdf) when given."""
    figure = _figure_module()
    suffix = _suffix(path)
    if normalized:
        M, what = sweep.normalized, f"normalized {sweep.metric}"
    else:
        M, what = sweep.values - sweep.corrupted, f"{sweep.metric} - corrupted"
    fig = figure.Figure(figsize=(max(5.0, 0.5 * len(sweep.columns) + 2.5), max(3.0, 0.35 * len(sweep.rows) + 1.8)),
                        layout="constrained")
    ax = fig.subplots()
    title = (f"{sweep.mode} patching of {sweep.kind}: {what}\n"
             f"(clean {sweep.clean:.4g}, corrupted {sweep.corrupted:.4g})")
    _heat(fig, ax, M, title, list(sweep.columns), list(sweep.rows),
          "head" if sweep.kind == "head" else "position (token)", "layer", annotate=True)
    _save(fig, path, suffix)
    return fig


def plot_form(form: Any, path: Any = None, tokens: Optional[Sequence[str]] = None,
              layer: int = 0, head: int = 0, target: Any = None) -> Any:
    """Draw the four panels (module docstring); save to ``path`` (.png, .svg or .pdf) when given; return the
    matplotlib Figure."""
    figure = _figure_module()
    labels = _labels(form, tokens)
    if not (isinstance(layer, (int, np.integer)) and 0 <= layer < form.depth):
        raise InvalidValueError(f"plot: layer must be in [0, {form.depth}), got {layer!r}")
    H = form.stack.blocks[layer].attention.n_heads
    if not (isinstance(head, (int, np.integer)) and 0 <= head < H):
        raise InvalidValueError(f"plot: head must be in [0, {H}) for layer {layer}, got {head!r}")
    suffix = _suffix(path)
    fig = figure.Figure(figsize=(12, 9.5), layout="constrained")
    axes = fig.subplots(2, 2)
    names, S = term_layer_shares(form)
    _heat(fig, axes[0, 0], S, r"signed term shares $\langle t, x_\ell\rangle / \|x_\ell\|^2$ (columns sum to 1)",
          [str(i) for i in range(1, form.depth + 1)], names, r"depth $\ell$ (layers evaluated)", "DUAT term",
          annotate=True)
    src = attribution(form, "source", target)
    if src.values.ndim == 2:  # one logit per token: signed value
        _heat(fig, axes[0, 1], src.values.T, f"logit {target}: exact part of each source token",
              labels, labels, "source token s", "output token n")
    else:
        rel = np.linalg.norm(src.values, axis=-1).T / np.maximum(np.linalg.norm(src.output, axis=-1), 1e-300)[:, None]
        _heat(fig, axes[0, 1], rel, r"$\|$part of source $s$ in output $n\| / \|x_n\|$", labels, labels,
              "source token s", "output token n", signed=False)
    heads = attribution(form, "head", target)
    sh = heads.shares()
    nh = max(b.attention.n_heads for b in form.stack.blocks)
    G = np.full((form.depth, nh), np.nan)
    for k, b in enumerate(form.stack.blocks):
        for h in range(b.attention.n_heads):
            G[k, h] = sh[f"L{k}.H{h}"]
    title = "signed share of each head's direct part" + ("" if target is None else f" (logit {target})")
    _heat(fig, axes[1, 0], G, title, [str(h) for h in range(nh)], [str(k) for k in range(form.depth)], "head", "layer",
          annotate=True)
    _heat(fig, axes[1, 1], form.attention(layer, head), f"attention H of layer {layer}, head {head}", labels, labels,
          "key token", "query token", signed=False)
    fig.suptitle(f"DUAT form: {form.depth} layers, N={len(labels)}, kind {form.stack.kind!r}", fontsize=12)
    _save(fig, path, suffix)
    return fig
