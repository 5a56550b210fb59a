r"""Rigorous enclosures of a SymPy expression at an exact point, with mpmath's interval arithmetic.

:func:`enclose` walks the expression itself (it shares no code with the float64 evaluator of
:mod:`symuat.evidence.fields` that looks for a candidate witness) and returns an ``mpmath.iv`` interval
that contains the exact value, every input being an exact rational (a float64 input is one).
:math:`\sigma` is the logistic function, as at the float level.  ``tanh`` is
:math:`1 - 2/(e^{2x}+1)` (one occurrence of :math:`x`, so the enclosure stays tight) and ``erf`` its
alternating Taylor series with the first omitted term as the remainder bound (for :math:`|x| \le 6`; beyond
that :math:`1 - \operatorname{erf}|x| \le e^{-x^2}/(|x|\sqrt\pi)`).  A node it cannot enclose, or a
``Piecewise`` condition that the intervals do not decide, raises :class:`~symuat.errors.UnsupportedError`.

>>> x = sympy.Symbol("x")
>>> box = enclose(sympy.exp(x) - 1 - x, {x: Fraction(1, 1000)}, 128)
>>> bool(box.a > 0) and bool(box.b < 6e-7)
True
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

import mpmath
import numpy as np
import sympy
from sympy.core.function import AppliedUndef

from ..errors import UnsupportedError
from ..names import SIGMA
from .functions import RELATIONS

__all__ = ["enclose", "disjoint", "interval_text"]

iv = mpmath.iv


def _exact(value) -> object:
    """An exact input as an interval (a Fraction's quotient is rounded outwards)."""
    if isinstance(value, Fraction):
        return iv.mpf(value.numerator) / iv.mpf(value.denominator)
    if isinstance(value, (int, float, np.floating, np.integer)):
        return iv.mpf(float(value)) if isinstance(value, (float, np.floating)) else iv.mpf(int(value))  # exact
    raise UnsupportedError(f"cannot enclose the input {value!r}")


def _erf(x):
    """An enclosure of erf over the interval ``x`` (erf is increasing: enclose the end points)."""
    return iv.mpf([_erf_point(iv.mpf(x.a)).a, _erf_point(iv.mpf(x.b)).b])


def _erf_point(x):
    t = float(mpmath.mpf(x.a))
    if abs(t) > 6:  # 0 < 1 - erf|t| <= exp(-t^2)/(|t| sqrt(pi))
        tail = iv.exp(-x * x) / (abs(x) * iv.sqrt(iv.pi))
        one = iv.mpf(1) - iv.mpf([0, tail.b])
        return one if t > 0 else -one
    total, term, n = iv.mpf(0), x, 0  # term_n = (-1)^n x^(2n+1) / n!
    while True:
        piece = term / (2 * n + 1)
        total += piece
        n += 1
        term = -term * x * x / n
        nxt = term / (2 * n + 1)
        if n > t * t + 1 and abs(nxt).b < iv.mpf(2) ** (-iv.prec - 8):
            break
    bound = abs(nxt).b
    return 2 / iv.sqrt(iv.pi) * (total + iv.mpf([-bound, bound]))


def _tanh(x):
    return 1 - 2 / (iv.exp(2 * x) + 1)


_FUNCTIONS = {sympy.exp: lambda a: iv.exp(a), sympy.log: lambda a: _log(a), sympy.tanh: _tanh, sympy.erf: _erf,
              sympy.sin: lambda a: iv.sin(a), sympy.cos: lambda a: iv.cos(a),
              sympy.sinh: lambda a: (iv.exp(a) - iv.exp(-a)) / 2, sympy.cosh: lambda a: (iv.exp(a) + iv.exp(-a)) / 2,
              sympy.Abs: lambda a: abs(a), sympy.sign: lambda a: _sign(a)}


def _log(a):
    if not a.a > 0:
        raise UnsupportedError(f"log of an interval {a} that is not positive")
    return iv.log(a)


def _sign(a):
    if a.a > 0:
        return iv.mpf(1)
    if a.b < 0:
        return iv.mpf(-1)
    if a.a == 0 and a.b == 0:
        return iv.mpf(0)
    raise UnsupportedError(f"the sign of {a} is not decided by the interval")


def _maximum(args, sign: int):
    r"""``Max`` (``sign`` 1) or ``Min`` (-1) as :math:`(a + b \pm |a - b|)/2`, folded: interval operations only
    (rounded outwards), never a conversion of an end point to a lower precision."""
    out = args[0]
    for b in args[1:]:
        out = (out + b + sign * abs(out - b)) / 2
    return out


def _truth(cond, point, memo) -> bool:
    if cond is sympy.true or cond is sympy.false:
        return bool(cond)
    if cond.func in RELATIONS:
        a, b = (_walk(x, point, memo) for x in cond.args)
        yes, no = RELATIONS[cond.func](a, b), _negation(cond.func)(a, b)
        if yes is True or (yes and no is False):
            return True
        if no is True or yes is False:
            return False
        raise UnsupportedError(f"the condition {cond} is not decided by the intervals {a}, {b}")
    if isinstance(cond, sympy.And):
        return all(_truth(c, point, memo) for c in cond.args)
    if isinstance(cond, sympy.Or):
        return any(_truth(c, point, memo) for c in cond.args)
    if isinstance(cond, sympy.Not):
        return not _truth(cond.args[0], point, memo)
    raise UnsupportedError(f"cannot enclose the condition {cond}")


def _negation(rel):
    opposite = {sympy.StrictLessThan: sympy.GreaterThan, sympy.LessThan: sympy.StrictGreaterThan,
                sympy.StrictGreaterThan: sympy.LessThan, sympy.GreaterThan: sympy.StrictLessThan,
                sympy.Equality: sympy.Unequality, sympy.Unequality: sympy.Equality}
    return RELATIONS[opposite[rel]]


def _walk(e, point, memo):
    hit = memo.get(e)
    if hit is not None:
        return hit
    if e.is_Symbol:
        if e not in point:
            raise UnsupportedError(f"no value bound to symbol {e}")
        out = _exact(point[e])
    elif e.is_Rational:
        out = iv.mpf(int(e.p)) / iv.mpf(int(e.q))
    elif e is sympy.pi:
        out = iv.pi
    elif e is sympy.E:
        out = iv.e
    elif e.is_Float:
        out = iv.mpf(mpmath.mpf(e._mpf_))
    elif e.is_Add:
        out = iv.mpf(0)
        for a in e.args:
            out = out + _walk(a, point, memo)
    elif e.is_Mul:
        out = iv.mpf(1)
        for a in e.args:
            out = out * _walk(a, point, memo)
    elif e.is_Pow:
        base, exp = _walk(e.base, point, memo), e.exp
        if exp.is_Integer:
            n = int(exp)
            if n < 0 and base.a <= 0 <= base.b:
                raise UnsupportedError(f"the denominator of {e} encloses 0")
            out = base ** n
        elif exp == sympy.Rational(1, 2):
            if not base.a >= 0:
                raise UnsupportedError(f"sqrt of an interval {base} that is not nonnegative")
            out = iv.sqrt(base)
        else:
            out = iv.exp(_log(base) * _walk(exp, point, memo))
    elif isinstance(e, AppliedUndef) and e.func == SIGMA:
        out = 1 / (1 + iv.exp(-_walk(e.args[0], point, memo)))
    elif e.func in (sympy.Max, sympy.Min):
        out = _maximum([_walk(a, point, memo) for a in e.args], 1 if e.func is sympy.Max else -1)
    elif isinstance(e, sympy.Piecewise):
        for expr, cond in e.args:
            if _truth(cond, point, memo):
                out = _walk(expr, point, memo)
                break
        else:
            raise UnsupportedError(f"{e} has no value at this point")
    elif e.func in _FUNCTIONS:
        out = _FUNCTIONS[e.func](_walk(e.args[0], point, memo))
    else:
        raise UnsupportedError(f"cannot enclose {type(e).__name__} node {e} with mpmath intervals")
    memo[e] = out
    return out


def enclose(expr: sympy.Basic, point: Mapping[sympy.Symbol, object], prec: int = 128):
    """An ``mpmath.iv`` interval containing the value of ``expr`` at ``point``, at ``prec`` bits."""
    saved, iv.prec = iv.prec, prec
    try:
        return _walk(sympy.sympify(expr), point, {})
    except (ZeroDivisionError, ValueError, OverflowError) as exc:
        raise UnsupportedError(f"mpmath intervals cannot enclose {expr} here ({exc})") from None
    finally:
        iv.prec = saved


def disjoint(a, b) -> bool:
    """The two intervals have no point in common: the exact values differ."""
    return bool(a.b < b.a) or bool(b.b < a.a)


def interval_text(a) -> str:
    """``[lo, hi]`` with 12 significant digits, rounded outwards."""
    lo = mpmath.nstr(mpmath.mpf(a.a), 12, min_fixed=-4, max_fixed=6)
    hi = mpmath.nstr(mpmath.mpf(a.b), 12, min_fixed=-4, max_fixed=6)
    return f"[{lo}, {hi}]"
