r"""Score modifiers of modern attention: soft-capping, sliding windows, ALiBi (beyond the paper).

Each acts on the scores :math:`S_h` of a head *before* the softmax, so it changes :math:`H_h` and nothing else:
:math:`W'_{HVO} = \sum_h H_h\otimes(W_{V,h}W_{O,h})^T` keeps its closed form (Eq. 10).

* soft-capping (Gemma 2): :math:`S\mapsto c\tanh(S/c)` entrywise (:func:`softcap`);
* sliding window (Mistral, Gemma 2/3 local layers): query :math:`n` sees key :math:`m` iff
  :math:`n - w < m \le n` (:func:`sliding_window_mask`); a global layer is :math:`w \ge N`;
* symmetric window (ModernBERT local layers, bidirectional): query :math:`n` sees key :math:`m` iff
  :math:`|n - m| < w` (:func:`symmetric_window_mask`); :math:`w \ge N` sees every key (T5's encoder);
* T5's relative position buckets: :math:`B_{nm} = b_h(\mathrm{bucket}(m - n))` (:func:`relative_position_bucket`,
  :func:`relative_position_bias`), a static additive bias;
* ALiBi (BLOOM, MPT, Falcon variants): :math:`S_h + m_h\,\mathbf 1 p^T` with :math:`p_m` the position of key
  :math:`m` counted over the real tokens (:func:`alibi_bias`); it differs from the relative form
  :math:`m_h(p_m - p_n)` by a constant per row, which the softmax ignores.

:func:`masked_weights` is the softmax numerator times a per-row normaliser with the mask applied, the form
the ledger uses (:math:`\sigma` for exp, :math:`z_n` free).  On sizes of symbolic value (the all-sizes level)
:func:`softcap`, :func:`sliding_window_mask` and :func:`masked_weights` are traced (:mod:`symuat.allsizes.masks`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import sympy

from ..algebra.matrices import traceable
from ..errors import ShapeError

__all__ = ["softcap", "sliding_window_mask", "symmetric_window_mask", "alibi_bias", "relative_position_bucket",
           "relative_position_bias", "masked_weights"]

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


@traceable
def symmetric_window_mask(N: int, window: int, padded_right: int = 0) -> Callable[[int, int], bool]:
    r"""Whether query ``n`` may attend key ``m``: bidirectional inside the window (:math:`|n - m| < w`; ModernBERT's
    local layers have :math:`w = \text{local\_attention}/2 + 1`, a global layer :math:`w \ge N`) and not one of the
    last ``padded_right`` (padding) keys; a padded query sees itself only (its row is discarded).

    >>> allowed = symmetric_window_mask(4, 2, 1)
    >>> [[int(allowed(n, m)) for m in range(4)] for n in range(4)]
    [[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 0], [0, 0, 0, 1]]
    """
    if window < 1 or not 0 <= padded_right < N:
        raise ShapeError(f"window={window} must be >= 1 and padded_right={padded_right} in 0..{N - 1}")
    real = N - padded_right

    def allowed(n: int, m: int) -> bool:
        if n >= real:
            return m == n
        return m < real and abs(n - m) < window
    return allowed


def relative_position_bucket(k: int, bidirectional: bool, num_buckets: int, max_distance: int) -> int:
    r"""T5's bucket of the relative position :math:`k = m - n` (key minus query), as the T5 paper (Raffel et al.
    2020, §2.1) and its code define it: with bidirectional attention half the buckets are for :math:`k > 0`; of the
    :math:`B` buckets left, :math:`|k| < B/2` (causal: :math:`\max(-k, 0) < B/2`) get a bucket each (the exact
    region), larger distances share logarithmically wider ones, :math:`B/2 + \lfloor \log(|k|/(B/2)) / \log(D/(B/2))
    \cdot (B - B/2)\rfloor`, capped at :math:`B - 1` (:math:`D` = ``max_distance``).

    >>> [relative_position_bucket(k, True, 8, 16) for k in (-20, -6, -5, -2, -1, 0, 1, 2, 6, 20)]
    [3, 3, 2, 2, 1, 0, 5, 6, 7, 7]
    >>> [relative_position_bucket(k, False, 8, 16) for k in (1, 0, -3, -4, -7, -8, -12, -16)]
    [0, 0, 3, 4, 5, 6, 7, 7]
    """
    if num_buckets < (4 if bidirectional else 2) or max_distance < 1:
        raise ShapeError(f"num_buckets={num_buckets} must be >= {4 if bidirectional else 2} and "
                         f"max_distance={max_distance} >= 1")
    out = 0
    if bidirectional:
        num_buckets //= 2
        out = num_buckets if k > 0 else 0
        k = abs(k)
    else:
        k = max(-k, 0)
    exact = num_buckets // 2
    if k < exact:
        return out + k
    log_bucket = exact + int(math.log(k / exact) / math.log(max_distance / exact) * (num_buckets - exact))
    return out + min(log_bucket, num_buckets - 1)


def relative_position_bias(table: sympy.MatrixBase, N: int, bidirectional: bool, max_distance: int) -> Matrix:
    r"""T5's static bias :math:`B_{nm} = t_{\mathrm{bucket}(m - n)}` of one head from its ``table`` of
    ``num_buckets`` values (a column; the library's ``relative_attention_bias.weight[:, h]``)."""
    nb = table.shape[0]
    return Matrix(N, N, lambda n, m: table[relative_position_bucket(m - n, bidirectional, nb, max_distance), 0])


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
