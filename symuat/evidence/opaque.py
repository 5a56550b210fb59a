r"""Identities between expressions in *opaque* matrices (noncommutative symbols).

The DUAT expansion (App. B of the paper) treats every :math:`\mathbf W'` as an
arbitrary, possibly input-dependent matrix.  An :class:`OpaqueIdentity` states
``lhs(case) == rhs(case)`` for such expressions; ``case`` is typically a depth.

1. *symbolic* — ``expand(lhs - rhs) == 0`` in the free noncommutative algebra
   with :math:`\sigma` uninterpreted: a proof for matrices of **every** size;
2. *exact* — every matrix symbol becomes a random ``n×n`` matrix over
   :math:`\mathbb{F}_p` and every vector symbol a random ``n``-vector
   (the paper's convention: bold lowercase = vector, uppercase = matrix),
   :math:`\sigma` a random function, products evaluated in order;
3. *float* — the same with float64 values and the logistic :math:`\sigma`,
   against ``reference``, an independent NumPy computation (e.g. the layer
   recursion of Eq. 20).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any

import mpmath
import numpy as np
import sympy

from ..errors import ArgumentTypeError, InvalidValueError, UnsupportedError
from ..names import is_vector
from ..validation import check_callable, check_positive_int
from .expand import expand_shared
from .fields import PrimeField, RealField, evaluate, magnitude, sigma_arguments, structural_degree
from .interval import interval_text
from .opaque_fields import ExactField, IntervalField
from .protocol import LazyData, SymbolicFailure
from .verdict import Level
from .witness import Witness

__all__ = ["OpaqueIdentity", "OpaqueInstance", "is_vector_symbol"]

iv = mpmath.iv

Case = Any
Side = Callable[[Case], sympy.Expr]
Reference = Callable[[Mapping[str, np.ndarray], Case], np.ndarray]


def is_vector_symbol(symbol: sympy.Symbol) -> bool:
    r"""Whether an opaque symbol is a vector (bold lowercase in the paper, or c̃, β̃, R): its :class:`PaperName`.

    >>> [is_vector_symbol(sympy.Symbol(n)) for n in ["b'_{1,2}", "W'_{1,1}", r"\tilde{\beta}_{2}", "R_{1}"]]
    [True, False, True, True]
    """
    return is_vector(symbol)


@dataclass(frozen=True)
class OpaqueIdentity:
    r"""``lhs(case) == rhs(case)`` for noncommutative expressions, for every case in ``cases``.

    ``cases`` are ordered smallest first (e.g. depths ``(1, 2, 3)``), so the first
    failing case is the smallest counterexample.  ``width`` is the matrix size used
    by the exact and float levels, at ``check_case`` (default: the last case).
    """

    lhs: Side
    rhs: Side
    cases: tuple[Case, ...]
    reference: Reference | None = None
    width: int = 3
    check_case: Case | None = None
    levels: tuple[Level, ...] = (Level.SYMBOLIC, Level.EXACT, Level.FLOAT)
    scope: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.cases, (tuple, list)):
            raise ArgumentTypeError(f"OpaqueIdentity.cases must be a tuple of cases such as (1, 2, 3), "
                                    f"got {type(self.cases).__name__} {self.cases!r}")
        if not self.cases:
            raise InvalidValueError("OpaqueIdentity.cases must list at least one case")
        if not isinstance(self.levels, (tuple, list)) or not all(isinstance(lv, Level) for lv in self.levels):
            raise ArgumentTypeError(f"OpaqueIdentity.levels must be a tuple of Level, got {self.levels!r}")
        if not self.levels:
            raise InvalidValueError("OpaqueIdentity.levels must name at least one level")
        check_positive_int("OpaqueIdentity.width", self.width)
        for name in ("lhs", "rhs") + (("reference",) if self.reference is not None else ()):
            check_callable(f"OpaqueIdentity.{name}", getattr(self, name))
        object.__setattr__(self, "cases", tuple(self.cases))
        object.__setattr__(self, "levels", tuple(self.levels))

    @property
    def numeric_case(self) -> Case:
        return self.cases[-1] if self.check_case is None else self.check_case

    # the claim protocol (symuat.evidence.protocol.Claim)

    @property
    def symbolic_points(self) -> tuple[Case, ...]:
        return self.cases

    @property
    def check_point(self) -> Case:
        return self.numeric_case

    def instantiate(self, case: Case) -> OpaqueInstance:
        return OpaqueInstance(self, case, sympy.sympify(self.lhs(case)), sympy.sympify(self.rhs(case)))

    def symbolic_statement(self) -> str:
        return (f"lhs - rhs expands to 0 in the free noncommutative algebra (every W' opaque, any size, "
                f"sigma uninterpreted) for cases {list(self.cases)}")


class _MagnitudeField:
    r"""Evaluates the magnitude bound of a matrix expression: inputs and constants by absolute value.

    :math:`\sigma` is 1-Lipschitz and bounded by 1, so :math:`m(\sigma(a)) = 1 + m(a)` (as in
    :func:`~symuat.evidence.fields.magnitude`); inverses have no such bound here.
    """

    def const(self, value) -> float:
        return abs(float(value))

    def add(self, a, b):
        return a + b

    def mul(self, a, b, matrix: bool):
        return a @ b if matrix else a * b

    def inv(self, a):
        raise UnsupportedError("no entrywise magnitude bound for an inverse")

    def sigma(self, a):
        return 1.0 + a


@dataclass(frozen=True)
class OpaqueInstance:
    """Both sides of an :class:`OpaqueIdentity` at one case (the claim protocol's instance)."""

    claim: OpaqueIdentity
    case: Case
    lhs: sympy.Expr
    rhs: sympy.Expr

    @property
    def point(self) -> dict[str, Any]:
        return {"case": self.case, "width": self.claim.width}

    @property
    def where(self) -> str:
        return f"case {self.case!r}, {self.claim.width}x{self.claim.width} matrices"

    @cached_property
    def ncols(self) -> int:
        values = {s: np.ones(_shape(s, self.claim.width)) for s in self._symbols}
        out = np.asarray(evaluate(self.rhs, values, RealField()))
        return out.shape[1] if out.ndim == 2 else 1

    @cached_property
    def _symbols(self) -> tuple[sympy.Symbol, ...]:
        return tuple(sorted(self.lhs.free_symbols | self.rhs.free_symbols, key=lambda s: s.name))

    def symbolic_failure(self) -> SymbolicFailure | None:
        r"""``None`` when ``lhs - rhs`` expands to 0 in the free algebra; else a witness: random matrices over
        :math:`\mathbb F_p` (width ``w``, then wider: a nonzero polynomial of degree :math:`d` in
        noncommuting matrices is nonzero on :math:`n\times n` matrices once :math:`2n > d`, Amitsur–Levitzki)
        where the sides differ, re-checked in exact rationals; without one, ``undecided``."""
        memo: dict = {}
        diff = expand_shared(self.lhs - self.rhs, memo)
        if diff == 0:
            return None
        witness = self._witness()
        if witness is None:
            return SymbolicFailure(f"undecided: lhs - rhs does not expand to 0 at case {self.case!r}, but no witness "
                                   f"was found in F_p", {}, undecided=True)
        return SymbolicFailure(f"lhs - rhs does not expand to 0 at case {self.case!r}", LazyData(
            lambda: {"lhs": sympy.latex(self.lhs), "rhs": sympy.latex(self.rhs), "difference": sympy.latex(diff)},),
            witness=witness)

    def _witness(self):
        degree = max(self._degree[0], 1)
        widths = sorted({self.claim.width, max(self.claim.width, degree // 2 + 1)})
        for width in widths:
            fld = PrimeField(seed=7)
            values = self.bind(fld, np.random.default_rng([7, width]), width)
            lhs, rhs = (np.asarray(evaluate(e, values, fld, {})).reshape(-1) for e in (self.lhs, self.rhs))
            bad = [i for i in range(min(lhs.size, rhs.size)) if int(lhs[i]) != int(rhs[i])]
            if lhs.size != rhs.size or bad:
                found = self.recheck_prime(bad[0] if bad else 0, values, fld)
                if found is not None:
                    return found
        return None

    def recheck_prime(self, idx: int, values, fld: PrimeField) -> Witness | None:
        """Entry ``idx`` re-evaluated in exact rationals (reduced mod p only at σ and at the end)."""
        exact = ExactField(fld)
        point = {s: np.vectorize(Fraction, otypes=[object])(v) for s, v in values.items()}
        try:
            lhs, rhs = (np.asarray(evaluate(e, point, exact, {}), dtype=object).reshape(-1) for e in (self.lhs,
                                                                                                     self.rhs))
        except (ZeroDivisionError, UnsupportedError):
            return None
        if lhs.size != rhs.size:
            return Witness("F_p", _matrices(values), f"{lhs.size} entries", f"{rhs.size} entries",
                           "the sides have different sizes")
        lv, rv = exact.mod(lhs[idx]), exact.mod(rhs[idx])
        if lv is None or rv is None or lv == rv:
            return None
        return Witness(f"F_p (p = {fld.p}, sigma a keyed random function, key {fld.seed})", _matrices(values),
                       str(lv), str(rv), "re-evaluated in exact rationals, reduced mod p at the end")

    def enclosures(self, values, prec: int) -> tuple[list, list]:
        """mpmath interval enclosures of every entry of both sides (matrices of intervals, σ the logistic)."""
        saved, iv.prec = iv.prec, prec
        try:
            point = {s: np.vectorize(lambda t: iv.mpf(float(t)), otypes=[object])(np.asarray(v, dtype=float))
                     for s, v in values.items()}
            fld = IntervalField()
            return tuple(list(np.asarray(evaluate(e, point, fld, {}), dtype=object).reshape(-1))
                         for e in (self.lhs, self.rhs))
        except ZeroDivisionError as exc:
            raise UnsupportedError(f"mpmath intervals cannot enclose the sides ({exc})") from None
        finally:
            iv.prec = saved

    def real_witness(self, idx: int, lhs, rhs, values, prec: int) -> Witness:
        return Witness("R (float64 inputs, exact)", _matrices(values), interval_text(lhs), interval_text(rhs),
                       f"disjoint enclosures, mpmath interval arithmetic at {prec} bits")

    @cached_property
    def _degree(self) -> tuple[int, int]:
        degree = max(structural_degree(self.lhs), structural_degree(self.rhs))
        n_sigma = len(sigma_arguments((self.lhs, self.rhs)))
        return degree, n_sigma

    @property
    def degree_note(self) -> str:
        return f"degree <= {self._degree[0]}"

    def survival_per_trial(self, p: int) -> float:
        # a width-w product of d opaque factors: entries of degree d, counted as d*w (conservative);
        # each sigma of a w-vector is w scalar sigmas, any two of which collide with probability <= degree/p.
        degree, n_sigma = self._degree[0] * self.claim.width, self._degree[1] * self.claim.width
        return (degree + n_sigma * n_sigma * max(degree, 1)) / p

    def bind(self, fld, rng, width: int | None = None) -> dict[sympy.Symbol, np.ndarray]:
        dtype = object if isinstance(fld, PrimeField) else float
        values = {}
        for s in self._symbols:
            shape = _shape(s, self.claim.width if width is None else width)
            values[s] = np.array([fld.random(rng) for _ in range(int(np.prod(shape)))], dtype=dtype).reshape(shape)
        return values

    def side(self, name: str, values, fld, memo: dict) -> np.ndarray:
        return np.asarray(evaluate(self.lhs if name == "lhs" else self.rhs, values, fld, memo)).reshape(-1)

    def reference(self, values) -> np.ndarray | None:
        if self.claim.reference is None:
            return None
        return np.asarray(self.claim.reference({s.name: v for s, v in values.items()}, self.case))

    def magnitudes(self, values) -> np.ndarray:
        scale = max((float(np.max(np.abs(v))) for v in values.values()), default=1.0)
        try:
            # No input-scale floor here: the references of opaque claims are forward passes that form no
            # intermediate larger than the entry bound, and at depth 3 the floor (every input as large as the
            # largest, raised to the degree) would exceed the values by 1e7 and hide dropped terms.
            return self._entry_magnitudes({s: np.abs(v) for s, v in values.items()})
        except UnsupportedError:  # every input as large as the largest one, times the width
            inflated = {s: scale * self.claim.width for s in values}
            bound = max(magnitude(self.lhs, inflated), magnitude(self.rhs, inflated), 1.0)
            return np.full(self.side("rhs", values, RealField(), {}).size, bound)

    def _entry_magnitudes(self, absolute) -> np.ndarray:
        fld, memo = _MagnitudeField(), {}
        return np.maximum(self.side("lhs", absolute, fld, memo), self.side("rhs", absolute, fld, memo))

    def input_count(self) -> int:
        return sum(int(np.prod(_shape(s, self.claim.width))) for s in self._symbols)


def _shape(symbol: sympy.Symbol, width: int) -> tuple[int, ...]:
    return (width,) if is_vector_symbol(symbol) else (width, width)


def _matrices(values) -> dict[str, str]:
    return {s.name: repr(np.asarray(v).tolist()) for s, v in sorted(values.items(), key=lambda kv: kv[0].name)}
