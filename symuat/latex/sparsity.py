r"""Sparsity of small matrix–vector forms (cf. the paper's Figures 3–6): density and non-zero pattern.

:func:`symuat.latex.figures.sparsity_figure` draws the pattern.
"""

from __future__ import annotations

import sympy

__all__ = ["nonzero_pattern", "density"]


def density(matrix: sympy.MatrixBase) -> sympy.Rational:
    """Fraction of structurally non-zero entries.

    >>> density(sympy.Matrix([[1, 0], [0, 2]]))
    1/2
    """
    return sympy.Rational(sum(1 for v in matrix if v != 0), len(matrix))


def nonzero_pattern(matrix: sympy.MatrixBase) -> tuple[tuple[bool, ...], ...]:
    """Row by row, whether each entry is structurally non-zero.

    >>> nonzero_pattern(sympy.Matrix([[1, 0], [0, 2]]))
    ((True, False), (False, True))
    """
    rows, cols = matrix.shape
    return tuple(tuple(matrix[r, c] != 0 for c in range(cols)) for r in range(rows))
