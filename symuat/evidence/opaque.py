r"""Identities between expressions in *opaque* matrices (noncommutative symbols).

The DUAT expansion (seed 001 App. B) treats every :math:`\mathbf W'` as an
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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy

from ..errors import ArgumentTypeError, InvalidValueError
from ..validation import check_callable, check_positive_int
from .fields import MERSENNE_61, PrimeField, RealField, evaluate, magnitude, structural_degree
from .verdict import Evidence, Level, Verdict

__all__ = ["OpaqueIdentity", "check_opaque", "is_vector_symbol"]

Case = Any
Side = Callable[[Case], sympy.Expr]
Reference = Callable[[Mapping[str, np.ndarray], Case], np.ndarray]


#: Symbol heads that denote vectors: the paper's bold lowercase letters, plus the
#: table's vector quantities (c̃, β̃ and the residual sum R = UAT^R).
_VECTOR_HEADS = ("x", "b", "c", "h", "y", "v", "\\beta", "R")


def _head(name: str) -> str:
    name = name.lstrip("{")
    for deco in ("\\tilde{", "\\hat{", "\\bar{", "\\mathbf{"):
        if name.startswith(deco):
            name = name[len(deco):]
    return name


def is_vector_symbol(symbol: sympy.Symbol) -> bool:
    r"""Whether an opaque symbol is a vector (bold lowercase in the paper, or c̃, β̃, R).

    >>> [is_vector_symbol(sympy.Symbol(n)) for n in ["b'_{1,2}", "W'_{1,1}", r"\tilde{\beta}_{2}", "R_{1}"]]
    [True, False, True, True]
    """
    head = _head(symbol.name)
    return any(head.startswith(h) for h in _VECTOR_HEADS) and not head.startswith(("W", "A", "U", "V", "H"))


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


def _sides(identity: OpaqueIdentity, case: Case) -> tuple[sympy.Expr, sympy.Expr]:
    return sympy.sympify(identity.lhs(case)), sympy.sympify(identity.rhs(case))


def _symbolic(identity: OpaqueIdentity) -> Evidence:
    for case in identity.cases:
        lhs, rhs = _sides(identity, case)
        diff = sympy.expand(lhs - rhs, deep=True)
        if diff != 0:
            return Evidence(Level.SYMBOLIC, False, f"lhs - rhs does not expand to 0 at case {case!r}",
                            {"case": case, "lhs": sympy.latex(lhs), "rhs": sympy.latex(rhs),
                             "difference": sympy.latex(diff)})
    scope = f" {identity.scope}" if identity.scope else ""
    return Evidence(Level.SYMBOLIC, True,
                    f"lhs - rhs expands to 0 in the free noncommutative algebra (every W' opaque, any size, "
                    f"sigma uninterpreted) for cases {list(identity.cases)}.{scope}")


def _bind(exprs: Sequence[sympy.Expr], width: int, fld, rng) -> dict[sympy.Symbol, np.ndarray]:
    symbols = sorted({s for e in exprs for s in e.free_symbols}, key=lambda s: s.name)
    values = {}
    for s in symbols:
        shape = (width,) if is_vector_symbol(s) else (width, width)
        data = [fld.random(rng) for _ in range(int(np.prod(shape)))]
        values[s] = np.array(data, dtype=object if isinstance(fld, PrimeField) else float).reshape(shape)
    return values


def _exact(identity: OpaqueIdentity, seed: int, trials: int) -> Evidence:
    case = identity.numeric_case
    lhs, rhs = _sides(identity, case)
    degree = max(structural_degree(lhs), structural_degree(rhs))
    for t in range(trials):
        fld = PrimeField(seed=seed * 1000 + t)
        values = _bind((lhs, rhs), identity.width, fld, np.random.default_rng([seed, t, 11]))
        a, b = evaluate(lhs, values, fld), evaluate(rhs, values, fld)
        if not np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object)):
            return Evidence(Level.EXACT, False,
                            f"sides differ over F_p at case {case!r}, {identity.width}x{identity.width} matrices "
                            f"(seed {seed}, trial {t})",
                            {"case": case, "width": identity.width, "field": "F_p", "p": MERSENNE_61,
                             "seed": seed, "trial": t})
    bound = (degree * identity.width / MERSENNE_61) ** trials
    return Evidence(Level.EXACT, True,
                    f"{trials} random points of F_p (p = 2^61-1, sigma a random function), "
                    f"{identity.width}x{identity.width} matrices, case {case!r}, seed {seed}; degree <= {degree}, "
                    f"a false identity survives with probability <= {bound:.1e}")


def _float(identity: OpaqueIdentity, seed: int) -> Evidence:
    case = identity.numeric_case
    lhs, rhs = _sides(identity, case)
    fld = RealField()
    values = _bind((lhs, rhs), identity.width, fld, np.random.default_rng([seed, 13]))
    got = np.asarray(evaluate(rhs, values, fld), dtype=float)
    if identity.reference is not None:
        want = np.asarray(identity.reference({s.name: v for s, v in values.items()}, case), dtype=float)
        source = "an independent NumPy implementation"
    else:
        want = np.asarray(evaluate(lhs, values, fld), dtype=float)
        source = "the left-hand side"
    if want.shape != got.shape:
        return Evidence(Level.FLOAT, False, f"shapes differ: {want.shape} vs {got.shape}", {"case": case})
    scale = max(magnitude(lhs, {s: float(np.max(np.abs(v))) * identity.width for s, v in values.items()}),
                magnitude(rhs, {s: float(np.max(np.abs(v))) * identity.width for s, v in values.items()}), 1.0)
    tol = 64 * np.finfo(float).eps * scale
    err = float(np.max(np.abs(got - want))) if got.size else 0.0
    if not err <= tol:
        return Evidence(Level.FLOAT, False, f"differs from {source} by {err:.3e} > tolerance {tol:.3e} at case "
                        f"{case!r} (seed {seed})", {"case": case, "seed": seed, "error": err, "tolerance": tol})
    return Evidence(Level.FLOAT, True, f"float64, {identity.width}x{identity.width} matrices, case {case!r} "
                    f"(seed {seed}): agrees with {source} to {err:.1e} (tolerance {tol:.1e} from magnitudes)")


def check_opaque(identity: OpaqueIdentity, seed: int = 0, trials: int = 2,
                 levels: Sequence[Level] | None = None) -> Verdict:
    """Run every applicable level of an :class:`OpaqueIdentity`."""
    chosen = tuple(identity.levels if levels is None else (lv for lv in identity.levels if lv in levels))
    runners = {Level.SYMBOLIC: lambda: _symbolic(identity), Level.EXACT: lambda: _exact(identity, seed, trials),
               Level.FLOAT: lambda: _float(identity, seed)}
    return Verdict(tuple(runners[lv]() for lv in chosen))
