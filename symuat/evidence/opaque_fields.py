r"""The fields of an opaque claim's witness re-check and interval fallback (:mod:`symuat.evidence.opaque`).

Both run through :func:`~symuat.evidence.fields.evaluate` (matrices of opaque symbols have no SymPy evaluation of
their own) but share no arithmetic with the field that found the candidate: exact rationals reduced mod :math:`p` only
at the end, and mpmath intervals rounded outwards.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np

from ..errors import UnsupportedError
from .fields import PrimeField

__all__ = ["ExactField", "IntervalField"]

iv = mpmath.iv


class ExactField:
    """Exact rationals for the re-check of an F_p witness: σ reduces its argument mod p and applies the same keyed
    random function; nothing else is reduced until :meth:`mod`."""

    def __init__(self, prime: PrimeField):
        self.prime = prime

    def mod(self, value) -> int | None:
        value = Fraction(value)
        if value.denominator % self.prime.p == 0:
            return None
        return value.numerator * pow(value.denominator, self.prime.p - 2, self.prime.p) % self.prime.p

    def const(self, value) -> Fraction:
        if not value.is_Rational:
            raise UnsupportedError(f"the constant {value} is not rational")
        return Fraction(int(value.p), int(value.q))

    def add(self, a, b):
        return a + b

    def mul(self, a, b, matrix: bool):
        return np.dot(a, b) if matrix else a * b

    def inv(self, a):
        if isinstance(a, np.ndarray):
            raise UnsupportedError("negative powers of matrices")
        return 1 / Fraction(a)

    def sigma(self, a):
        def one(v):
            m = self.mod(v)
            if m is None:
                raise ZeroDivisionError("a sigma argument has no value mod p")
            return Fraction(self.prime._sigma_scalar(m))
        return np.frompyfunc(one, 1, 1)(a).astype(object) if isinstance(a, np.ndarray) else one(a)


class IntervalField:
    """mpmath intervals for the float level's fallback on opaque claims (σ the logistic function)."""

    def const(self, value):
        if value.is_Rational:
            return iv.mpf(int(value.p)) / iv.mpf(int(value.q))
        raise UnsupportedError(f"the constant {value} is not enclosed")

    def add(self, a, b):
        return b + a if isinstance(b, np.ndarray) else a + b  # an interval does not broadcast over an array

    def mul(self, a, b, matrix: bool):
        if matrix:
            return np.dot(a, b)
        return b * a if isinstance(b, np.ndarray) and not isinstance(a, np.ndarray) else a * b

    def inv(self, a):
        if isinstance(a, np.ndarray):
            raise UnsupportedError("negative powers of matrices")
        return 1 / a

    def sigma(self, a):
        f = np.frompyfunc(lambda v: 1 / (1 + iv.exp(-v)), 1, 1)
        return f(a).astype(object) if isinstance(a, np.ndarray) else 1 / (1 + iv.exp(-a))
