r"""Families indexed by a size: :math:`\sum_{j=1}^{N} f(j)`, the block of member :math:`j`, :math:`\operatorname{diag}`.

A builder that loops over neurons or heads (``for j in range(N)``) needs the concrete
value of ``N``; written with these combinators it runs unchanged at every concrete
size (the explicit loop) and, on tracers of symbolic size
(:mod:`symuat.allsizes`), becomes an index-form sum over a fresh index of type ``N``.

Member :math:`j` (0-based) of a family stacked along rows of blocks of ``size``
rows is ``row_block(X, j, size)`` :math:`= X_{[j\cdot size,(j+1)size),:}`, as in
the paper's :math:`\mathbf W_j` (seed 001 Eq. 1) and :math:`x_i` (Eq. 7–8).
"""

from __future__ import annotations

from collections.abc import Callable

import sympy

from ..errors import ShapeError
from .matrices import check_dim, traceable

__all__ = ["family_sum", "family_hstack", "family_shapes", "family_member", "family_of", "family_from", "as_family",
           "family_size", "member_shape", "family_block_diagonal", "block_size", "basis_vector", "row_block",
           "col_block", "diag_vector"]


@traceable
def family_sum(f: Callable[[int], sympy.MatrixBase], n: int) -> sympy.ImmutableMatrix:
    r""":math:`\sum_{j=0}^{n-1} f(j)` for a matrix-valued ``f`` (seed 001 Eq. 1: :math:`\sum_j\alpha_j\sigma(\cdot)`).

    >>> family_sum(lambda j: sympy.Matrix([[j, 1]]), 3)
    Matrix([[3, 3]])
    """
    n = check_dim("n", n)
    total = f(0)
    for j in range(1, n):
        total = total + f(j)
    return sympy.ImmutableMatrix(total)


@traceable
def family_hstack(f: Callable[[int], sympy.MatrixBase], n: int) -> sympy.ImmutableMatrix:
    r""":math:`\mathrm{Concat}(f(0),\dots,f(n-1))` by columns (seed 001 Eq. 7: :math:`\mathrm{Concat}(\hat H_i)`).

    >>> family_hstack(lambda j: sympy.Matrix([[j]]), 3)
    Matrix([[0, 1, 2]])
    """
    n = check_dim("n", n)
    return sympy.ImmutableMatrix(sympy.Matrix.hstack(*(f(j) for j in range(n))))


@traceable
def family_shapes(name: str, n: int, rows, cols) -> dict:
    r"""Shapes of a family of ``n`` matrices ``name1, ..., name<n>`` of one shape (e.g. the heads' :math:`H_i`).

    >>> family_shapes("H", 2, 3, 3)
    {'H1': (3, 3), 'H2': (3, 3)}
    """
    n = check_dim("n", n)
    return {f"{name}{i + 1}": (rows, cols) for i in range(n)}


def family_member(env, name: str, j: int):
    r"""Member ``j`` (0-based) of the family ``name`` declared by :func:`family_shapes`: ``env[name<j+1>]``.

    >>> family_member({"H1": 1, "H2": 2}, "H", 1)
    2
    """
    hook = getattr(j, "__symuat_function__", None)
    if hook is not None:
        return hook("family_member", (env, name, j), {})
    if isinstance(j, bool) or not isinstance(j, int) or f"{name}{j + 1}" not in env:
        raise ShapeError(f"the family {name!r} has no member {j!r}")
    return env[f"{name}{j + 1}"]


def _block(X: sympy.MatrixBase, j: int, size: int, axis: int) -> sympy.ImmutableMatrix:
    size = check_dim("size", size)
    if isinstance(j, bool) or not isinstance(j, int) or not 0 <= j or (j + 1) * size > X.shape[axis]:
        raise ShapeError(f"member {j!r} of blocks of {size} does not lie in the {X.shape[axis]} "
                         f"{'rows' if axis == 0 else 'columns'} of the family")
    if X.shape[axis] % size:
        raise ShapeError(f"{X.shape[axis]} {'rows' if axis == 0 else 'columns'} are not blocks of {size}")
    part = slice(j * size, (j + 1) * size)
    return sympy.ImmutableMatrix(X[part, :] if axis == 0 else X[:, part])


@traceable
def row_block(X: sympy.MatrixBase, j: int, size: int) -> sympy.ImmutableMatrix:
    r"""Rows :math:`j\cdot size,\dots,(j+1)size-1` of ``X``: member ``j`` of a family stacked by rows.

    >>> row_block(sympy.Matrix([[1], [2], [3], [4]]), 1, 2).T
    Matrix([[3, 4]])
    """
    return _block(X, j, size, 0)


@traceable
def col_block(X: sympy.MatrixBase, j: int, size: int) -> sympy.ImmutableMatrix:
    r"""Columns :math:`j\cdot size,\dots,(j+1)size-1` of ``X`` (the paper's :math:`x_i`, Eq. 7–8).

    >>> col_block(sympy.Matrix([[1, 2, 3]]), 2, 1)
    Matrix([[3]])
    """
    return _block(X, j, size, 1)


@traceable
def diag_vector(v: sympy.MatrixBase) -> sympy.ImmutableMatrix:
    r""":math:`\operatorname{diag}(v)` of a column vector (seed 004 §2.1: :math:`\operatorname{diag}(\alpha_j)`).

    >>> diag_vector(sympy.Matrix([1, 2]))
    Matrix([
    [1, 0],
    [0, 2]])
    """
    if v.shape[1] != 1:
        raise ShapeError(f"diag_vector needs a column vector, got shape {v.shape}")
    return sympy.ImmutableMatrix(sympy.diag(*v))


@traceable
def family_of(env, name: str, n: int) -> tuple:
    r"""The declared family ``name`` as a tuple ``(env[name1], ..., env[name<n>])`` (a traced family when tracing).

    >>> family_of({"H1": 1, "H2": 2}, "H", 2)
    (1, 2)
    """
    return tuple(family_member(env, name, j) for j in range(check_dim("n", n)))


@traceable
def as_family(members) -> tuple:
    """A sequence of members as a tuple (a traced family is kept as it is).

    >>> as_family([1, 2])
    (1, 2)
    """
    return tuple(members)


@traceable
def family_from(f: Callable[[int], sympy.MatrixBase], n: int) -> tuple:
    r"""The family :math:`(f(0),\dots,f(n-1))` of computed members (e.g. each head's :math:`H_h` from its scores).

    >>> family_from(lambda j: sympy.Matrix([[j]]), 2)
    (Matrix([[0]]), Matrix([[1]]))
    """
    n = check_dim("n", n)
    return tuple(f(j) for j in range(n))


@traceable
def family_size(members) -> int:
    """Number of members of a family (``len`` of the tuple)."""
    return len(members)


@traceable
def member_shape(members) -> tuple:
    """Shape of the members of a non-empty family of equally shaped matrices.

    >>> member_shape((sympy.zeros(2, 3), sympy.ones(2, 3)))
    (2, 3)
    """
    if not members:
        raise ShapeError("an empty family has no member shape")
    shape = members[0].shape
    if any(M.shape != shape for M in members):
        raise ShapeError(f"every member must have the shape {shape} of the first")
    return shape


@traceable
def family_block_diagonal(members) -> sympy.ImmutableMatrix:
    r""":math:`\operatorname{diag}(B_1,\dots,B_h)` of a family (the paper's block-diagonal :math:`W_V`, Eq. 7).

    >>> family_block_diagonal((sympy.Matrix([[1]]), sympy.Matrix([[2]])))
    Matrix([
    [1, 0],
    [0, 2]])
    """
    return sympy.ImmutableMatrix(sympy.diag(*members))


@traceable
def block_size(total: int, n: int) -> int:
    """The width of each of ``n`` equal blocks of ``total`` (``total // n``; traced: the inner factor of ``n*size``).

    >>> block_size(6, 2)
    3
    """
    total, n = check_dim("total", total), check_dim("n", n)
    if total % n:
        raise ShapeError(f"{n} blocks do not divide {total}")
    return total // n


@traceable
def basis_vector(j: int, n: int) -> sympy.ImmutableMatrix:
    r"""The unit column :math:`e_j\in\mathbb R^n` (0-based ``j``): ``kron(e_j, B)`` puts ``B`` in block ``j``.

    >>> basis_vector(1, 3).T
    Matrix([[0, 1, 0]])
    """
    n = check_dim("n", n)
    if isinstance(j, bool) or not isinstance(j, int) or not 0 <= j < n:
        raise ShapeError(f"basis vector {j!r} of R^{n}")
    return sympy.ImmutableMatrix(n, 1, lambda r, _: 1 if r == j else 0)
