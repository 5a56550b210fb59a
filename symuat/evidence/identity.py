r"""Identity claims between explicit symbolic matrices, checked at three levels.

An :class:`Identity` says ``lhs(env) == rhs(env)`` where ``env`` binds each
declared variable to a matrix of fresh symbols of the declared shape.  It is
checked by the evidence pipeline (:mod:`symuat.evidence.pipeline`, ``docs/evidence.md``)

1. *symbolically* — ``expand(lhs - rhs) == 0`` entrywise, with :math:`\sigma`
   uninterpreted, for every dimension tuple in ``dims`` (smallest first, so the
   first failure is the smallest counterexample);
2. *exactly* — both sides evaluated at random points of
   :math:`\mathbb{F}_p` with :math:`\sigma` a random function, by
   :mod:`symuat.evidence.fields` (no SymPy simplification involved), with the
   Schwartz–Zippel bound reported;
3. *in float64* — the derived side evaluated numerically and compared with
   ``reference``, an independent direct NumPy computation of the left-hand side,
   within a tolerance derived from the magnitudes involved.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import sympy

from ..algebra.matrices import symbolic_matrix
from ..errors import ArgumentTypeError, InvalidValueError, ShapeError, SymuatError
from ..validation import check_callable
from .canonical import reduces_to_zero
from .declare import DeclaredShapes, as_builder, check_dims
from .expand import expand_shared
from .fields import (
    PrimeField,
    RationalField,
    RealField,
    evaluate,
    is_polynomial,
    magnitude,
    sigma_arguments,
    structural_degree,
)
from .hypotheses import Hypotheses
from .interval import enclose, interval_text
from .pipeline import check_identity
from .protocol import LazyData, SymbolicFailure
from .verdict import Level
from .witness import Witness, certify_prime, certify_rational, find_witness
from .witness import point_text as _point

__all__ = ["Identity", "ExplicitInstance", "check_identity", "dims_grid"]

Dims = Mapping[str, int]
Env = Mapping[str, sympy.ImmutableMatrix]
Shapes = Callable[[Dims], Mapping[str, tuple[int, int]]]
Builder = Callable[[Env, Dims], sympy.MatrixBase]
Reference = Callable[[Mapping[str, np.ndarray], Dims], np.ndarray]

@dataclass(frozen=True)
class Identity:
    r"""A claimed identity ``lhs == rhs`` between explicit matrices.

    Parameters
    ----------
    shapes
        Declared ``{variable: (rows, cols)}`` whose entries are ints or arithmetic over
        dimension names (``{"X": ("N", "M"), "WO": ("h*d", "h*m")}``), or a callable
        ``dims -> {variable: (rows, cols)}`` for shapes that need code.
    lhs, rhs
        Builders of a SymPy matrix, either in keyword form (``lambda X, W: X * W``: each
        parameter names a variable, bound to its symbol matrix, or a dimension) or in the
        positional form ``(env, dims)``; the rule is in :mod:`symuat.evidence.declare`.
    dims
        Tuple of dimension dicts (same keys, positive ints) for the symbolic level, smallest first.
    reference
        Independent NumPy computation of ``lhs`` for the float level, a builder over NumPy
        arrays (keyword form, or ``(arrays, dims)``); ``None``: the float level evaluates
        ``lhs`` with the field evaluator.
    random_dims
        Dimensions for the exact and float levels (default: ``dims[-1]``).
    levels
        Levels that apply (a level that cannot evaluate a side says ``undecided``, with the reason).
    scope
        What the grid covers, LaTeX text; the hypotheses are appended to it.
    assume
        Hypotheses on the variables (:mod:`symuat.evidence.hypotheses`), e.g. ``("a > 0", "m <= s")``: every
        level honours them.  A variable declared with shape ``()`` is a scalar (a SymPy symbol, a float in
        ``reference``), not a 1×1 matrix.
    """

    shapes: Shapes | Mapping[str, tuple[int | str, int | str]]
    lhs: Builder
    rhs: Builder
    dims: tuple[Dims, ...]
    reference: Reference | None = None
    random_dims: Dims | None = None
    levels: tuple[Level, ...] = (Level.SYMBOLIC, Level.EXACT, Level.FLOAT)
    scope: str = ""
    assume: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.dims, Mapping) or not isinstance(self.dims, (tuple, list)):
            raise ArgumentTypeError(f"Identity.dims must be a tuple of dimension dicts such as ({{'N': 2}},), "
                                    f"got {type(self.dims).__name__} {self.dims!r}")
        if not self.dims:
            raise InvalidValueError("Identity.dims must list at least one dimension tuple")
        first = check_dims("Identity.dims[0]", self.dims[0])
        dims = tuple(check_dims(f"Identity.dims[{i}]", d, tuple(first)) for i, d in enumerate(self.dims))
        random_dims = None if self.random_dims is None else check_dims("Identity.random_dims", self.random_dims,
                                                                        tuple(first))
        _check_grid(dims + ((random_dims,) if random_dims else ()))
        if not isinstance(self.levels, (tuple, list)) or not all(isinstance(lv, Level) for lv in self.levels):
            raise ArgumentTypeError(f"Identity.levels must be a tuple of Level, got {self.levels!r}")
        if not self.levels:
            raise InvalidValueError("Identity.levels must name at least one level")
        dimensions = tuple(first)
        if isinstance(self.shapes, Mapping):
            shapes = DeclaredShapes(dict(self.shapes), dimensions)
        else:
            shapes = check_callable("Identity.shapes", self.shapes)
        variables = _variables(shapes, dims + ((random_dims,) if random_dims else ()))
        clash = sorted(set(variables) & set(dimensions))
        if clash:
            raise InvalidValueError(f"Identity: {', '.join(clash)} names both a variable and a dimension")
        hypotheses = Hypotheses.parse(tuple(self.assume) if isinstance(self.assume, list) else self.assume,
                                      variables)
        object.__setattr__(self, "assume", hypotheses.statements)
        object.__setattr__(self, "_hypotheses", hypotheses)
        if not hypotheses.empty and f"Assumes {hypotheses.text}." not in self.scope:
            object.__setattr__(self, "scope", f"{self.scope} Assumes {hypotheses.text}.".strip())
        for name, value in (("dims", dims), ("random_dims", random_dims), ("levels", tuple(self.levels)),
                            ("shapes", shapes),
                            ("lhs", as_builder("Identity.lhs", self.lhs, variables, dimensions)),
                            ("rhs", as_builder("Identity.rhs", self.rhs, variables, dimensions))):
            object.__setattr__(self, name, value)
        if self.reference is not None:
            object.__setattr__(self, "reference",
                               as_builder("Identity.reference", self.reference, variables, dimensions))

    @property
    def hypotheses(self) -> Hypotheses:
        """The parsed ``assume`` statements."""
        return self._hypotheses

    @property
    def check_dims(self) -> Dims:
        return self.random_dims if self.random_dims is not None else self.dims[-1]

    # the claim protocol (symuat.evidence.protocol.Claim)

    @property
    def symbolic_points(self) -> tuple[Dims, ...]:
        return self.dims

    @property
    def check_point(self) -> Dims:
        return self.check_dims

    def environment(self, dims: Dims) -> dict[str, Any]:
        """Each variable at ``dims``: a matrix of symbols, or a symbol for a scalar, with its assumptions."""
        return {name: _symbols(name, shape, self.hypotheses) for name, shape in self.shapes(dims).items()}

    def instantiate(self, dims: Dims) -> ExplicitInstance:
        """Build the symbol environment and both sides at ``dims``."""
        env = self.environment(dims)
        lhs = _side("lhs", self.lhs(env, dims), dims)
        rhs = _side("rhs", self.rhs(env, dims), dims)
        if lhs.shape != rhs.shape:
            raise ShapeError(f"sides have shapes {lhs.shape} and {rhs.shape} at dims {dict(dims)}")
        return ExplicitInstance(self, dims, env, lhs, rhs)

    def symbolic_statement(self, methods: Sequence[str] = ()) -> str:
        how = "expands to 0" if not methods else f"reduces to 0 ({', '.join(['expansion', *methods])})"
        return f"lhs - rhs {how} entrywise, sigma uninterpreted, at {_fmt_grid(self.dims)}"


def _symbols(name: str, shape: tuple, hypotheses: Hypotheses):
    """A scalar symbol (shape ``()``) or a matrix of symbols ``name_{i,j}``, with the variable's assumptions."""
    flags = hypotheses.flags(name) if hypotheses.concerns(name) else {"finite": True}
    if shape == ():
        return sympy.Symbol(name, **flags)
    r, c = shape
    if not hypotheses.concerns(name):
        return symbolic_matrix(name, r, c)
    return sympy.ImmutableMatrix(r, c, lambda i, j: sympy.Symbol(f"{name}_{{{i + 1},{j + 1}}}", **flags))


def _entries(value) -> tuple:
    """The symbols of a variable, row-major (a scalar is its own only entry)."""
    return (value,) if isinstance(value, sympy.Symbol) else tuple(value)


#: Bounds of a declared grid: every dimension at most this large (the symbolic level expands every entry; the
#: shipped ledger needs 8, and 38 for a partition number) …
MAX_GRID_SIZE = 64
#: … and at most this many dimension tuples (the shipped ledger needs 64).
MAX_GRID_POINTS = 512


def _check_grid(dims: Sequence[Dims]) -> None:
    if len(dims) > MAX_GRID_POINTS:
        raise InvalidValueError(f"Identity.dims lists {len(dims)} dimension tuples; at most {MAX_GRID_POINTS} are "
                                "checked (the all-sizes level covers larger sizes)")
    for d in dims:
        big = {k: v for k, v in d.items() if v > MAX_GRID_SIZE}
        if big:
            raise InvalidValueError(f"Identity.dims {dict(d)}: {', '.join(f'{k}={v}' for k, v in big.items())} is "
                                    f"larger than {MAX_GRID_SIZE}, the largest size the symbolic level expands "
                                    "(the all-sizes level covers every size)")


def _side(name: str, value: Any, dims: Dims) -> sympy.ImmutableMatrix:
    """A builder's result as a SymPy matrix (a scalar expression is a 1×1 side); anything else is refused by name."""
    if isinstance(value, sympy.Expr) and not isinstance(value, sympy.MatrixExpr):
        return sympy.ImmutableMatrix([[value]])
    if not isinstance(value, (sympy.MatrixBase, sympy.MatrixExpr)):
        raise ArgumentTypeError(f"Identity.{name} returned {type(value).__name__} at dims {dict(dims)}; expected a "
                                "SymPy Matrix")
    return sympy.ImmutableMatrix(value)


def _variables(shapes, dims: Sequence[Dims]) -> tuple[str, ...]:
    """The declared variables (for callable shapes: every name they produce on the grid)."""
    if isinstance(shapes, DeclaredShapes):
        return shapes.variables
    names: dict[str, None] = {}
    for d in dims:
        try:
            produced = shapes(d)
        except SymuatError:
            raise
        except Exception as exc:
            raise InvalidValueError(f"Identity.shapes raised {type(exc).__name__}: {exc} at dims {d}") from exc
        if not isinstance(produced, Mapping):
            raise ArgumentTypeError(f"Identity.shapes must return a dict {{variable: (rows, cols)}}, "
                                    f"got {type(produced).__name__} at dims {d}")
        names.update(dict.fromkeys(produced))
    return tuple(names)


def dims_grid(**ranges: tuple[int, ...]) -> tuple[dict[str, int], ...]:
    """All dimension tuples of a grid, ordered by total size then lexicographically.

    >>> dims_grid(N=(1, 2), M=(1, 2))
    ({'N': 1, 'M': 1}, {'N': 1, 'M': 2}, {'N': 2, 'M': 1}, {'N': 2, 'M': 2})
    """
    names = list(ranges)
    combos = itertools.product(*(ranges[n] for n in names))
    ordered = sorted(combos, key=lambda c: (sum(c), c))
    return tuple(dict(zip(names, c)) for c in ordered)


def _fmt_dims(d: Dims) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items())


def _fmt_grid(dims: Sequence[Dims]) -> str:
    keys = list(dims[0])
    ranges = ", ".join(f"{k} in {{{','.join(str(v) for v in sorted({d[k] for d in dims}))}}}" for k in keys)
    return f"{len(dims)} dimension tuples ({ranges})"


@dataclass(frozen=True)
class ExplicitInstance:
    """Both sides of an :class:`Identity` at one dimension tuple (the claim protocol's instance)."""

    claim: Identity
    dims: Dims
    env: Env
    lhs: sympy.ImmutableMatrix
    rhs: sympy.ImmutableMatrix

    @property
    def point(self) -> dict[str, Any]:
        return {"dims": dict(self.dims)}

    @property
    def where(self) -> str:
        return _fmt_dims(self.dims)

    @property
    def ncols(self) -> int:
        return self.lhs.shape[1]

    @cached_property
    def proof_methods(self) -> list[str]:
        """The canonical forms beyond expansion that the symbolic level needed (filled by it)."""
        return []

    def symbolic_failure(self) -> SymbolicFailure | None:
        r"""``None`` when every entry of ``lhs - rhs`` expands, or reduces in a canonical form
        (:mod:`~symuat.evidence.canonical`), to 0; else the first entry with a checked witness, or, without one,
        an undecided failure naming the first entry that did not reduce."""
        memo: dict = {}  # entries share sub-expressions: expand each once
        undecided = None
        for idx in range(len(self.lhs)):
            diff = expand_shared(self.lhs[idx] - self.rhs[idx], memo)
            if diff == 0:
                continue
            lhs, rhs = self.lhs[idx], self.rhs[idx]
            witness, searched = find_witness(lhs, rhs, self._draw)
            if witness is None:
                method = reduces_to_zero(lhs - rhs, self._order_substitution)
                if method is not None:
                    if method not in self.proof_methods and method != "expansion":
                        self.proof_methods.append(method)
                    continue
            r, c = divmod(idx, self.ncols)
            if witness is not None:
                return SymbolicFailure(f"entry ({r + 1},{c + 1}) differs at {self.where}", LazyData(
                    lambda: {"lhs": sympy.latex(lhs), "rhs": sympy.latex(rhs), "difference": sympy.latex(diff)},
                    eager={"entry": [r + 1, c + 1]}), witness=witness)
            if undecided is None:
                undecided = SymbolicFailure(
                    f"undecided: entry ({r + 1},{c + 1}) at {self.where}: lhs - rhs reduces to 0 in none of the "
                    f"canonical forms (common denominator, exp/log, case split) and no witness was found "
                    f"({searched})", {"entry": [r + 1, c + 1]}, undecided=True)
        return undecided

    def _draw(self, fld, trial: int) -> dict:
        """A random point inside the hypotheses, for the symbolic level's witness search (fixed seeds)."""
        return self.bind(fld, np.random.default_rng([11, trial]))

    @cached_property
    def _order_substitution(self) -> dict:
        return self.claim.hypotheses.substitution({n: _entries(v) for n, v in self.env.items()})

    @cached_property
    def _degree(self) -> tuple[int, int]:
        memo: dict = {}
        sides = (self.lhs, self.rhs)
        degree = max(structural_degree(m[i], memo) for m in sides for i in range(len(m)))
        n_sigma = len(sigma_arguments(m[i] for m in sides for i in range(len(m))))
        return degree, n_sigma

    @property
    def degree_note(self) -> str:
        return f"degree <= {self._degree[0]}"

    def survival_per_trial(self, p: int) -> float:
        degree, n_sigma = self._degree
        # sigma collisions: each pair of distinct arguments agrees with probability <= degree/p.
        return (degree + n_sigma * n_sigma * max(degree, 1)) / p

    def bind(self, fld, rng) -> dict[sympy.Symbol, Any]:
        """A random value of ``fld`` per input symbol, moved inside the claim's hypotheses (not in F_p, which
        has no order)."""
        entries = {name: _entries(self.env[name]) for name in sorted(self.env)}
        values = {s: fld.random(rng) for name in entries for s in entries[name]}
        kind = {RealField: "real", RationalField: "rational"}.get(type(fld))
        return values if kind is None else self.claim.hypotheses.apply(values, entries, kind)

    def recheck_prime(self, idx: int, values, fld: PrimeField):
        """Entry ``idx`` re-checked by SymPy's exact integers at the F_p point: the witness, or ``None``."""
        return certify_prime(self.lhs[idx], self.rhs[idx], values, fld)

    def recheck_rational(self, idx: int, values, fld: RationalField):
        """Entry ``idx`` re-checked by SymPy's exact rationals: the witness, or ``None``."""
        return certify_rational(self.lhs[idx], self.rhs[idx], values, fld)

    def real_witness(self, idx: int, lhs, rhs, values, prec: int) -> Witness:
        """The witness of disjoint enclosures ``lhs``, ``rhs`` of entry ``idx``."""
        return Witness("R (float64 inputs, exact)", _point(values, (self.lhs[idx], self.rhs[idx])),
                       interval_text(lhs), interval_text(rhs),
                       f"disjoint enclosures, mpmath interval arithmetic at {prec} bits")

    def enclosures(self, values, prec: int) -> tuple[list, list]:
        """mpmath interval enclosures of every entry of both sides at ``values`` (:mod:`.interval`)."""
        return ([enclose(self.lhs[i], values, prec) for i in range(len(self.lhs))],
                [enclose(self.rhs[i], values, prec) for i in range(len(self.rhs))])

    def side(self, name: str, values, fld, memo: dict) -> np.ndarray:
        m = self.lhs if name == "lhs" else self.rhs
        return np.array([evaluate(m[i], values, fld, memo) for i in range(len(m))], dtype=object)

    def reference(self, values) -> np.ndarray | None:
        if self.claim.reference is None:
            return None
        arrays = {n: float(values[m]) if isinstance(m, sympy.Symbol) else
                  np.array([[values[m[i, j]] for j in range(m.shape[1])] for i in range(m.shape[0])])
                  for n, m in self.env.items()}
        return np.asarray(self.claim.reference(arrays, self.dims))

    def magnitudes(self, values) -> np.ndarray:
        memo: dict = {}
        mags = np.array([max(magnitude(self.lhs[i], values, memo), magnitude(self.rhs[i], values, memo))
                         for i in range(len(self.lhs))])
        return np.maximum(mags, self._input_scale_floor(values))

    def _input_scale_floor(self, values) -> np.ndarray:
        r"""Per-entry magnitude with every input as large as the largest one, :math:`X=\max|\text{input}|`.

        The reference may form (and cancel) intermediates that the simplified symbolic
        side never shows, e.g. :math:`|a+c|-|a|` with :math:`a = u_1^2+u_2^2`: their size is
        bounded by the expression's magnitude at inputs of size :math:`X`, constants included.
        """
        scale = max((abs(float(v)) for v in values.values()), default=1.0)
        uniform = {s: scale for s in values}
        memo: dict = {}

        def floor(i: int) -> float:
            if not self._polynomial_entries[i]:
                return 0.0  # exp, sqrt, ...: the magnitude bound is not meaningful there
            return max(magnitude(self.lhs[i], uniform, memo), magnitude(self.rhs[i], uniform, memo))

        with np.errstate(over="ignore"):
            return np.array([floor(i) for i in range(len(self.lhs))], dtype=float)

    @cached_property
    def _polynomial_entries(self) -> tuple[bool, ...]:
        memo: dict = {}
        return tuple(is_polynomial(self.lhs[i], memo) and is_polynomial(self.rhs[i], memo)
                     for i in range(len(self.lhs)))

    def input_count(self) -> int:
        return sum(len(_entries(m)) for m in self.env.values())
