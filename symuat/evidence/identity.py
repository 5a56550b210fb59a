r"""Identity claims between explicit symbolic matrices, checked at three levels.

An :class:`Identity` says ``lhs(env) == rhs(env)`` where ``env`` binds each
declared variable to a matrix of fresh symbols of the declared shape.  It is
checked (SPEC §6)

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
from .fields import MERSENNE_61, SIGMA, PrimeField, RealField, evaluate, magnitude, structural_degree
from .verdict import Evidence, Level, Verdict

__all__ = ["Identity", "check_identity", "instance", "dims_grid"]

Dims = Mapping[str, int]
Env = Mapping[str, sympy.ImmutableMatrix]
Shapes = Callable[[Dims], Mapping[str, tuple[int, int]]]
Builder = Callable[[Env, Dims], sympy.MatrixBase]
Reference = Callable[[Mapping[str, np.ndarray], Dims], np.ndarray]

#: Rounding-error safety factor in the float64 tolerance ``FLOAT_SAFETY * n * eps * magnitude``.
FLOAT_SAFETY = 8.0


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
        Levels that apply; drop ``EXACT`` when a side is not polynomial in
        :math:`\mathbb{F}_p` (e.g. it contains :math:`\sqrt{M}`).
    """

    shapes: Shapes | Mapping[str, tuple[int | str, int | str]]
    lhs: Builder
    rhs: Builder
    dims: tuple[Dims, ...]
    reference: Reference | None = None
    random_dims: Dims | None = None
    levels: tuple[Level, ...] = (Level.SYMBOLIC, Level.EXACT, Level.FLOAT)
    scope: str = ""

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
        for name, value in (("dims", dims), ("random_dims", random_dims), ("levels", tuple(self.levels)),
                            ("shapes", shapes),
                            ("lhs", as_builder("Identity.lhs", self.lhs, variables, dimensions)),
                            ("rhs", as_builder("Identity.rhs", self.rhs, variables, dimensions))):
            object.__setattr__(self, name, value)
        if self.reference is not None:
            object.__setattr__(self, "reference",
                               as_builder("Identity.reference", self.reference, variables, dimensions))

    @property
    def check_dims(self) -> Dims:
        return self.random_dims if self.random_dims is not None else self.dims[-1]


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


def instance(identity: Identity, dims: Dims) -> tuple[Env, sympy.ImmutableMatrix, sympy.ImmutableMatrix]:
    """Build the symbol environment and both sides at ``dims``."""
    env = {name: symbolic_matrix(name, r, c) for name, (r, c) in identity.shapes(dims).items()}
    lhs = sympy.ImmutableMatrix(identity.lhs(env, dims))
    rhs = sympy.ImmutableMatrix(identity.rhs(env, dims))
    if lhs.shape != rhs.shape:
        raise ShapeError(f"sides have shapes {lhs.shape} and {rhs.shape} at dims {dict(dims)}")
    return env, lhs, rhs


def _fmt_dims(d: Dims) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items())


def _fmt_grid(dims: Sequence[Dims]) -> str:
    keys = list(dims[0])
    ranges = ", ".join(f"{k} in {{{','.join(str(v) for v in sorted({d[k] for d in dims}))}}}" for k in keys)
    return f"{len(dims)} dimension tuples ({ranges})"


def _symbolic(identity: Identity) -> Evidence:
    for dims in identity.dims:
        try:
            _, lhs, rhs = instance(identity, dims)
        except ShapeError as exc:
            return Evidence(Level.SYMBOLIC, False, str(exc), {"dims": dict(dims), "reason": str(exc)})
        for idx in range(len(lhs)):
            diff = sympy.expand(lhs[idx] - rhs[idx], deep=True)
            if diff != 0:
                r, c = divmod(idx, lhs.shape[1])
                return Evidence(
                    Level.SYMBOLIC,
                    False,
                    f"entry ({r + 1},{c + 1}) differs at {_fmt_dims(dims)}",
                    {
                        "dims": dict(dims),
                        "entry": [r + 1, c + 1],
                        "lhs": sympy.latex(lhs[idx]),
                        "rhs": sympy.latex(rhs[idx]),
                        "difference": sympy.latex(diff),
                    },
                )
    covered = _fmt_grid(identity.dims)
    scope = f" {identity.scope}" if identity.scope else ""
    return Evidence(
        Level.SYMBOLIC, True, f"lhs - rhs expands to 0 entrywise, sigma uninterpreted, at {covered}.{scope}"
    )


def _random_values(env: Env, fld, rng) -> dict[sympy.Symbol, Any]:
    return {s: fld.random(rng) for name in sorted(env) for s in env[name]}


def _exact(identity: Identity, seed: int, trials: int) -> Evidence:
    dims = identity.check_dims
    try:
        env, lhs, rhs = instance(identity, dims)
    except ShapeError as exc:
        return Evidence(Level.EXACT, False, str(exc), {"dims": dict(dims), "reason": str(exc)})
    deg_memo: dict = {}
    degree = max(max(structural_degree(lhs[i], deg_memo), structural_degree(rhs[i], deg_memo))
                 for i in range(len(lhs)))
    n_sigma = len({a for side in (lhs, rhs) for i in range(len(side))
                   for a in side[i].atoms(sympy.core.function.AppliedUndef) if a.func == SIGMA})
    # sigma collisions: each pair of distinct arguments agrees with probability <= degree/p.
    per_trial = (degree + n_sigma * n_sigma * max(degree, 1)) / MERSENNE_61
    for t in range(trials):
        fld = PrimeField(seed=seed * 1000 + t)
        rng = np.random.default_rng([seed, t])
        values = _random_values(env, fld, rng)
        memo: dict = {}
        for idx in range(len(lhs)):
            a = evaluate(lhs[idx], values, fld, memo)
            b = evaluate(rhs[idx], values, fld, memo)
            if a != b:
                r, c = divmod(idx, lhs.shape[1])
                return Evidence(
                    Level.EXACT,
                    False,
                    f"entry ({r + 1},{c + 1}) differs in F_p at {_fmt_dims(dims)} (seed {seed}, trial {t})",
                    {"dims": dict(dims), "field": "F_p", "p": MERSENNE_61, "seed": seed, "trial": t,
                     "entry": [r + 1, c + 1], "lhs_value": int(a), "rhs_value": int(b)},
                )
    return Evidence(
        Level.EXACT,
        True,
        f"{trials} random points of F_p (p = 2^61-1, sigma a random function) at {_fmt_dims(dims)}, seed {seed}; "
        f"degree <= {degree}, a false identity survives with probability <= {per_trial ** trials:.1e}",
    )


def _float(identity: Identity, seed: int) -> Evidence:
    dims = identity.check_dims
    try:
        env, lhs, rhs = instance(identity, dims)
    except ShapeError as exc:
        return Evidence(Level.FLOAT, False, str(exc), {"dims": dict(dims), "reason": str(exc)})
    fld = RealField()
    rng = np.random.default_rng([seed, 7])
    values = _random_values(env, fld, rng)
    # A true identity holds at every point: if float64 overflows at the drawn point (e.g. a saturated
    # softmax), redraw it closer to 0 instead of reporting the overflow as a failure.
    for shrink in _SHRINK:
        point = {s: v * shrink for s, v in values.items()}
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            try:
                got, want, mags, ref_eps, source = _float_point(identity, env, lhs, rhs, point, dims, fld)
            except OverflowError:
                continue
        if want is None:
            return Evidence(Level.FLOAT, False, f"reference has {mags} entries, derived side {got.size}",
                            {"dims": dict(dims), "reason": "size mismatch"})
        if np.all(np.isfinite(got)) and np.all(np.isfinite(want)) and np.all(np.isfinite(mags)):
            break
    else:
        return Evidence(Level.FLOAT, False, f"float64 overflows at {_fmt_dims(dims)} (seed {seed}) even with inputs "
                        f"scaled by {_SHRINK[-1]:g}: the float level cannot evaluate this statement",
                        {"dims": dict(dims), "seed": seed, "reason": "overflow"})
    n_ops = max(len(lhs), 1) + sum(len(s) for s in env.values())
    eps = max(np.finfo(float).eps, ref_eps)
    tiny = np.finfo(np.float32 if ref_eps >= np.finfo(np.float32).eps else float).tiny
    tol = FLOAT_SAFETY * n_ops * eps * mags + tiny
    if shrink != 1:
        source += f" (inputs scaled by {shrink:g} to avoid float64 overflow)"
    err = np.abs(got - want)
    bad = np.flatnonzero(~(err <= tol))
    if bad.size:
        i = int(bad[0])
        r, c = divmod(i, lhs.shape[1])
        return Evidence(
            Level.FLOAT,
            False,
            f"entry ({r + 1},{c + 1}) differs from {source} by {err[i]:.3e} > tolerance {tol[i]:.3e}",
            {"dims": dict(dims), "seed": seed, "entry": [r + 1, c + 1], "derived": float(got[i]),
             "reference": float(want[i])},
        )
    rel = float(np.max(err / np.maximum(mags, np.finfo(float).tiny))) if err.size else 0.0
    return Evidence(
        Level.FLOAT,
        True,
        f"float64 at {_fmt_dims(dims)} (seed {seed}) agrees with {source}: max error/magnitude {rel:.1e}, "
        f"tolerance {FLOAT_SAFETY:g}*n*eps*magnitude" + (f" with the reference's eps = {ref_eps:.1e}" if
                                                          ref_eps > np.finfo(float).eps else ""),
    )


#: Input scales tried by the float level when float64 overflows at the drawn point.
_SHRINK = (1.0, 2.0 ** -4, 2.0 ** -8, 2.0 ** -16)


def _float_point(identity: Identity, env: Env, lhs, rhs, values, dims: Dims, fld: RealField):
    """Derived side, reference, magnitudes, the reference's precision and its description at one point."""
    memo: dict = {}
    got = np.array([evaluate(rhs[i], values, fld, memo) for i in range(len(rhs))], dtype=float)
    ref_eps = 0.0
    if identity.reference is not None:
        arrays = {n: np.array([[values[m[i, j]] for j in range(m.shape[1])] for i in range(m.shape[0])])
                  for n, m in env.items()}
        raw = np.asarray(identity.reference(arrays, dims))
        if np.issubdtype(raw.dtype, np.floating):  # a float32 reference is only float32-accurate
            ref_eps = float(np.finfo(raw.dtype).eps)
        want = raw.astype(float).reshape(-1)
        source = "an independent NumPy implementation"
        if want.size != got.size:
            return got, None, want.size, ref_eps, source
    else:
        want = np.array([evaluate(lhs[i], values, fld, memo) for i in range(len(lhs))], dtype=float)
        source = "the left-hand side"
    mag_memo: dict = {}
    mags = np.array([max(magnitude(lhs[i], values, mag_memo), magnitude(rhs[i], values, mag_memo))
                     for i in range(len(lhs))])
    return got, want, np.maximum(mags, _input_scale_floor(lhs, rhs, values)), ref_eps, source


def _input_scale_floor(lhs, rhs, values) -> np.ndarray:
    r"""Per-entry magnitude with every input as large as the largest one, :math:`X=\max|\text{input}|`.

    The reference may form (and cancel) intermediates that the simplified symbolic
    side never shows, e.g. :math:`|a+c|-|a|` with :math:`a = u_1^2+u_2^2`: their size is
    bounded by the expression's magnitude at inputs of size :math:`X`, constants included.
    """
    scale = max((abs(float(v)) for v in values.values()), default=1.0)
    uniform = {s: scale for s in values}
    memo: dict = {}

    def floor(i: int) -> float:
        if not (_polynomial(lhs[i]) and _polynomial(rhs[i])):
            return 0.0  # exp, sqrt, ...: the magnitude bound is not meaningful there
        return max(magnitude(lhs[i], uniform, memo), magnitude(rhs[i], uniform, memo))

    with np.errstate(over="ignore"):
        return np.array([floor(i) for i in range(len(lhs))], dtype=float)


def _polynomial(expr: sympy.Basic) -> bool:
    """Only +, ×, integer powers, numbers, symbols and the uninterpreted σ."""
    if any(f.func != SIGMA for f in expr.atoms(sympy.Function)):
        return False
    return all(p.exp.is_Integer for p in expr.atoms(sympy.Pow))


def check_identity(identity, seed: int = 0, trials: int = 2,
                   levels: Sequence[Level] | None = None) -> Verdict:
    """Run every applicable level of an :class:`Identity` (or an ``OpaqueIdentity``) and collect the evidence."""
    from .opaque import OpaqueIdentity, check_opaque

    if isinstance(identity, OpaqueIdentity):
        return check_opaque(identity, seed=seed, trials=trials, levels=levels)
    chosen = tuple(identity.levels if levels is None else (lv for lv in identity.levels if lv in levels))
    runners = {
        Level.SYMBOLIC: lambda: _symbolic(identity),
        Level.EXACT: lambda: _exact(identity, seed, trials),
        Level.FLOAT: lambda: _float(identity, seed),
    }
    return Verdict(tuple(runners[lv]() for lv in chosen))


