r"""Rotary position embeddings (RoPE, full or partial) as a per-position rotation (beyond the paper).

Head width :math:`d`, rotary width :math:`r\le d` (even; partial rotary when :math:`r<d`), half :math:`k=r/2`.
Position :math:`n` rotates the coordinate planes :math:`(i, i+k)`, :math:`i<k`, by the angle with cosine
:math:`c_{n,i}` and sine :math:`s_{n,i}` and leaves coordinates :math:`\ge r` alone: a row vector
:math:`q_n\mapsto q_nR_n`.  On :math:`q'=\operatorname{vec}_r(Q)` this is the block diagonal
:math:`\bigoplus_n R_n^T` — it acts inside the scores of :math:`H_h` only, never on the value path.

:func:`rotate_half_apply` is the formula the libraries use
(:math:`q\cos + \mathrm{rotate\_half}(q)\sin`); :func:`rotary_operator` builds the rotations plane by plane.
"""

from __future__ import annotations

import sympy

from ..algebra.matrices import traceable
from ..errors import ShapeError

__all__ = ["plane_rotations", "rotary_pairs", "rotate_half_apply", "rotary_operator"]

Matrix = sympy.ImmutableMatrix


def _check(Q_cols: int, cos: sympy.MatrixBase, sin: sympy.MatrixBase) -> int:
    if cos.shape != sin.shape:
        raise ShapeError(f"cos {cos.shape} and sin {sin.shape} must have the same shape (N, r/2)")
    k = cos.shape[1]
    if 2 * k > Q_cols:
        raise ShapeError(f"rotary width r={2 * k} exceeds the head width d={Q_cols}")
    return k


@traceable
def rotary_pairs(r: int, d: int, layout: str = "half") -> int:
    r"""The number :math:`r/2` of rotated planes (the columns of the cos/sin tables) of a rotary width ``r`` inside a
    head of width ``d``: ``r`` even, :math:`2 \le r \le d`.  ``layout`` names the planes, ``"half"``
    :math:`(i, i + r/2)` or ``"adjacent"`` :math:`(2i, 2i + 1)` (:mod:`.rotary_interleaved`); on symbolic sizes the
    level traces ``r`` and ``d`` in that layout (:mod:`symuat.allsizes.rotary`).

    >>> rotary_pairs(4, 6)
    2
    """
    if layout not in ("half", "adjacent"):
        raise ShapeError(f"layout={layout!r} must be 'half' or 'adjacent'")
    if isinstance(r, bool) or not isinstance(r, int) or r < 2 or r % 2 or not isinstance(d, int) or r > d:
        raise ShapeError(f"rotary width r={r!r} must be even, at least 2 and at most the head width d={d!r}")
    return r // 2


@traceable
def rotate_half_apply(Q: sympy.MatrixBase, cos: sympy.MatrixBase, sin: sympy.MatrixBase) -> Matrix:
    r"""Rows of ``Q`` (:math:`N\times d`) rotated as :math:`q_{:r}\odot\cos + \mathrm{rotate\_half}(q_{:r})\odot\sin`.

    ``cos``, ``sin`` are :math:`N\times r/2`; the libraries repeat them to width :math:`r`.

    >>> c, s = sympy.symbols("c s")
    >>> rotate_half_apply(sympy.Matrix([[1, 0]]), sympy.Matrix([[c]]), sympy.Matrix([[s]]))
    Matrix([[c, s]])
    """
    k = _check(Q.shape[1], cos, sin)
    rows = []
    for n in range(Q.shape[0]):
        q = list(Q[n, :])
        half = [-q[k + i] for i in range(k)] + [q[i] for i in range(k)]
        cs = [cos[n, i % k] for i in range(2 * k)]
        sn = [sin[n, i % k] for i in range(2 * k)]
        rows.append([q[i] * cs[i] + half[i] * sn[i] for i in range(2 * k)] + q[2 * k:])
    return Matrix(rows)


@traceable
def rotary_operator(cos: sympy.MatrixBase, sin: sympy.MatrixBase, d: int) -> Matrix:
    r"""The :math:`Nd\times Nd` operator :math:`\bigoplus_n R_n^T` acting on :math:`q'=\operatorname{vec}_r(Q)`.

    The libraries apply it row by row; here it is built plane by plane.

    >>> c, s = sympy.symbols("c s")
    >>> rotary_operator(sympy.Matrix([[c]]), sympy.Matrix([[s]]), 2)
    Matrix([
    [c, -s],
    [s,  c]])
    """
    return plane_rotations(cos, sin, d, lambda i, k: (i, i + k))


def plane_rotations(cos: sympy.MatrixBase, sin: sympy.MatrixBase, d: int, plane) -> Matrix:
    r""":math:`\bigoplus_n R_n^T` on :math:`q'`: token :math:`n` rotates plane ``plane(i, k)`` of its head by the
    angle with cosine ``cos[n, i]`` and sine ``sin[n, i]`` (:math:`i < k`, :math:`2k` rotated of :math:`d`
    features; the rest pass through): new_a = c q_a - s q_b, new_b = s q_a + c q_b for ``(a, b) = plane(i, k)``.
    """
    k = _check(d, cos, sin)
    N = cos.shape[0]
    out = sympy.zeros(N * d, N * d)
    for n in range(N):
        o = n * d
        for j in range(2 * k, d):
            out[o + j, o + j] = 1
        for i in range(k):
            (a, b), c, s = plane(i, k), cos[n, i], sin[n, i]
            out[o + a, o + a], out[o + a, o + b], out[o + b, o + a], out[o + b, o + b] = c, -s, s, c
    return Matrix(out)
