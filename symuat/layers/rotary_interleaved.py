r"""Interleaved rotary embeddings (GPT-J, Cohere; full or partial) as a per-position rotation (beyond the paper).

Head width :math:`d`, rotary width :math:`r\le d` (even), :math:`k = r/2`.  Position :math:`n` rotates the
*adjacent* coordinate planes :math:`(2i, 2i+1)`, :math:`i<k`, by the angle with cosine :math:`c_{n,i}` and sine
:math:`s_{n,i}` and leaves coordinates :math:`\ge r` alone (GPT-J's ``rotary_dim``).  On
:math:`q'=\operatorname{vec}_r(Q)` this is again a block diagonal :math:`\bigoplus_n R_n^T`; it differs from
:mod:`symuat.layers.rotary` (planes :math:`(i, i+k)`) by a fixed permutation of the rotated coordinates.

:func:`rotate_every_two_apply` is the libraries' formula
(:math:`q\odot\cos + \mathrm{rotate\_every\_two}(q)\odot\sin` with ``repeat_interleave``d tables);
:func:`interleaved_rotary_operator` builds the rotations plane by plane.
"""

from __future__ import annotations

import sympy

from ..algebra.matrices import traceable
from ..errors import ShapeError
from .rotary import plane_rotations

__all__ = ["rotate_every_two_apply", "interleaved_rotary_operator"]

Matrix = sympy.ImmutableMatrix


def _check(Q_cols: int, cos: sympy.MatrixBase, sin: sympy.MatrixBase) -> int:
    if cos.shape != sin.shape:
        raise ShapeError(f"cos {cos.shape} and sin {sin.shape} must have the same shape (N, r/2)")
    if 2 * cos.shape[1] > Q_cols:
        raise ShapeError(f"rotary width r={2 * cos.shape[1]} exceeds the head width d={Q_cols}")
    return cos.shape[1]


@traceable
def rotate_every_two_apply(Q: sympy.MatrixBase, cos: sympy.MatrixBase, sin: sympy.MatrixBase) -> Matrix:
    r"""Rows of ``Q`` as GPT-J computes them: ``x[:, :r] * cos + rotate_every_two(x[:, :r]) * sin``, rest kept.

    ``rotate_every_two`` maps :math:`(x_0, x_1, x_2, x_3, \dots)` to :math:`(-x_1, x_0, -x_3, x_2, \dots)`; the
    :math:`N\times r/2` tables are repeated element-wise to width :math:`r`.

    >>> c, s = sympy.symbols("c s")
    >>> rotate_every_two_apply(sympy.Matrix([[1, 0, 5]]), sympy.Matrix([[c]]), sympy.Matrix([[s]]))
    Matrix([[c, s, 5]])
    """
    k = _check(Q.shape[1], cos, sin)
    rows = []
    for n in range(Q.shape[0]):
        q = list(Q[n, :])
        rot = [(-q[i + 1] if i % 2 == 0 else q[i - 1]) for i in range(2 * k)]
        rows.append([q[i] * cos[n, i // 2] + rot[i] * sin[n, i // 2] for i in range(2 * k)] + q[2 * k:])
    return Matrix(rows)


@traceable
def interleaved_rotary_operator(cos: sympy.MatrixBase, sin: sympy.MatrixBase, d: int) -> Matrix:
    r"""The :math:`Nd\times Nd` operator :math:`\bigoplus_n R_n^T` of the interleaved rotation on :math:`q'`.

    >>> c, s = sympy.symbols("c s")
    >>> interleaved_rotary_operator(sympy.Matrix([[c]]), sympy.Matrix([[s]]), 2)
    Matrix([
    [c, -s],
    [s,  c]])
    """
    return plane_rotations(cos, sin, d, lambda i, k: (2 * i, 2 * i + 1))
