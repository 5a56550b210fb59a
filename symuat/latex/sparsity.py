r"""Sparsity pictures of small matrix–vector forms (cf. seed 001 Figures 3–6).

Drawn with LaTeX's built-in ``picture`` environment (no TikZ needed, so the
appendices compile with ``texlive-latex-base`` alone): one filled square per
structurally non-zero entry, a frame around the matrix.
"""

from __future__ import annotations

import sympy

__all__ = ["sparsity_picture", "density"]


def density(matrix: sympy.MatrixBase) -> sympy.Rational:
    """Fraction of structurally non-zero entries.

    >>> density(sympy.Matrix([[1, 0], [0, 2]]))
    1/2
    """
    return sympy.Rational(sum(1 for v in matrix if v != 0), len(matrix))


def sparsity_picture(matrix: sympy.MatrixBase, cell_pt: float = 6.0) -> str:
    r"""A ``picture`` of the non-zero pattern of ``matrix``, ``cell_pt`` points per entry."""
    rows, cols = matrix.shape
    cell = f"{cell_pt:g}"
    fill = f"{cell_pt * 0.8:g}pt"
    lines = [rf"\setlength{{\unitlength}}{{{cell}pt}}", rf"\begin{{picture}}({cols},{rows})"]
    lines.append(rf"\put(0,0){{\framebox({cols},{rows}){{}}}}")
    for r in range(rows):
        for c in range(cols):
            if matrix[r, c] != 0:
                lines.append(rf"\put({c}.1,{rows - r - 1}.1){{\rule{{{fill}}}{{{fill}}}}}")
    lines.append(r"\end{picture}")
    return "\n".join(lines)
