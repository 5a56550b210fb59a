r"""The Diamond product of seed 004 (Eq. 4, §3.2, App. A Eq. 13–14), step by step.

Every printed step of the App. A chains is the equality of two consecutive
expressions.  A step that chains two or more ◇ is checked under each reading of
:data:`symuat.CHAIN_READINGS`; its status is ``proved`` when all readings agree,
``convention`` when only some do, ``erratum`` when none does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import sympy

from symuat import (
    CHAIN_READINGS,
    Correction,
    Denial,
    Entry,
    Expr,
    Identity,
    Readings,
    Status,
    Step,
    StepTable,
    bind,
    chain,
    diamond,
    dims_grid,
)

from ._coq_links import linked

__all__ = ["entries", "chain_step", "eq4_identity", "left_tn_identity", "rows_of_result_identity", "square_identity",
           "vector_operand_identity"]

_M = dims_grid(m=(1, 2, 3))
_MN = dims_grid(m=(1, 2, 3), n=(1, 2, 3))
_SQUARE = {"W1": ("m", "m"), "W2": ("m", "m"), "x": ("m", 1)}
_CHAIN = "the order of a chained diamond and the meaning of A◇B for two matrices (symuat.CHAIN_READINGS)"


@functools.cache
def square_identity(lhs: Callable, rhs: Callable, reading) -> Identity:
    r"""``lhs == rhs`` for square :math:`W_1, W_2` and a vector :math:`x`, with the chain reading ``R`` fixed."""
    return Identity(shapes=_SQUARE, lhs=bind(lhs, R=reading), rhs=bind(rhs, R=reading), dims=_M, random_dims={"m": 4})


@functools.cache
def chain_step(lhs: Callable, rhs: Callable) -> Readings:
    """A chain step, one reading per :data:`symuat.CHAIN_READINGS`."""
    return Readings(_CHAIN, {r.name: square_identity(lhs, rhs, r) for r in CHAIN_READINGS})


@functools.cache
def left_tn_identity(lhs: Callable, rhs: Callable) -> Identity:
    """A chain step under the left-TN reading (``A◇B = AᵀB``, left to right)."""
    reading = next(r for r in CHAIN_READINGS if r.name == "left-TN")
    return square_identity(lhs, rhs, reading)


# The expressions of the two chains, as printed (App. A); R is the chain reading.
_EQ13 = [
    Expr(r"\mathbf{W}_{1}\diamond[\mathbf{x}\diamond\mathbf{W}_{2}]", lambda W1, x, W2: diamond(W1, diamond(x, W2))),
    Expr(r"\mathbf{W}_{1}\diamond[\mathbf{W}_{2}^{T}\mathbf{x}]", lambda W1, W2, x: diamond(W1, W2.T * x)),
    Expr(r"\mathbf{W}_{1}^{T}[\mathbf{W}_{2}^{T}\mathbf{x}]", lambda W1, W2, x: W1.T * (W2.T * x)),
    Expr(r"\mathbf{W}_{1}^{T}\mathbf{W}_{2}^{T}\mathbf{x}=\mathbf{W}_{12}\mathbf{x}",
         lambda W1, W2, x: W1.T * W2.T * x),
    Expr(r"(\mathbf{W}_{1}^{T}\mathbf{W}_{2}^{T})^{T}\diamond\mathbf{x}",
         lambda W1, W2, x: diamond((W1.T * W2.T).T, x)),
    Expr(r"(\mathbf{W}_{2}\mathbf{W}_{1})\diamond\mathbf{x}", lambda W2, W1, x: diamond(W2 * W1, x)),
    Expr(r"\mathbf{W}_{2}\diamond\mathbf{W}_{1}\diamond\mathbf{x}", lambda R, W2, W1, x: chain(R, W2, W1, x)),
    Expr(r"\mathbf{W}_{2}^{T}\diamond\mathbf{W}_{1}\diamond\mathbf{x}", lambda R, W2, W1, x: chain(R, W2.T, W1, x)),
]
_EQ14 = [
    Expr(r"[\mathbf{W}_{1}\diamond\mathbf{x}]\diamond\mathbf{W}_{2}", lambda W1, x, W2: diamond(diamond(W1, x), W2)),
    Expr(r"[\mathbf{W}_{1}^{T}\mathbf{x}]\diamond\mathbf{W}_{2}", lambda W1, x, W2: diamond(W1.T * x, W2)),
    Expr(r"\mathbf{W}_{2}^{T}[\mathbf{W}_{1}^{T}\mathbf{x}]", lambda W2, W1, x: W2.T * (W1.T * x)),
    Expr(r"[\mathbf{W}_{2}^{T}\mathbf{W}_{1}^{T}]^{T}\diamond\mathbf{x}",
         lambda W2, W1, x: diamond((W2.T * W1.T).T, x)),
    Expr(r"[\mathbf{W}_{1}\mathbf{W}_{2}]\diamond\mathbf{x}", lambda W1, W2, x: diamond(W1 * W2, x)),
    Expr(r"\mathbf{W}_{1}\diamond\mathbf{W}_{2}\diamond\mathbf{x}", lambda R, W1, W2, x: chain(R, W1, W2, x)),
    Expr(r"\mathbf{W}_{1}^{T}\diamond\mathbf{W}_{2}\diamond\mathbf{x}", lambda R, W1, W2, x: chain(R, W1.T, W2, x)),
]

_LEFT_NN = (r"Holds only if $A\diamond B$ means the ordinary product AB and the chain is read left to right (left-NN).")
_SKIP = ("No reading makes this step true (it moves a transpose onto the left factor). The chain's end point is "
         "still right under left-TN, so the correction joins the previous expression to it.")
#: Recorded status of each printed step (the audit recomputes and compares them); errata skip the wrong row.
_STEP_STATUS = {
    13: [Status.PROVED, Status.PROVED, Status.PROVED, Status.PROVED, Status.PROVED, Status.CONVENTION, Status.ERRATUM],
    14: [Status.PROVED, Status.PROVED, Status.PROVED, Status.PROVED, Status.CONVENTION, Status.ERRATUM],
}
_NOTES = {Status.CONVENTION: _LEFT_NN, Status.ERRATUM: _SKIP}


def _chain_entries(eq: int, exprs: list[Expr]) -> list[Entry]:
    table = StepTable("uat-arxiv", {str(k): e for k, e in enumerate(exprs)},
                      claim=lambda lhs, rhs: chain_step(lhs.build, rhs.build),
                      ref=lambda place: f"App. A, Eq. {eq}, step {place.rsplit('step', 1)[1]}",
                      correct=lambda lhs, rhs: left_tn_identity(lhs.build, rhs.build),
                      correction_suffix=r" \quad (A\diamond B = A^TB,\ \text{left to right})")
    steps = [Step(f"eq{eq}.step{k}", str(k - 1), str(k), status,
                  (str(k - 2), str(k)) if status is Status.ERRATUM else None, _NOTES.get(status, ""))
             for k, status in enumerate(_STEP_STATUS[eq], start=1)]
    return table.entries(steps)


def _printed_eq4_rhs(W, x, m, n) -> sympy.ImmutableMatrix:
    r"""The column displayed in Eq. 4: row 1 reads ``w_1 x_1 + w_{31} x_2 + ⋯ + w_{m,1} x_m``."""
    w31 = W[2, 0] if m >= 3 else sympy.Symbol("w_{3,1}")

    def row(i):
        if i > 0:
            return sum((W[k, i] * x[k, 0] for k in range(m)), sympy.S.Zero)
        terms = [W[0, 0] * x[0, 0]] + ([w31 * x[1, 0]] if m >= 2 else []) + [W[k, 0] * x[k, 0] for k in range(2, m)]
        return sum(terms, sympy.S.Zero)

    return sympy.ImmutableMatrix(n, 1, lambda i, _: row(i))


@functools.cache
def eq4_identity(rhs) -> Identity:
    return Identity(
        shapes={"W": ("m", "n"), "x": ("m", 1)},
        lhs=lambda W, x: diamond(W, x), rhs=rhs, dims=_MN,
        reference=lambda W, x: W.T @ x, random_dims={"m": 4, "n": 3},
    )


@functools.cache
def rows_of_result_identity(expected: str) -> Identity:
    """Number of rows of W ◇ x versus the printed claim y ∈ R^{(m,1)}."""
    return Identity(
        shapes={"W": ("m", "n"), "x": ("m", 1)},
        lhs=lambda W, x: sympy.Matrix([[diamond(W, x).shape[0]]]),
        rhs=lambda m, n: sympy.Matrix([[{"m": m, "n": n}[expected]]]), dims=_MN,
        reference=lambda W, x: np.array([(W.T @ x).shape[0]]), random_dims={"m": 4, "n": 3},
    )


@functools.cache
def vector_operand_identity(reading: str) -> Identity:
    swapped = (lambda W, x: diamond(x, W)) if reading == "vector-operand" else (lambda W, x: x.T * W)
    return Identity(
        shapes={"W": ("m", "n"), "x": ("m", 1)},
        lhs=lambda W, x: diamond(W, x), rhs=swapped, dims=_MN,
        random_dims={"m": 4, "n": 3},
    )


def _distributive() -> Identity:
    return Identity(
        shapes={"W": ("m", "n"), "x": ("m", 1), "y": ("m", 1)},
        lhs=lambda W, x, y: diamond(W, x + y),
        rhs=lambda W, x, y: diamond(W, x) + diamond(W, y), dims=_MN,
        reference=lambda W, x, y: W.T @ (x + y), random_dims={"m": 4, "n": 3},
    )


def _associative() -> Identity:
    tn = next(r for r in CHAIN_READINGS if r.name == "left-TN")
    return square_identity(lambda W1, W2, x: diamond(tn.matrix_product(W1, W2), x),
                   lambda W1, W2, x: diamond(W1, diamond(W2, x)), tn)


def _entries() -> list[Entry]:
    eq4 = (r"\left(\begin{array}{cccc}w_{1,1}&w_{1,2}&\cdots&w_{1,n}\\ \vdots&&&\vdots\\ w_{m,1}&w_{m,2}&&w_{m,n}"
           r"\end{array}\right)\diamond\left(\begin{array}{c}x_{1}\\ \vdots\\ x_{m}\end{array}\right)"
           r"=\left(\begin{array}{c}w_{1}x_{1}+w_{31}*x_{2}+\cdots w_{m,1}x_{m}\\ w_{1,2}x_{1}+w_{2,2}x_{2}+\cdots "
           r"w_{m,2}x_{m}\\ \vdots\\ w_{1,n}x_{1}+w_{2,n}x_{2}+\cdots w_{mn}x_{m}\end{array}\right)")
    return [
        Entry("uat-arxiv:eq4", "Eq. 4 (§3.2)", eq4, Status.ERRATUM, eq4_identity(_printed_eq4_rhs),
              correction=Correction(r"(\mathbf{W}\diamond\mathbf{x})_i=\sum_{k=1}^{m}w_{k,i}x_k,\ "
                                    r"\text{row 1: } w_{1,1}x_1+w_{2,1}x_2+\cdots+w_{m,1}x_m",
                                    eq4_identity(lambda W, x: W.T * x)),
              note="Row 1 is printed with $w_1$ (read as $w_{1,1}$) and $w_{31}$ where $w_{2,1}$ is meant; rows 2..n "
                   "are right. The correction is checked against the ordinary product $W^{T}x$."),
        Entry("uat-arxiv:sec3.2.claim1", "§3.2, definition of the Diamond product",
              r"\mathbf{W}\in\mathbb{R}^{(m,n)},\ \mathbf{x}\in\mathbb{R}^{(m,1)},\ "
              r"\mathbf{y}=\mathbf{W}\diamond\mathbf{x},\ \mathbf{y}\in\mathbb{R}^{(m,1)}",
              Status.ERRATUM, rows_of_result_identity("m"),
              correction=Correction(r"\mathbf{y}\in\mathbb{R}^{(n,1)}", rows_of_result_identity("n")),
              note=r"Checked as the number of rows of $W\diamond x$; y has one entry per column of W."),
        Entry("uat-arxiv:sec3.2.claim2", "§3.2",
              r"\mathbf{W}\diamond\mathbf{x}=\mathbf{x}\diamond\mathbf{W}", Status.CONVENTION,
              Readings("which operand of ◇ plays the vector",
                       {"vector-operand": vector_operand_identity("vector-operand"),
                        "positional": vector_operand_identity("positional")}),
              note=r"True by definition when the column-vector operand always plays x; read positionally ($x\diamond "
                   "W = x^{T}W$) the two sides differ in shape."),
        Entry("uat-arxiv:sec3.2.claim3", "§3.2", r"\mathbf{W}\diamond\mathbf{x}=\mathbf{W}^{T}\mathbf{x}",
              Status.PROVED, eq4_identity(lambda W, x: W.T * x)),
        Entry("uat-arxiv:sec3.2.claim4", "§3.2",
              r"\text{the Diamond Matrix Multiplication does not possess the property of associativity}",
              Status.PROVED, Denial(_associative()),
              note=r"Denied identity: ($W_{1}\diamond W_{2})\diamond x = W_{1}\diamond(W_{2}\diamond x$) with "
                   r"$W_{1}\diamond W_{2} = W_{1}^{T}W_{2}$; the counterexample proves the denial."),
        Entry("uat-arxiv:sec3.2.claim5", "§3.2",
              r"\text{the Diamond Matrix Multiplication does not possess the property of distributivity}",
              Status.ERRATUM, Denial(_distributive()),
              correction=Correction(r"\mathbf{W}\diamond(\mathbf{x}+\mathbf{y})=\mathbf{W}\diamond\mathbf{x}"
                                    r"+\mathbf{W}\diamond\mathbf{y}", _distributive()),
              note=r"$W\diamond x = W^{T}x$ is linear in x, so $\diamond$ distributes over addition; the denial is "
                   "false."),
        Entry("uat-arxiv:sec3.2.claim6", "§3.2 and App. A (first property)",
              r"\mathbf{W}_{1}\diamond[\mathbf{x}\diamond\mathbf{W}_{2}]=\mathbf{W}_{2}^{T}\diamond\mathbf{W}_{1}\diamond\mathbf{x}",
              Status.CONVENTION, chain_step(_EQ13[0].build, _EQ13[-1].build),
              note=r"True only when a chain is read left to right with $A\diamond B = A^{T}B$ (left-TN)."),
        Entry("uat-arxiv:sec3.2.claim7", "§3.2 and App. A (second property)",
              r"[\mathbf{W}_{1}\diamond\mathbf{x}]\diamond\mathbf{W}_{2}=\mathbf{W}_{1}^{T}\diamond\mathbf{W}_{2}\diamond\mathbf{x}",
              Status.CONVENTION, chain_step(_EQ14[0].build, _EQ14[-1].build),
              note=r"True only when a chain is read left to right with $A\diamond B = A^{T}B$ (left-TN)."),
        *_chain_entries(13, _EQ13),
        *_chain_entries(14, _EQ14),
    ]


def entries() -> list[Entry]:
    """The entries of this derivation, each with its Coq theorem where one states it (docs/coq.md)."""
    return linked(_entries())
