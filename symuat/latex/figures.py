r"""Figures of the appendices, drawn with matplotlib (the optional extra ``symuat[plot]``).

Three kinds of figure, each returned as the bytes of a PDF file (or of an SVG file with ``fmt="svg"``, for
the HTML ledger of ``symuat html``):

* :func:`sparsity_figure` — the non-zero pattern of a small matrix–vector form
  (seed 001 Figures 3–6 style) with row/column axes and the block boundaries of
  the Kronecker structure;
* :func:`attention_figure` — heatmaps of the per-head attention matrices
  :math:`H_h` and of one block of :math:`W'_{HVO}=\sum_h H_h\otimes(W_{V,h}W_{O,h})^T`
  (Eq. 10) for a small random-init model;
* :func:`attribution_figure` — each DUAT term's share of the output norm
  (Eq. 11: :math:`\tilde A_L x'_0`, :math:`\tilde c_L`, :math:`\tilde U_j\sigma(\cdots)`)
  per layer and per token, from :func:`symuat.numeric.duat_form`.

Output is deterministic: no dates in the PDF metadata, a fixed ``svg.hashsalt``,
the object-oriented API only (no global pyplot state), and data rounded to six
decimals so that last-digit float differences between machines cannot change a colour.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
from collections.abc import Sequence
from contextlib import contextmanager

import numpy as np

from ..errors import UnsupportedError
from ..numeric import TransformerStack, duat_form, head_attention_weights, random_stack

__all__ = ["plot_available", "sparsity_figure", "attention_figure", "attribution_figure", "attribution_shares",
           "ATTRIBUTION_MODEL"]

#: The small random-init model of the attention and attribution figures: seed, layers, N, M, heads, FFN width.
ATTRIBUTION_MODEL = {"seed": 0, "layers": 4, "tokens": 6, "width": 8, "heads": 2, "ffn": 16, "kind": "standard"}

_RC = {
    "svg.hashsalt": "symuat", "pdf.compression": 6, "font.size": 8.0,
    "axes.titlesize": 8.0, "axes.labelsize": 8.0, "xtick.labelsize": 7.0, "ytick.labelsize": 7.0,
    "legend.fontsize": 7.0, "image.interpolation": "nearest", "figure.dpi": 100.0, "savefig.dpi": 100.0,
}
_METADATA = {"pdf": {"Creator": "symuat", "Producer": "symuat", "CreationDate": None, "ModDate": None},
             "svg": {"Creator": "symuat", "Date": None}}


def plot_available() -> bool:
    """Whether matplotlib (``pip install 'symuat[plot]'``) is installed; it is imported only when drawing."""
    return importlib.util.find_spec("matplotlib") is not None


@contextmanager
def _figure(width_in: float, height_in: float):
    if not plot_available():
        raise UnsupportedError("figures need matplotlib: pip install 'symuat[plot]'")
    matplotlib = importlib.import_module("matplotlib")
    canvas = importlib.import_module("matplotlib.backends.backend_pdf").FigureCanvasPdf
    figure = importlib.import_module("matplotlib.figure").Figure
    with matplotlib.rc_context(_RC):
        fig = figure(figsize=(width_in, height_in))
        canvas(fig)
        yield fig


def _check_format(fmt: str) -> str:
    if fmt not in _METADATA:
        raise UnsupportedError(f"figure format {fmt!r} is not supported; expected one of {sorted(_METADATA)}")
    return fmt


def _file_bytes(fig, fmt: str) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, metadata=_METADATA[fmt])
    return buf.getvalue()


def _blocks(ax, rows: int, cols: int, block_rows: int, block_cols: int) -> None:
    for r in range(block_rows, rows, block_rows):
        ax.axhline(r - 0.5, color="tab:red", linewidth=0.8)
    for c in range(block_cols, cols, block_cols):
        ax.axvline(c - 0.5, color="tab:red", linewidth=0.8)


def sparsity_figure(pattern: Sequence[Sequence[bool]], block: tuple[int, int], title: str,
                    fmt: str = "pdf") -> bytes:
    r"""A PDF (or ``fmt="svg"``) of the non-zero ``pattern`` of a matrix with block boundaries every ``block``
    rows/columns.

    ``title`` is mathtext.  Rows and columns are numbered from 1 as in the paper.
    """
    _check_format(fmt)
    mask = np.asarray(pattern, dtype=float)
    rows, cols = mask.shape
    side = min(2.0, 0.18 * max(rows, cols) + 0.6)
    with _figure(side * cols / max(rows, cols) + 0.6, side + 0.3) as fig:
        ax = fig.add_subplot()
        ax.imshow(mask, cmap="Greys", vmin=0.0, vmax=1.25)
        _blocks(ax, rows, cols, *block)
        ax.set_xticks(range(cols), [str(c + 1) for c in range(cols)])
        ax.set_yticks(range(rows), [str(r + 1) for r in range(rows)])
        ax.set_xlabel("column")
        ax.set_ylabel("row")
        if title:
            ax.set_title(title)
        fig.tight_layout(pad=0.3)
        return _file_bytes(fig, fmt)


def _model():
    p = ATTRIBUTION_MODEL
    rng = np.random.default_rng(p["seed"])
    stack = random_stack(rng, p["layers"], p["width"], p["heads"], p["ffn"], kind=p["kind"])
    X0 = rng.standard_normal((p["tokens"], p["width"]))
    return stack, X0


def attention_figure(block: tuple[int, int] = (1, 2), fmt: str = "pdf") -> bytes:
    r"""Heatmaps of :math:`H_h` (every head of layer 1) and of the block ``block`` (1-based token pair)
    of :math:`W'_{HVO}` for the model :data:`ATTRIBUTION_MODEL` at its random input."""
    _check_format(fmt)
    stack, X0 = _model()
    attn = stack.blocks[0].attention
    heads = [np.round(H, 6) for H in head_attention_weights(X0, attn)]
    n, m = block[0] - 1, block[1] - 1
    W_block = np.zeros((attn.width, attn.width))
    for h, H in enumerate(heads):
        sl = attn.head_slice(h)
        W_block += H[n, m] * (attn.W_V[:, sl] @ attn.W_O[sl, :]).T
    W_block = np.round(W_block, 6)
    with _figure(6.2, 2.3) as fig:
        axes = fig.subplots(1, len(heads) + 1)
        for h, (ax, H) in enumerate(zip(axes, heads)):
            im = ax.imshow(H, cmap="viridis", vmin=0.0, vmax=float(max(h.max() for h in heads)))
            ax.set_title(rf"$H_{h + 1}$ (layer 1)")
            ax.set_xlabel("key token")
            if h == 0:
                ax.set_ylabel("query token")
            ticks = range(H.shape[0])
            ax.set_xticks(ticks, [str(t + 1) for t in ticks])
            ax.set_yticks(ticks, [str(t + 1) for t in ticks])
        fig.colorbar(im, ax=list(axes[:-1]), shrink=0.8)
        ax = axes[-1]
        bound = float(np.max(np.abs(W_block))) or 1.0
        im = ax.imshow(W_block, cmap="RdBu_r", vmin=-bound, vmax=bound)
        ax.set_title(rf"block $({block[0]},{block[1]})$ of $W'_{{HVO}}$")
        ticks = range(W_block.shape[0])
        ax.set_xticks(ticks, [str(t + 1) for t in ticks])
        ax.set_yticks(ticks, [str(t + 1) for t in ticks])
        ax.set_xlabel("feature")
        fig.colorbar(im, ax=ax, shrink=0.8)
        return _file_bytes(fig, fmt)


def attribution_shares(stack, X0) -> tuple[np.ndarray, np.ndarray]:
    r"""Shares of the DUAT terms in the output norm (Eq. 11).

    Returns ``(per_layer, per_token)``: ``per_layer[l, k]`` is term ``k``'s share
    :math:`\lVert t_k\rVert / \sum_k \lVert t_k\rVert` in the form of the first ``l + 1``
    layers (terms ``[Ã x'_0, c̃, Ũ_1 σ, …, Ũ_L σ]``, zero for ``j > l + 1``), and
    ``per_token[n, k]`` the same share restricted to token ``n`` at the full depth.

    >>> from symuat.numeric import random_stack
    >>> rng = np.random.default_rng(1)
    >>> layer, token = attribution_shares(random_stack(rng, 2, 4, 2, 4), rng.standard_normal((3, 4)))
    >>> layer.shape, token.shape, bool(np.allclose(layer.sum(axis=1), 1))
    ((2, 4), (3, 4), True)
    """
    L, (N, M) = stack.depth, np.shape(X0)
    per_layer = np.zeros((L, L + 2))
    for depth in range(1, L + 1):
        sub = TransformerStack(stack.blocks[:depth], stack.kind, stack.activation)
        t = duat_form(sub, X0).terms
        norms = [np.linalg.norm(v) for v in (t.linear_term, t.bias_term, *t.sigma_terms)]
        per_layer[depth - 1, :depth + 2] = np.asarray(norms) / sum(norms)
    terms = np.stack([t.linear_term, t.bias_term, *t.sigma_terms]).reshape(L + 2, N, M)
    rows = np.linalg.norm(terms, axis=2).T
    per_token = rows / rows.sum(axis=1, keepdims=True)
    return per_layer, per_token


def attribution_figure(fmt: str = "pdf") -> bytes:
    r"""Stacked bars of :func:`attribution_shares` for the model :data:`ATTRIBUTION_MODEL`."""
    _check_format(fmt)
    stack, X0 = _model()
    per_layer, per_token = (np.round(a, 6) for a in attribution_shares(stack, X0))
    L = stack.depth
    labels = [r"$\tilde{A}_L x'_0$", r"$\tilde{c}_L$"] + [rf"$\tilde{{U}}_{j}\sigma(\cdot)$" for j in range(1, L + 1)]
    colors = ["#4d4d4d", "#b3b3b3", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
              "#e377c2", "#17becf"]
    with _figure(6.2, 2.5) as fig:
        axes = fig.subplots(1, 2, sharey=True)
        for ax, shares, xlabel in ((axes[0], per_layer, "depth $L$ (layers)"), (axes[1], per_token, "token $n$")):
            x = np.arange(1, shares.shape[0] + 1)
            bottom = np.zeros(shares.shape[0])
            for k in range(shares.shape[1]):
                ax.bar(x, shares[:, k], bottom=bottom, color=colors[k % len(colors)], label=labels[k], width=0.7)
                bottom += shares[:, k]
            ax.set_xticks(x, [str(v) for v in x])
            ax.set_xlabel(xlabel)
        axes[0].set_ylabel("share of the sum of term norms")
        axes[0].set_title("per depth (all tokens)")
        axes[1].set_title(f"per token (depth {L})")
        axes[1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
        fig.tight_layout(pad=0.3)
        return _file_bytes(fig, fmt)
