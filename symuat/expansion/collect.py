r"""Collecting an expanded noncommutative expression into DUAT shape.

After :func:`sympy.expand` every term of an expression built from Eq. 20 is a
product :math:`s\,M_1 \cdots M_n v` with a commutative scalar :math:`s`,
opaque matrices :math:`M_k` and a final vector-valued factor :math:`v`.  The
final factor decides the term's role in the DUAT form (Eq. 11 / Eq. 33)

.. math::
    \tilde A\,\mathbf x'_0 + \tilde c + \sum_j \tilde U_j\,\sigma(a_j) + \sum_R M_R R,

namely :math:`v = \mathbf x'_0` (linear part), :math:`v = \sigma(a_j)` (a
sigma term, grouped by its *argument*), :math:`v = R` for a named remainder
:math:`R` (the paper's :math:`UAT^R`), anything else (bias).  This module only
reads coefficients off an already expanded expression; it never expands.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..errors import DerivationError
from .symbols import is_sigma

__all__ = ["AffineParts", "canonical_expand", "split_term", "split_affine"]


def canonical_expand(expr: sympy.Expr) -> sympy.Expr:
    r"""Distribute every product over every sum, also inside :math:`\sigma` arguments.

    This is ``sympy.expand(expr, deep=True)`` restricted to the ``mul`` hint
    (``sympy.expand_mul``): the expressions of Eq. 20 contain no powers,
    logarithms or multinomials, and noncommutative factors keep their order.
    Two expressions of such polynomials in opaque matrices are equal iff
    their canonical expansions are identical.
    """
    return sympy.expand_mul(sympy.sympify(expr), deep=True)


@dataclass(frozen=True)
class AffineParts:
    r"""Coefficients of an expanded expression read as a DUAT form.

    Attributes
    ----------
    linear : sympy.Expr
        :math:`\tilde A` with the linear part equal to :math:`\tilde A\,\mathbf x'_0`.
    bias : sympy.Expr
        The sum of the terms that end in neither :math:`\mathbf x'_0`, a
        :math:`\sigma` application nor a named remainder.
    sigma_terms : tuple of (sympy.Expr, sympy.Expr)
        Pairs ``(coefficient, sigma(arg))``, one per distinct application, in
        order of first appearance.
    remainder_terms : tuple of (sympy.Expr, sympy.Symbol)
        Pairs ``(coefficient, R)`` for each named remainder ``R``.
    """

    linear: sympy.Expr
    bias: sympy.Expr
    sigma_terms: tuple
    remainder_terms: tuple


def split_term(term: sympy.Expr) -> tuple[sympy.Expr, sympy.Expr | None]:
    r"""Split a product :math:`s M_1\cdots M_n v` into ``(s M_1 ... M_n, v)``.

    Returns ``(term, None)`` for a commutative term (no vector factor).
    """
    c_part, nc_part = term.args_cnc()
    if not nc_part:
        return term, None
    return sympy.Mul(*c_part) * sympy.Mul(*nc_part[:-1]), nc_part[-1]


def split_affine(
    expr: sympy.Expr, x0: sympy.Symbol, remainders: frozenset = frozenset()
) -> AffineParts:
    r"""Read the DUAT coefficients off an *expanded* expression.

    Parameters
    ----------
    expr : sympy.Expr
        An expression already passed through ``sympy.expand(..., deep=True)``.
    x0 : sympy.Symbol
        The input vector :math:`\mathbf x'_0`.
    remainders : frozenset of sympy.Symbol
        Named remainders :math:`R_k` to be reported separately.

    Returns
    -------
    AffineParts

    Raises
    ------
    DerivationError
        If :math:`\mathbf x'_0` occurs as a top-level factor anywhere but last
        (the expression is then not affine in the input at top level).
    """
    linear: list = []
    bias: list = []
    sig: dict = {}
    rem: dict = {}
    for term in sympy.Add.make_args(sympy.sympify(expr)):
        if term == 0:
            continue
        coeff, last = split_term(term)
        if any(f == x0 for f in sympy.Mul.make_args(coeff)):
            raise DerivationError(f"term {term} is not affine in {x0}: it has {x0} in a non-final position")
        if last == x0:
            linear.append(coeff)
        elif last is not None and is_sigma(last):
            sig.setdefault(last, []).append(coeff)
        elif last is not None and last in remainders:
            rem.setdefault(last, []).append(coeff)
        else:
            bias.append(term)
    return AffineParts(
        linear=sympy.Add(*linear),
        bias=sympy.Add(*bias),
        sigma_terms=tuple((sympy.Add(*c), a) for a, c in sig.items()),
        remainder_terms=tuple((sympy.Add(*c), r) for r, c in rem.items()),
    )
