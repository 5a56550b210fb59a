r"""Matrices printed entrywise over pair indices (seed 004 Eq. 15: :math:`((k,l),(i,j)) \mapsto w_{i,k}\delta_{lj}`).

:func:`pair_matrix` takes the entry as a function of the row and column *index tuples*
(row-major pairs, as in :math:`\operatorname{vec}_r` and :math:`\otimes`), so a builder
states the display as printed, without ``//`` and ``%`` on flat positions.  At concrete
sizes it is the explicit matrix; on tracers of symbolic size (:mod:`symuat.allsizes`)
the indices are index variables, ``W[i, k]`` an entry and :func:`kronecker_delta` a
Kronecker delta of the index normal form.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import sympy

from ..errors import ShapeError
from .matrices import check_dim, traceable

__all__ = ["pair_matrix", "kronecker_delta"]


def pair_matrix(entry: Callable[[tuple, tuple], sympy.Expr], rows: tuple, cols: tuple) -> sympy.ImmutableMatrix:
    r"""The matrix with entry ``entry(row, col)`` at the row tuple ``row`` :math:`\in [r_1]\times\dots` (row-major).

    ``rows`` and ``cols`` are tuples of sizes; position :math:`(k,l)` of ``rows = (N, M)`` is row
    :math:`kM + l` (0-based), as in :math:`\operatorname{vec}_r`.

    >>> pair_matrix(lambda r, c: kronecker_delta(r[1], c[1]), (1, 2), (1, 2))
    Matrix([
    [1, 0],
    [0, 1]])
    """
    if not (isinstance(rows, tuple) and isinstance(cols, tuple) and rows and cols):
        raise ShapeError(f"pair_matrix needs non-empty tuples of sizes, got rows={rows!r}, cols={cols!r}")
    for size in (*rows, *cols):
        hook = getattr(size, "__symuat_function__", None)
        if hook is not None:
            return hook("pair_matrix", (entry, rows, cols), {})
    rows = tuple(check_dim("rows", r) for r in rows)
    cols = tuple(check_dim("cols", c) for c in cols)
    row_tuples = list(itertools.product(*(range(r) for r in rows)))
    col_tuples = list(itertools.product(*(range(c) for c in cols)))
    return sympy.ImmutableMatrix(len(row_tuples), len(col_tuples),
                                 lambda r, c: sympy.sympify(entry(row_tuples[r], col_tuples[c])))


@traceable
def kronecker_delta(a: int, b: int) -> sympy.Integer:
    r""":math:`\delta_{ab}` of two (0-based) indices.

    >>> kronecker_delta(1, 1), kronecker_delta(0, 2)
    (1, 0)
    """
    for x in (a, b):
        if isinstance(x, bool) or not isinstance(x, int):
            raise ShapeError(f"kronecker_delta of the index {x!r} (an int is expected)")
    return sympy.S.One if a == b else sympy.S.Zero
