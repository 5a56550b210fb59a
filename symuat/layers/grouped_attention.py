r"""Grouped- and multi-query attention (GQA / MQA) and masked attention matrices (beyond the paper).

With :math:`H` query heads and :math:`G` key/value groups (:math:`G\mid H`; :math:`G=1` is MQA, :math:`G=H`
plain MHA), head :math:`h` reads group :math:`g(h)=\lfloor hG/H\rfloor`, so

.. math::

    W'_{HVO} = \sum_h H_h\otimes\big(W_{V,g(h)}W_{O,h}\big)^T.

An additive mask (:math:`0` or :math:`-\infty`, causal and/or key padding) leaves each row of
:math:`H_h=\operatorname{softmax}(S+\text{mask})` a probability vector supported on the allowed keys:
:func:`masked_row_stochastic_matrix` is that matrix with free symbols.
"""

from __future__ import annotations

from collections.abc import Callable

import sympy

from ..algebra.matrices import check_dim, kron, symbolic_matrix, traceable
from ..errors import ShapeError

__all__ = ["kv_group", "heads_per_group", "repeat_kv", "grouped_closed_form", "masked_row_stochastic_matrix",
           "row_stochastic_family", "causal_padding_mask"]

Matrix = sympy.ImmutableMatrix


def kv_group(h: int, n_heads: int, n_groups: int) -> int:
    r"""The key/value group :math:`\lfloor hG/H\rfloor` of query head ``h`` (0-based).

    >>> [kv_group(h, 4, 2) for h in range(4)]
    [0, 0, 1, 1]
    """
    if n_groups <= 0 or n_heads % n_groups:
        raise ShapeError(f"n_kv_groups={n_groups} must be positive and divide n_heads={n_heads}")
    return h * n_groups // n_heads


@traceable
def heads_per_group(n_heads: int, n_groups: int) -> int:
    r"""The number :math:`H/G` of query heads that share each key/value group (on symbolic sizes the level traces
    :math:`H` as :math:`G\cdot(H/G)`, :mod:`symuat.allsizes.groups`).

    >>> heads_per_group(8, 2)
    4
    """
    if n_groups <= 0 or n_heads <= 0 or n_heads % n_groups:
        raise ShapeError(f"n_kv_groups={n_groups} must be positive and divide n_heads={n_heads}")
    return n_heads // n_groups


@traceable
def repeat_kv(V: sympy.MatrixBase, n_heads: int, n_groups: int, d: int) -> tuple:
    r"""The libraries' ``repeat_kv``: the value block of each group (columns :math:`gd, \dots, (g+1)d - 1` of ``V``)
    repeated :math:`H/G` times, consecutively: one block per query head.

    >>> repeat_kv(sympy.Matrix([[1, 2]]), 4, 2, 1)
    (Matrix([[1]]), Matrix([[1]]), Matrix([[2]]), Matrix([[2]]))
    """
    per = heads_per_group(n_heads, n_groups)
    if V.shape[1] != n_groups * d:
        raise ShapeError(f"V has {V.shape[1]} columns, not {n_groups} groups of width d={d}")
    return tuple(Matrix(V[:, g * d:(g + 1) * d]) for g in range(n_groups) for _ in range(per))


@traceable
def grouped_closed_form(H: tuple, W_V: sympy.MatrixBase, W_O: sympy.MatrixBase, n_groups: int) -> Matrix:
    r""":math:`\sum_h H_h\otimes(W_{V,g(h)}W_{O,h})^T`.

    :math:`W_V` is :math:`M\times Gd` (one block per group), :math:`W_O` is :math:`Hd\times P` (one block per head).
    """
    n_heads = len(H)
    d = W_O.shape[0] // n_heads
    if W_V.shape[1] != n_groups * d or W_O.shape[0] != n_heads * d:
        raise ShapeError(f"W_V {W_V.shape} and W_O {W_O.shape} do not fit {n_heads} heads, {n_groups} groups")
    terms = []
    for h, Hh in enumerate(H):
        g = kv_group(h, n_heads, n_groups)
        terms.append(kron(Hh, (W_V[:, g * d:(g + 1) * d] * W_O[h * d:(h + 1) * d, :]).T))
    return Matrix(sum(terms[1:], terms[0]))


@traceable
def causal_padding_mask(N: int, padded: int) -> Callable[[int, int], bool]:
    r"""Whether query ``n`` may attend key ``m``: causal (:math:`m\le n`) and not one of the last ``padded`` keys."""
    if not 0 <= padded < N:
        raise ShapeError(f"padded={padded} must leave at least one real token of N={N}")
    return lambda n, m: m <= n and m < N - padded


def masked_row_stochastic_matrix(name: str, N: int, allowed: Callable[[int, int], bool]) -> Matrix:
    r"""Free symbols on allowed entries, zeros elsewhere; each row's last allowed entry is :math:`1-\sum` the others.

    >>> masked_row_stochastic_matrix("h", 2, lambda n, m: m <= n)
    Matrix([
    [      1,           0],
    [h_{2,1}, 1 - h_{2,1}]])
    """
    free = symbolic_matrix(name, N, N)
    rows = []
    for n in range(N):
        cols = [m for m in range(N) if allowed(n, m)]
        if not cols:
            raise ShapeError(f"row {n} of the mask allows no key: a fully masked row has no softmax")
        row = [sympy.S.Zero] * N
        for m in cols[:-1]:
            row[m] = free[n, m]
        row[cols[-1]] = 1 - sum((row[m] for m in cols[:-1]), sympy.S.Zero)
        rows.append(row)
    return Matrix(rows)


@traceable
def row_stochastic_family(name: str, n: int, N: int, allowed: Callable[[int, int], bool]) -> tuple:
    r"""The heads' :math:`H_1, \dots, H_n`: :func:`masked_row_stochastic_matrix` named ``name1`` … ``name<n>`` (traced
    on symbolic sizes as a family whose rows sum to 1, :mod:`symuat.allsizes.masks`).

    >>> row_stochastic_family("h", 2, 1, lambda n, m: True)
    (Matrix([[1]]), Matrix([[1]]))
    """
    return tuple(masked_row_stochastic_matrix(f"{name}{i + 1}", N, allowed) for i in range(check_dim("n", n)))
