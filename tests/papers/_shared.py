"""Builders the papers of the corpus share: row sums, row normalisation, the causal mask (SymPy and NumPy)."""

from __future__ import annotations

import numpy as np
import sympy

__all__ = ["causal_mask", "normalise_rows", "exp_entries", "np_causal", "np_normalise_rows", "np_softmax_rows"]


def causal_mask(n: int) -> sympy.ImmutableMatrix:
    r"""The causal mask $M_{ij} = 1$ for $j \le i$, else 0."""
    return sympy.ImmutableMatrix(n, n, lambda i, j: 1 if j <= i else 0)


def normalise_rows(a: sympy.MatrixBase) -> sympy.ImmutableMatrix:
    r"""$\operatorname{diag}(A\mathbf 1)^{-1} A$: every row divided by its sum."""
    return sympy.ImmutableMatrix(a.rows, a.cols, lambda i, j: a[i, j] / sum(a.row(i)))


def exp_entries(a: sympy.MatrixBase) -> sympy.ImmutableMatrix:
    """The entrywise exponential."""
    return sympy.ImmutableMatrix(a.applyfunc(sympy.exp))


def np_causal(n: int) -> np.ndarray:
    return np.tril(np.ones((n, n)))


def np_normalise_rows(a: np.ndarray) -> np.ndarray:
    return a / a.sum(axis=1, keepdims=True)


def np_softmax_rows(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
