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
from typing import Any

import numpy as np
import sympy

from ..algebra.matrices import symbolic_matrix
from ..errors import ArgumentTypeError, InvalidValueError, ShapeError, SymuatError
from ..validation import check_callable
from .declare import DeclaredShapes, as_builder, check_dims
from .explicit import ExplicitInstance
from .hypotheses import Hypotheses
from .pipeline import check_identity
from .verdict import Level

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


def _fmt_grid(dims: Sequence[Dims]) -> str:
    keys = list(dims[0])
    ranges = ", ".join(f"{k} in {{{','.join(str(v) for v in sorted({d[k] for d in dims}))}}}" for k in keys)
    return f"{len(dims)} dimension tuples ({ranges})"
