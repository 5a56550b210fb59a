r"""Score modifiers of modern attention: soft-capping, sliding windows, ALiBi (beyond the paper).

Each acts on the scores :math:`S_h` of a head *before* the softmax, so it changes :math:`H_h` and nothing else:
:math:`W'_{HVO} = \sum_h H_h\otimes(W_{V,h}W_{O,h})^T` keeps its closed form (Eq. 10).

* soft-capping (Gemma 2): :math:`S\mapsto c\tanh(S/c)` entrywise (:func:`softcap`);
* sliding window (Mistral, Gemma 2/3 local layers): query :math:`n` sees key :math:`m` iff
  :math:`n - w < m \le n` (:func:`sliding_window_mask`); a global layer is :math:`w \ge N`;
* ALiBi (BLOOM, MPT, Falcon variants): :math:`S_h + m_h\,\mathbf 1 p^T` with :math:`p_m` the position of key
  :math:`m` counted over the real tokens (:func:`alibi_bias`); it differs from the relative form
  :math:`m_h(p_m - p_n)` by a constant per row, which the softmax ignores.

:func:`masked_weights` is the softmax numerator times a per-row normaliser with the mask applied, the form
the ledger uses (:math:`\sigma` for exp, :math:`z_n` free).  On sizes of symbolic value (the all-sizes level)
:func:`softcap`, :func:`sliding_window_mask` and :func:`masked_weights` are traced (:mod:`symuat.allsizes.masks`).
"""

from __future__ import annotations

from collections.abc import Callable

import sympy

from ..algebra.matrices import traceable
from ..errors import ShapeError

__all__ = ["softcap", "sliding_window_mask", "alibi_bias", "masked_weights"]

Matrix = sympy.ImmutableMatrix


@traceable
def softcap(S: sympy.MatrixBase, cap, tanh: Callable) -> Matrix:
    r""":math:`c\tanh(S/c)` entrywise, ``tanh`` a function of one argument (e.g. ``sympy.tanh``)."""
    return Matrix(S.shape[0], S.shape[1], lambda n, m: cap * tanh(S[n, m] / cap))


@traceable
def sliding_window_mask(N: int, window: int, padded_left: int = 0) -> Callable[[int, int], bool]:
    r"""Whether query ``n`` may attend key ``m``: causal, inside the window (:math:`n - m < w`) and not one of the
    first ``padded_left`` (padding) keys; a padded query sees itself only (its row is discarded)."""
    if window < 1 or not 0 <= padded_left < N:
        raise ShapeError(f"window={window} must be >= 1 and padded_left={padded_left} in 0..{N - 1}")

    def allowed(n: int, m: int) -> bool:
        if n < padded_left:
            return m == n
        return padded_left <= m <= n and n - m < window
    return allowed


def alibi_bias(N: int, slope, padded_left: int = 0) -> Matrix:
    r""":math:`m_h\,\mathbf 1p^T`: key :math:`m` at position :math:`p_m = m - \text{padded\_left}` (0 for padding)."""
    if not 0 <= padded_left < N:
        raise ShapeError(f"padded_left={padded_left} must leave a real token of N={N}")
    return Matrix(N, N, lambda n, m: slope * max(m - padded_left, 0))


@traceable
def masked_weights(S: sympy.MatrixBase, allowed: Callable[[int, int], bool], z: sympy.MatrixBase,
                   exp: Callable) -> Matrix:
    r""":math:`\exp(S_{nm})z_n` on allowed entries, 0 elsewhere (``z``: :math:`N\times 1` normalisers)."""
    N = S.shape[0]
    return Matrix(N, N, lambda n, m: exp(S[n, m]) * z[n] if allowed(n, m) else sympy.S.Zero)
