r"""Witnesses: a concrete point at which the two sides of a claim differ, re-checked independently.

A level says ✗ only with a :class:`Witness`.  It is *found* by symuat's own evaluator
(:mod:`symuat.evidence.fields`: :math:`\mathbb F_p`, :math:`\mathbb Q` or float64) and *checked* by code that
shares nothing with it:

* :math:`\mathbb F_p` and :math:`\mathbb Q` points — both sides re-evaluated by SymPy itself (``xreplace`` with
  exact ``Integer``/``Rational`` values, SymPy's own ``Max``, ``Abs``, ``Piecewise``), then reduced mod
  :math:`p` for :math:`\mathbb F_p`; :math:`\sigma` is the same keyed random function of the exact argument;
* real points (float64 inputs are exact dyadic rationals) — both sides enclosed by mpmath's interval arithmetic
  (:mod:`symuat.evidence.interval`), :math:`\sigma` the logistic function; the enclosures must be disjoint.

Which field is searched follows the sides' :class:`~symuat.evidence.functions.Kind`: rational sides in
:math:`\mathbb F_p` (Schwartz–Zippel), piecewise-linear ones in :math:`\mathbb Q`, others at real points.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import sympy
from sympy.core.function import AppliedUndef

from ..errors import UnsupportedError
from ..names import SIGMA
from .fields import PrimeField, RationalField, RealField, evaluate
from .functions import Kind, expression_kind, unsupported_node
from .interval import disjoint, enclose, interval_text

__all__ = ["Witness", "find_witness", "point_text", "certify_prime", "certify_rational", "certify_real", "Draw",
           "RATIONAL_TRIALS", "REAL_TRIALS", "PRECISIONS"]

#: Random points of Q tried for a piecewise-linear difference, and real points for a transcendental one.
RATIONAL_TRIALS = 24
REAL_TRIALS = 8
#: Working precisions (bits) of the interval check, tried in turn.
PRECISIONS = (128, 512)

#: ``draw(field, trial) -> {symbol: value}``: a random point inside the claim's hypotheses.
Draw = Callable[[Any, int], dict]


@dataclass(frozen=True)
class Witness:
    """Where the sides differ: the field, the point (symbol name -> exact value), both values, who checked."""

    field: str
    point: Mapping[str, str]
    lhs: str
    rhs: str
    checked_by: str

    @property
    def text(self) -> str:
        where = ", ".join(f"{k} = {v}" for k, v in list(self.point.items())[:6])
        more = f", … ({len(self.point)} inputs)" if len(self.point) > 6 else ""
        return f"at {where}{more} in {self.field}: lhs = {self.lhs}, rhs = {self.rhs} ({self.checked_by})"

    def to_data(self) -> dict[str, Any]:
        return {"field": self.field, "point": dict(self.point), "lhs": self.lhs, "rhs": self.rhs,
                "checked_by": self.checked_by}


def point_text(values: Mapping, exprs) -> dict[str, str]:
    """The inputs of ``exprs`` at ``values``, by symbol name, exactly (a float by its round-trip repr)."""
    used = set().union(*(e.free_symbols for e in exprs))
    return {s.name: str(v) if not isinstance(v, float) else repr(v) for s, v in
            sorted(values.items(), key=lambda kv: kv[0].name) if s in used}


def _sympy_value(expr, point: Mapping, sigma: Callable):
    """``expr`` at ``point`` by SymPy itself; every σ(argument) replaced, innermost first, by ``sigma(argument)``."""
    out = expr.xreplace(point)
    return out.replace(lambda n: isinstance(n, AppliedUndef) and n.func == SIGMA, lambda n: sigma(n.args[0]))


def _mod(value, p: int) -> int | None:
    if not value.is_Rational:
        return None
    num, den = int(value.p), int(value.q)
    if den % p == 0:
        return None
    return num * pow(den, p - 2, p) % p


def certify_prime(lhs, rhs, values: Mapping, fld: PrimeField) -> Witness | None:
    """The F_p point re-checked with SymPy's exact integers, reduced mod p; ``None`` if the sides agree there."""
    point = {s: sympy.Integer(int(v)) for s, v in values.items()}

    def sigma(arg):
        m = _mod(sympy.sympify(arg), fld.p)
        if m is None:
            raise UnsupportedError("a sigma argument has no value mod p")
        return sympy.Integer(fld._sigma_scalar(m))

    try:
        lv, rv = (_mod(_sympy_value(e, point, sigma), fld.p) for e in (lhs, rhs))
    except UnsupportedError:
        return None
    if lv is None or rv is None or lv == rv:
        return None
    return Witness(f"F_p (p = {fld.p}, sigma a keyed random function, key {fld.seed})",
                   point_text(values, (lhs, rhs)), str(lv), str(rv), "re-checked with SymPy's exact integers, mod p")


def certify_rational(lhs, rhs, values: Mapping, fld: RationalField) -> Witness | None:
    """The rational point re-checked by SymPy's exact arithmetic (its own Max, Abs, Piecewise)."""
    point = {s: sympy.Rational(v.numerator, v.denominator) for s, v in values.items()}

    def sigma(arg):
        arg = sympy.sympify(arg)
        if not arg.is_Rational:
            raise UnsupportedError("a sigma argument is not rational")
        value = fld._sigma_scalar(Fraction(int(arg.p), int(arg.q)))
        return sympy.Rational(value.numerator, value.denominator)

    try:
        lv, rv = (_sympy_value(e, point, sigma) for e in (lhs, rhs))
    except (UnsupportedError, TypeError):
        return None
    if not (lv.is_Rational and rv.is_Rational) or lv == rv:
        return None
    return Witness("Q", point_text(values, (lhs, rhs)), str(lv), str(rv), "re-checked with SymPy's exact rationals")


def certify_real(lhs, rhs, values: Mapping) -> Witness | None:
    """Disjoint mpmath interval enclosures of both sides at the (exact) point; ``None`` if they overlap."""
    for prec in PRECISIONS:
        try:
            lv, rv = enclose(lhs, values, prec), enclose(rhs, values, prec)
        except UnsupportedError:
            return None
        if disjoint(lv, rv):
            return Witness("R (float64 inputs, exact)", point_text(values, (lhs, rhs)), interval_text(lv),
                           interval_text(rv), f"disjoint enclosures, mpmath interval arithmetic at {prec} bits")
    return None


def _float_candidate(lhs, rhs, values) -> bool:
    with np.errstate(all="ignore"):
        try:
            lv, rv = (float(evaluate(e, values, RealField())) for e in (lhs, rhs))
        except (UnsupportedError, ZeroDivisionError, OverflowError, TypeError, ValueError):
            return True  # float64 cannot tell: let the intervals decide
    if not (np.isfinite(lv) and np.isfinite(rv)):
        return True
    return abs(lv - rv) > 1e-9 * (1.0 + abs(lv) + abs(rv))


def find_witness(lhs: sympy.Expr, rhs: sympy.Expr, draw: Draw, seed: int = 0) -> tuple[Witness | None, str]:
    r"""A checked witness that ``lhs != rhs``, or ``(None, what was searched)``.

    ``draw(field, trial)`` gives a random point inside the claim's hypotheses for that field.

    >>> x, y = sympy.symbols("x y")
    >>> w, _ = find_witness(sympy.Max(x, y), x, lambda fld, t: {x: fld.random(np.random.default_rng(t)),
    ...                                                          y: fld.random(np.random.default_rng(t + 99))})
    >>> w.field, w.checked_by
    ('Q', "re-checked with SymPy's exact rationals")
    """
    free = sorted(lhs.free_symbols | rhs.free_symbols, key=lambda s: s.name)
    inner = draw

    def draw(fld, t):  # symbols a builder made itself (not declared variables) get random values too
        values = inner(fld, t)
        rng = np.random.default_rng([13, t])
        values.update({s: fld.random(rng) for s in free if s not in values})
        return values

    kind = expression_kind((lhs, rhs))
    if kind is Kind.UNSUPPORTED:
        node = unsupported_node((lhs, rhs))
        return None, f"no level evaluates {type(node).__name__} ({node})"
    if kind is Kind.RATIONAL:
        for t in range(2):
            fld = PrimeField(seed=seed * 1000 + t)
            values = draw(fld, t)
            try:
                if int(evaluate(lhs, values, fld)) != int(evaluate(rhs, values, fld)):
                    found = certify_prime(lhs, rhs, values, fld)
                    if found is not None:
                        return found, ""
            except ZeroDivisionError:
                continue
    if kind is Kind.PIECEWISE:  # rational sides: F_p above is sound and complete up to Schwartz–Zippel
        for t in range(RATIONAL_TRIALS):
            fld = RationalField(seed)
            values = draw(fld, t)
            try:
                if evaluate(lhs, values, fld) != evaluate(rhs, values, fld):
                    found = certify_rational(lhs, rhs, values, fld)
                    if found is not None:
                        return found, ""
            except (ZeroDivisionError, UnsupportedError):
                continue
    searched = {Kind.RATIONAL: "2 points of F_p", Kind.PIECEWISE: f"{RATIONAL_TRIALS} points of Q"}.get(kind, "")
    if kind is Kind.TRANSCENDENTAL:
        for t in range(REAL_TRIALS):
            values = draw(RealField(), t)
            if _float_candidate(lhs, rhs, values):
                found = certify_real(lhs, rhs, values)
                if found is not None:
                    return found, ""
        searched = f"{REAL_TRIALS} real points (mpmath intervals)"
    return None, searched
