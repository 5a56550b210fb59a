r"""Which functions a claim uses, and which evaluator can evaluate them (``docs/evidence.md``).

Every node of a side falls in one *kind*, and the kind of an expression is the largest kind of its nodes:

* ``rational`` — numbers that are rationals, symbols, ``+``, ``×``, integer powers and the uninterpreted
  :math:`\sigma`: exact over :math:`\mathbb F_p` (Schwartz–Zippel) and over :math:`\mathbb Q`;
* ``piecewise`` — in addition ``Max``, ``Min``, ``Abs``, ``sign``, ``Heaviside``, ``Piecewise`` and the
  relations in its conditions: exact over :math:`\mathbb Q` (no :math:`\mathbb F_p`: it has no order);
* ``transcendental`` — in addition the functions of :data:`REAL_FUNCTIONS` (``exp``, ``log``, ``tanh``, ``erf``,
  ``sqrt`` and other non-integer powers, …) and constants such as :math:`\pi`: float64, and mpmath intervals;
* ``unsupported`` — anything else (an unknown function): no level evaluates it, every level is undecided.

>>> x, y = sympy.symbols("x y")
>>> [expression_kind(e).name for e in (x / y, sympy.Max(x, y), sympy.exp(x), sympy.Function("f")(x))]
['RATIONAL', 'PIECEWISE', 'TRANSCENDENTAL', 'UNSUPPORTED']
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable

import numpy as np
import sympy
from sympy.core.function import AppliedUndef
from sympy.logic.boolalg import Boolean, BooleanAtom

from ..names import SIGMA

__all__ = ["Kind", "expression_kind", "unsupported_node", "ORDERED_FUNCTIONS", "REAL_FUNCTIONS", "RELATIONS"]


class Kind(enum.IntEnum):
    """What an expression needs to be evaluated, from the most to the least exact."""

    RATIONAL = 0
    PIECEWISE = 1
    TRANSCENDENTAL = 2
    UNSUPPORTED = 3


#: Piecewise-linear functions, evaluated exactly over an ordered field (``Q``) and in float64.
ORDERED_FUNCTIONS = {
    sympy.Max: lambda *a: _reduce(max, np.maximum, a),
    sympy.Min: lambda *a: _reduce(min, np.minimum, a),
    sympy.Abs: lambda a: abs(a),
    sympy.sign: lambda a: np.sign(a) if isinstance(a, np.ndarray) else (a > 0) - (a < 0),
    sympy.Heaviside: lambda a, h=None: _heaviside(a, h),
}

#: Relations of a ``Piecewise`` condition.
RELATIONS = {
    sympy.StrictLessThan: lambda a, b: a < b, sympy.LessThan: lambda a, b: a <= b,
    sympy.StrictGreaterThan: lambda a, b: a > b, sympy.GreaterThan: lambda a, b: a >= b,
    sympy.Equality: lambda a, b: a == b, sympy.Unequality: lambda a, b: a != b,
}

_erf = np.vectorize(math.erf, otypes=[float])

#: Elementary functions evaluated in float64 (NumPy); mpmath intervals cover them in :mod:`.interval`.
REAL_FUNCTIONS = {
    sympy.exp: np.exp, sympy.log: np.log, sympy.tanh: np.tanh, sympy.erf: _erf, sympy.sin: np.sin,
    sympy.cos: np.cos, sympy.sinh: np.sinh, sympy.cosh: np.cosh, sympy.atan: np.arctan,
}


def _reduce(scalar, vector, args):
    if any(isinstance(a, np.ndarray) for a in args):
        out = args[0]
        for a in args[1:]:
            out = vector(out, a)
        return out
    return scalar(args)


def _heaviside(a, h):
    if isinstance(a, np.ndarray):
        return np.heaviside(a, 0.5 if h is None else h)
    if a == 0:
        if h is None:
            raise ValueError("Heaviside(0) has no value without its second argument")
        return h
    return 1 if a > 0 else 0


def _node_kind(e) -> Kind:
    if e.is_Symbol or e.is_Rational or isinstance(e, BooleanAtom):
        return Kind.RATIONAL
    if e.is_Number or e.is_NumberSymbol:
        return Kind.TRANSCENDENTAL
    if e.is_Add or e.is_Mul:
        return Kind.RATIONAL
    if e.is_Pow:
        return Kind.RATIONAL if e.exp.is_Integer else Kind.TRANSCENDENTAL
    if isinstance(e, AppliedUndef):
        return Kind.RATIONAL if e.func == SIGMA else Kind.UNSUPPORTED
    if e.func in ORDERED_FUNCTIONS or isinstance(e, (sympy.Piecewise, sympy.logic.boolalg.BooleanFunction)) \
            or e.func in RELATIONS or isinstance(e, sympy.core.relational.Relational):
        return Kind.PIECEWISE
    if isinstance(e, sympy.functions.elementary.piecewise.ExprCondPair):
        return Kind.PIECEWISE
    if e.func in REAL_FUNCTIONS:
        return Kind.TRANSCENDENTAL
    return Kind.UNSUPPORTED


def expression_kind(exprs: sympy.Basic | Iterable[sympy.Basic], memo: dict | None = None) -> Kind:
    """The largest :class:`Kind` of the nodes of ``exprs`` (each shared node visited once)."""
    memo = {} if memo is None else memo
    stack = [exprs] if isinstance(exprs, sympy.Basic) else list(exprs)
    kind = Kind.RATIONAL
    while stack:
        e = stack.pop()
        if e in memo:
            continue
        memo[e] = True
        kind = max(kind, _node_kind(e))
        if kind is Kind.UNSUPPORTED:
            return kind
        if not isinstance(e, (sympy.Basic, Boolean)):
            continue
        stack.extend(e.args)
    return kind


def unsupported_node(exprs: Iterable[sympy.Basic]) -> sympy.Basic | None:
    """The first node no evaluator knows (for the ``undecided`` reason), else ``None``."""
    stack, seen = list(exprs), set()
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        if _node_kind(e) is Kind.UNSUPPORTED:
            return e
        stack.extend(e.args)
    return None
