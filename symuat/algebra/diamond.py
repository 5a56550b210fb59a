r"""The Diamond product of the UAT papers (seed 004 Eq. 4, §3.2, App. A).

Definition (Eq. 4): for :math:`W\in\mathbb{R}^{m\times n}` and
:math:`x\in\mathbb{R}^{m}`, :math:`(W\diamond x)_i=\sum_k w_{k,i}x_k`, i.e.

.. math:: W \diamond x = W^T x, \qquad x \diamond W := W \diamond x .

The paper never defines :math:`\diamond` between two matrices nor the order of a
chain :math:`A\diamond B\diamond x`.  symuat makes that explicit: a
:class:`DiamondReading` fixes both, and :data:`CHAIN_READINGS` lists the readings
every printed chain is checked under.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy

from ..errors import ShapeError
from .matrices import traceable

__all__ = ["diamond", "DiamondReading", "CHAIN_READINGS", "chain"]


@traceable
def diamond(W: sympy.MatrixBase, x: sympy.MatrixBase) -> sympy.ImmutableMatrix:
    r"""``W ◇ x`` for a matrix ``W`` (m×n) and a column vector ``x`` (m×1), Eq. 4.

    The operand that is a column vector plays ``x`` (the paper's
    :math:`x\diamond W = W\diamond x`).  Entries are built from the definition
    :math:`\sum_k w_{k,i} x_k`, not from a transpose.

    >>> W = sympy.Matrix([[1, 2], [3, 4]]); x = sympy.Matrix([1, 1])
    >>> diamond(W, x).T
    Matrix([[4, 6]])
    """
    if W.shape[1] == 1 and x.shape[1] != 1:
        W, x = x, W
    if x.shape[1] != 1:
        raise ShapeError(f"diamond: one operand must be a column vector, got shapes {W.shape} and {x.shape}")
    m, n = W.shape
    if x.shape[0] != m:
        raise ShapeError(f"diamond: W is {m}x{n} so x must have {m} rows, got {x.shape[0]}")
    return sympy.ImmutableMatrix(n, 1, lambda i, _: sum((W[k, i] * x[k, 0] for k in range(m)), sympy.S.Zero))


@dataclass(frozen=True)
class DiamondReading:
    r"""One way to read a chain :math:`A_1\diamond\cdots\diamond A_k\diamond x`.

    ``associate`` is ``"right"`` (vector first: :math:`A\diamond(B\diamond x)`) or
    ``"left"`` (:math:`(A\diamond B)\diamond x`, which needs ``matrix_product``,
    the meaning of :math:`A\diamond B` for two matrices).
    """

    name: str
    description: str
    associate: str
    matrix_product: Callable[[sympy.MatrixBase, sympy.MatrixBase], sympy.MatrixBase] | None = None


#: The readings of a chained ◇ that every printed step is checked under.
CHAIN_READINGS: tuple[DiamondReading, ...] = (
    DiamondReading("right", r"A \diamond B \diamond x = A \diamond (B \diamond x)", "right"),
    DiamondReading("left-TN", r"(A \diamond B) \diamond x \text{ with } A \diamond B = A^T B", "left",
                   lambda A, B: A.T * B),
    DiamondReading("left-NN", r"(A \diamond B) \diamond x \text{ with } A \diamond B = A B", "left",
                   lambda A, B: A * B),
)


def chain(reading: DiamondReading, *operands: sympy.MatrixBase) -> sympy.ImmutableMatrix:
    r"""Evaluate :math:`A_1\diamond\cdots\diamond A_k\diamond x` under ``reading``; ``x`` is last."""
    *matrices, x = operands
    if not matrices:
        raise ShapeError("chain: need at least one matrix before the vector")
    if reading.associate == "right":
        out = x
        for A in reversed(matrices):
            out = diamond(A, out)
        return sympy.ImmutableMatrix(out)
    acc = matrices[0]
    for B in matrices[1:]:
        acc = reading.matrix_product(acc, B)
    return diamond(acc, x)
