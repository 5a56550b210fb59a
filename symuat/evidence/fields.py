r"""Evaluate SymPy expressions over a field, independently of SymPy's simplifier.

Two fields are provided:

* :class:`PrimeField` — exact arithmetic in :math:`\mathbb{F}_p` with
  :math:`p = 2^{61}-1`; :math:`\sigma` is a random function
  :math:`\mathbb{F}_p\to\mathbb{F}_p` (a keyed hash), so every identity that holds
  for an *uninterpreted* :math:`\sigma` holds here too;
* :class:`RealField` — float64 with a concrete activation; it also tracks a
  magnitude bound used to derive rounding tolerances.

The evaluator walks the expression tree itself (``Add``, ``Mul``, ``Pow`` with an
integer exponent, rationals, symbols, the uninterpreted ``sigma`` and, in
:class:`RealField` only, ``exp`` for softmax), memoising
shared sub-expressions, so it never calls ``expand`` or ``simplify``: it cannot
share a bug with the symbolic level.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import sympy

from ..errors import UnsupportedError
from ..names import SIGMA, logistic
from .functions import ORDERED_FUNCTIONS, REAL_FUNCTIONS, RELATIONS

__all__ = ["MERSENNE_61", "PrimeField", "RationalField", "RealField", "evaluate", "SIGMA", "logistic",
           "structural_degree", "magnitude", "is_polynomial", "sigma_arguments"]

MERSENNE_61 = (1 << 61) - 1



@dataclass(frozen=True)
class PrimeField:
    r"""Arithmetic in :math:`\mathbb{F}_p` with a keyed random :math:`\sigma`."""

    seed: int
    p: int = MERSENNE_61

    def const(self, value: sympy.Rational) -> int:
        num, den = int(value.p), int(value.q)
        return (num % self.p) * pow(den % self.p, self.p - 2, self.p) % self.p

    def add(self, a, b):
        return (a + b) % self.p

    def mul(self, a, b, matrix: bool):
        if matrix:
            return np.dot(a, b) % self.p
        return (a * b) % self.p

    def inv(self, a):
        if isinstance(a, np.ndarray):
            raise UnsupportedError("negative powers of matrices are not supported in F_p")
        if int(a) % self.p == 0:
            raise ZeroDivisionError("a denominator is 0 in F_p at this point")
        return pow(int(a), self.p - 2, self.p)

    def sigma(self, a):
        return _vectorise(self._sigma_scalar, a)

    def _sigma_scalar(self, v: int) -> int:
        digest = hashlib.blake2b(f"{self.seed}:{int(v) % self.p}".encode(), digest_size=16)
        return int.from_bytes(digest.digest(), "big") % self.p

    def random(self, rng: np.random.Generator) -> int:
        return int(rng.integers(0, self.p, dtype=np.int64))


@dataclass(frozen=True)
class RationalField:
    r"""Exact arithmetic in :math:`\mathbb{Q}` (Python ``Fraction``): rational and piecewise-linear functions.

    :math:`\sigma` is a keyed random function :math:`\mathbb Q \to \{-8, \dots, 8\}/8`; ``Max``, ``Min``,
    ``Abs``, ``Piecewise`` are decided exactly (the field is ordered).

    >>> x = sympy.Symbol("x")
    >>> evaluate(sympy.Max(x, 1 - x) / 3, {x: Fraction(1, 4)}, RationalField(0))
    Fraction(1, 4)
    """

    seed: int = 0
    ordered = True

    def const(self, value: sympy.Rational) -> Fraction:
        if not value.is_Rational:
            raise UnsupportedError(f"the constant {value} has no exact value in Q")
        return Fraction(int(value.p), int(value.q))

    def add(self, a, b):
        return a + b

    def mul(self, a, b, matrix: bool):
        if matrix:
            raise UnsupportedError("matrix products are not evaluated in Q")
        return a * b

    def inv(self, a):
        if isinstance(a, np.ndarray):
            raise UnsupportedError("negative powers of matrices are not supported in Q")
        return 1 / Fraction(a)  # ZeroDivisionError at a zero denominator

    def sigma(self, a):
        return _vectorise(self._sigma_scalar, a)

    def _sigma_scalar(self, v: Fraction) -> Fraction:
        v = Fraction(v)
        digest = hashlib.blake2b(f"{self.seed}:{v.numerator}/{v.denominator}".encode(), digest_size=8)
        return Fraction(int.from_bytes(digest.digest(), "big") % 17 - 8, 8)

    def random(self, rng: np.random.Generator) -> Fraction:
        return Fraction(int(rng.integers(-48, 49)), int(rng.integers(1, 17)))


@dataclass(frozen=True)
class RealField:
    r"""float64 arithmetic with a concrete activation :math:`\sigma`."""

    activation: Callable[[np.ndarray], np.ndarray] = logistic
    ordered = True

    def const(self, value: sympy.Expr) -> float:
        return float(value)

    def add(self, a, b):
        return a + b

    def mul(self, a, b, matrix: bool):
        return a @ b if matrix else a * b

    def inv(self, a):
        return 1.0 / a

    def sigma(self, a):
        return self.activation(np.asarray(a, dtype=float)) if isinstance(a, np.ndarray) else float(
            self.activation(np.asarray(float(a)))
        )

    def random(self, rng: np.random.Generator) -> float:
        return float(rng.standard_normal())


def _vectorise(f, a):
    if isinstance(a, np.ndarray):
        return np.frompyfunc(f, 1, 1)(a).astype(object)
    return f(a)


def evaluate(expr: sympy.Basic, values: Mapping[sympy.Symbol, object], fld, memo: dict | None = None):
    r"""Evaluate ``expr`` in ``fld`` with ``values`` bound to its free symbols.

    Noncommutative factors of a ``Mul`` are multiplied as matrices, in order.

    >>> x, y = sympy.symbols("x y")
    >>> evaluate(x * y + sympy.Rational(1, 2), {x: 3, y: 4}, RealField())
    12.5
    """
    memo = {} if memo is None else memo
    return _eval(expr, values, fld, memo)


def _eval(e, values, fld, memo):
    hit = memo.get(e)
    if hit is not None:
        return hit
    if e.is_Symbol:
        try:
            out = values[e]
        except KeyError:
            raise UnsupportedError(f"no value bound to symbol {e}") from None
    elif e.is_Rational:
        out = fld.const(e)
    elif e.is_Number or e.is_NumberSymbol:
        if isinstance(fld, PrimeField):
            raise UnsupportedError(f"the constant {e} has no value in F_p")
        out = fld.const(e)
    elif e.is_Add:
        terms = [_eval(a, values, fld, memo) for a in e.args]
        out = terms[0]
        for t in terms[1:]:
            out = fld.add(out, t)
    elif e.is_Mul:
        out = None
        for factor in e.args:
            v = _eval(factor, values, fld, memo)
            if out is None:
                out = v
            else:
                matrix = (not factor.is_commutative) and isinstance(out, np.ndarray) and out.ndim == 2 \
                    and isinstance(v, np.ndarray)
                out = fld.mul(out, v, matrix)
    elif e.is_Pow:
        base, exp = e.args
        if not exp.is_Integer:
            if isinstance(fld, PrimeField):
                raise UnsupportedError(f"the power {e} has no value in F_p")
            out = _power(e, _eval(base, values, fld, memo), _eval(exp, values, fld, memo), fld)
        else:
            b = _eval(base, values, fld, memo)
            n = int(exp)
            if n < 0:
                b, n = fld.inv(b), -n
            matrix = (not base.is_commutative) and isinstance(b, np.ndarray) and b.ndim == 2
            out = None
            for _ in range(n):
                out = b if out is None else fld.mul(out, b, matrix)
            if out is None:
                out = fld.const(sympy.Integer(1))
    elif isinstance(e, sympy.core.function.AppliedUndef) and e.func == SIGMA:
        out = fld.sigma(_eval(e.args[0], values, fld, memo))
    elif e.func in ORDERED_FUNCTIONS and getattr(fld, "ordered", False):
        out = ORDERED_FUNCTIONS[e.func](*(_eval(a, values, fld, memo) for a in e.args))
    elif isinstance(e, sympy.Piecewise) and getattr(fld, "ordered", False):
        out = _piecewise(e, values, fld, memo)
    elif e.func in REAL_FUNCTIONS and isinstance(fld, RealField):
        out = REAL_FUNCTIONS[e.func](_eval(e.args[0], values, fld, memo))
    elif getattr(e.func, "__name__", None) == SIGMA.__name__:
        raise UnsupportedError(f"cannot evaluate {e}: a function named sigma that is not symuat.SIGMA "
                               "(build σ with symuat.SIGMA, the finite uninterpreted activation)")
    else:
        raise UnsupportedError(f"cannot evaluate {type(e).__name__} node {e} in {type(fld).__name__}")
    memo[e] = out
    return out


def _power(e, base, exp, fld):
    """A power with a non-integer (possibly symbolic) exponent: real powers in float64; exact in Q only when the
    exponent's value is an integer."""
    if isinstance(fld, RealField):
        with np.errstate(invalid="ignore"):  # a negative base: NaN (never a complex number)
            return np.power(base, exp) if isinstance(base, np.ndarray) else float(np.power(float(base), float(exp)))
    if isinstance(fld, RationalField) and Fraction(exp).denominator == 1:
        n = int(exp)
        return Fraction(base) ** n if n >= 0 else 1 / Fraction(base) ** -n
    raise UnsupportedError(f"the power {e} has no value in {'Q' if isinstance(fld, RationalField) else 'this field'}")


def _truth(cond, values, fld, memo) -> bool:
    """The truth value of a ``Piecewise`` condition at scalar values."""
    if cond is sympy.true or cond is sympy.false:
        return bool(cond)
    if cond.func in RELATIONS:
        a, b = (_eval(x, values, fld, memo) for x in cond.args)
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            raise UnsupportedError(f"the condition {cond} is not evaluated on matrices")
        return bool(RELATIONS[cond.func](a, b))
    if isinstance(cond, sympy.And):
        return all(_truth(c, values, fld, memo) for c in cond.args)
    if isinstance(cond, sympy.Or):
        return any(_truth(c, values, fld, memo) for c in cond.args)
    if isinstance(cond, sympy.Not):
        return not _truth(cond.args[0], values, fld, memo)
    raise UnsupportedError(f"cannot evaluate the condition {cond} in {type(fld).__name__}")


def _piecewise(e, values, fld, memo):
    for expr, cond in e.args:
        if _truth(cond, values, fld, memo):
            return _eval(expr, values, fld, memo)
    raise UnsupportedError(f"{e} has no value at this point (no condition holds)")


def structural_degree(expr: sympy.Basic, memo: dict | None = None) -> int:
    r"""Upper bound on the total degree, counting each :math:`\sigma(\cdot)` as degree 1.

    >>> x, y = sympy.symbols("x y")
    >>> structural_degree(x**2 * y + SIGMA(x * y))
    3
    """
    memo = {} if memo is None else memo
    if expr in memo:
        return memo[expr]
    if expr.is_Symbol:
        d = 1
    elif expr.is_Number or expr.is_NumberSymbol:
        d = 0
    elif expr.is_Add:
        d = max(structural_degree(a, memo) for a in expr.args)
    elif expr.is_Mul:
        d = sum(structural_degree(a, memo) for a in expr.args)
    elif expr.is_Pow and expr.args[1].is_Integer:
        d = abs(int(expr.args[1])) * structural_degree(expr.args[0], memo)
    else:
        d = 1
    memo[expr] = d
    return d


def magnitude(expr: sympy.Basic, values: Mapping[sympy.Symbol, float], memo: dict | None = None) -> float:
    r"""Evaluate ``expr`` with every input and constant replaced by its absolute value.

    For sums of products this bounds the float64 rounding error:
    :math:`|\mathrm{fl}(f)-f| \le \gamma_n\,|f|(|x|)`; :math:`\sigma` is treated as
    1-Lipschitz and bounded by 1 (true for the logistic sigmoid used here).
    Negative powers and ``exp`` use the first-order propagation
    :math:`|d(b^k)| = |k||b|^{k-1}|db|`, :math:`|d e^a| = e^a|da|` at the actual values.
    """
    memo = {} if memo is None else memo
    if expr in memo:
        return memo[expr]
    if expr.is_Symbol:
        m = abs(float(values[expr]))
    elif expr.is_Number or expr.is_NumberSymbol:
        m = abs(float(expr))
    elif expr.is_Add:
        m = sum(magnitude(a, values, memo) for a in expr.args)
    elif expr.is_Mul:
        m = math.prod(magnitude(a, values, memo) for a in expr.args)
    elif expr.is_Pow and expr.args[1].is_number and expr.args[1].is_negative:
        # d(b^k) = k b^(k-1) db: |b|^k (1 + |k| mag(b)/|b|) bounds the first-order rounding error
        b, k = abs(float(evaluate(expr.args[0], values, RealField()))), abs(float(expr.args[1]))
        m = b ** -k * (1.0 + k * magnitude(expr.args[0], values, memo) / b) if b else math.inf
    elif expr.is_Pow and not expr.args[1].is_number:
        # d(b^e) = b^e (e db / b + ln(b) de) at the actual values
        b, e = (float(evaluate(a, values, RealField())) for a in expr.args)
        value = abs(b) ** e if b else 0.0
        m = value * (1.0 + (abs(e) * magnitude(expr.args[0], values, memo) / abs(b) if b else math.inf)
                     + abs(math.log(abs(b))) * magnitude(expr.args[1], values, memo) if b else math.inf)
    elif expr.is_Pow:
        m = magnitude(expr.args[0], values, memo) ** abs(float(expr.args[1]))
    elif isinstance(expr, sympy.exp):
        # d exp(a) = exp(a) da
        a = float(evaluate(expr.args[0], values, RealField()))
        m = math.exp(a) * (1.0 + magnitude(expr.args[0], values, memo))
    else:
        m = 1.0 + sum(magnitude(a, values, memo) for a in expr.args)
    memo[expr] = m
    return m


def is_polynomial(expr: sympy.Basic, memo: dict | None = None) -> bool:
    r"""Only +, ×, integer powers, numbers, symbols and the uninterpreted σ.

    Shared sub-expressions are visited once (``memo``), so the cost is linear in the
    expression DAG, not in its expanded tree.

    >>> x = sympy.Symbol("x")
    >>> is_polynomial(x**2 + SIGMA(x)), is_polynomial(sympy.exp(x)), is_polynomial(sympy.Max(x, 1))
    (True, False, False)
    """
    memo = {} if memo is None else memo
    hit = memo.get(expr)
    if hit is not None:
        return hit
    if expr.is_Atom:
        out = True  # symbols and numbers (constants such as pi are coefficients)
    elif expr.is_Pow and not expr.exp.is_Integer:
        out = False
    elif expr.is_Add or expr.is_Mul or expr.is_Pow or getattr(expr, "func", None) == SIGMA:
        out = all(is_polynomial(a, memo) for a in expr.args)
    else:  # exp, Max, Piecewise, ...
        out = False
    memo[expr] = out
    return out


def sigma_arguments(exprs, memo: set | None = None) -> set:
    r"""The distinct applications :math:`\sigma(\cdot)` inside ``exprs``, each shared node visited once.

    >>> x, y = sympy.symbols("x y")
    >>> sorted(map(str, sigma_arguments([SIGMA(x) * SIGMA(x) + SIGMA(y), x])))
    ['sigma(x)', 'sigma(y)']
    """
    seen = set() if memo is None else memo
    found: set = set()
    stack = list(exprs)
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        if getattr(e, "func", None) == SIGMA:
            found.add(e)
        stack.extend(e.args)
    return found
