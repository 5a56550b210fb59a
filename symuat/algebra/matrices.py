r"""Explicit symbolic matrices, row-major vectorisation and Kronecker products.

The paper's data transform :math:`T_D` is row-major vectorisation (docs/conventions.md):

.. math::

    \operatorname{vec}_r(X) = (x_{1,1},\dots,x_{1,M},x_{2,1},\dots)^T,
    \qquad \operatorname{vec}_r(AXB) = (A\otimes B^T)\operatorname{vec}_r(X).

Everything here works on explicit :class:`sympy.ImmutableMatrix` objects whose
entries are scalar symbols, so shapes are concrete and checked.  SymPy's rewrite
that merges sums of Kronecker products is never used (it is unsound in SymPy 1.14).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import sympy

from ..errors import ShapeError
from ..validation import check_positive_int

__all__ = [
    "symbolic_matrix",
    "symbolic_vector",
    "vec_r",
    "unvec_r",
    "kron",
    "identity_matrix",
    "ones",
    "elementwise",
    "check_dim",
]


def traceable(fn):
    """Let an argument with a ``__symuat_function__`` hook (a tracer of symbolic size) run ``fn`` itself."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        for a in args:
            hook = getattr(a, "__symuat_function__", None)
            if hook is not None:
                return hook(fn.__name__, args, kwargs)
        return fn(*args, **kwargs)
    return wrapper


def check_dim(name: str, value: object) -> int:
    """Return ``value`` as a positive ``int`` (:func:`symuat.validation.check_positive_int`).

    >>> check_dim("N", 3)
    3
    """
    return check_positive_int(name, value, ShapeError)


def symbolic_matrix(name: str, rows: int, cols: int) -> sympy.ImmutableMatrix:
    r"""Matrix of fresh scalar symbols ``name_{i,j}`` (1-based, as in the paper).

    The symbols are declared finite (they stand for numbers), which spares SymPy's
    matrix product its :math:`0\cdot\infty` check on every entry.

    >>> symbolic_matrix("w", 2, 2)
    Matrix([
    [w_{1,1}, w_{1,2}],
    [w_{2,1}, w_{2,2}]])
    """
    check_dim("rows", rows)
    check_dim("cols", cols)
    return sympy.ImmutableMatrix(
        rows, cols, lambda i, j: sympy.Symbol(f"{name}_{{{i + 1},{j + 1}}}", finite=True)
    )


def symbolic_vector(name: str, length: int) -> sympy.ImmutableMatrix:
    r"""Column vector of fresh symbols ``name_{i}``.

    >>> symbolic_vector("b", 2).T
    Matrix([[b_{1}, b_{2}]])
    """
    check_dim("length", length)
    return sympy.ImmutableMatrix(length, 1, lambda i, _: sympy.Symbol(f"{name}_{{{i + 1}}}", finite=True))


@traceable
def vec_r(X: sympy.MatrixBase) -> sympy.ImmutableMatrix:
    r"""Row-major vectorisation :math:`\operatorname{vec}_r(X)\in\mathbb{R}^{NM}`.

    >>> vec_r(sympy.Matrix([[1, 2], [3, 4]])).T
    Matrix([[1, 2, 3, 4]])
    """
    rows, cols = X.shape
    return sympy.ImmutableMatrix(rows * cols, 1, [X[i, j] for i in range(rows) for j in range(cols)])


@traceable
def unvec_r(v: sympy.MatrixBase, rows: int, cols: int) -> sympy.ImmutableMatrix:
    """Inverse of :func:`vec_r`.

    >>> unvec_r(sympy.Matrix([1, 2, 3, 4]), 2, 2)
    Matrix([
    [1, 2],
    [3, 4]])
    """
    check_dim("rows", rows)
    check_dim("cols", cols)
    if v.shape != (rows * cols, 1):
        raise ShapeError(
            f"unvec_r: vector of shape {v.shape} cannot be reshaped to {rows}x{cols}; "
            f"expected shape ({rows * cols}, 1)"
        )
    return sympy.ImmutableMatrix(rows, cols, lambda i, j: v[i * cols + j, 0])


@traceable
def kron(A: sympy.MatrixBase, B: sympy.MatrixBase) -> sympy.ImmutableMatrix:
    r"""Kronecker product :math:`A\otimes B`, entry ``(i*p+k, j*q+l) = A[i,j] B[k,l]``.

    >>> kron(sympy.eye(2), sympy.Matrix([[1, 2]]))
    Matrix([
    [1, 2, 0, 0],
    [0, 0, 1, 2]])
    """
    (m, n), (p, q) = A.shape, B.shape
    return sympy.ImmutableMatrix(
        m * p, n * q, lambda r, c: A[r // p, c // q] * B[r % p, c % q]
    )


@traceable
def identity_matrix(n: int) -> sympy.ImmutableMatrix:
    """Identity matrix :math:`I_n`."""
    return sympy.ImmutableMatrix(sympy.eye(check_dim("n", n)))


@traceable
def ones(n: int) -> sympy.ImmutableMatrix:
    r"""All-ones column vector :math:`\mathbf{1}_n`."""
    return sympy.ImmutableMatrix(sympy.ones(check_dim("n", n), 1))


@traceable
def elementwise(f: Callable[[sympy.Expr], sympy.Expr], X: sympy.MatrixBase) -> sympy.ImmutableMatrix:
    r"""Apply ``f`` entrywise, e.g. :math:`\sigma(\cdot)` of the paper."""
    return sympy.ImmutableMatrix(X.applyfunc(f))
