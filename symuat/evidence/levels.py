r"""The evidence levels, one function each, over the claim protocol; the level registry.

A level is a function ``(claim, run) -> Evidence`` registered with
:func:`register_level`; adding a level (e.g. ``all-sizes``) is one registration.
This module registers the symbolic and exact levels; the float level lives in
:mod:`symuat.evidence.float_level`.  See ``docs/evidence.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import sympy

from ..errors import ShapeError, UnsupportedError
from .fields import MERSENNE_61, PrimeField, RationalField, evaluate
from .functions import Kind, expression_kind, unsupported_node
from .protocol import Claim, Instance, InstanceCache, LazyData
from .verdict import Evidence, Level
from .witness import Witness

__all__ = ["Run", "LevelRunner", "RUNNERS", "register_level", "OPTIONAL_RUNNERS", "register_optional_level",
           "instance_at", "symbolic_level", "exact_level", "prime_check", "rational_check", "inst_kind",
           "RATIONAL_POINTS"]


@dataclass(frozen=True)
class Run:
    """The settings of one check: seed and trials of the randomized levels, and the instance cache."""

    seed: int = 0
    trials: int = 2
    cache: InstanceCache = field(default_factory=InstanceCache)


LevelRunner = Callable[[Claim, Run], Evidence]

#: Level -> the function that runs it; filled by :func:`register_level`.
RUNNERS: dict[Level, LevelRunner] = {}


def register_level(level: Level) -> Callable[[LevelRunner], LevelRunner]:
    """Register ``runner`` as the implementation of ``level`` (a decorator)."""
    def register(runner: LevelRunner) -> LevelRunner:
        RUNNERS[level] = runner
        return runner
    return register


#: Levels that add evidence where they apply (their runner returns ``None`` elsewhere), run before the claim's
#: own levels for every claim checked symbolically; e.g. ``all-sizes`` (registered by :mod:`symuat.allsizes`).
OPTIONAL_RUNNERS: dict[Level, Callable[[Claim, Run], Evidence | None]] = {}


def register_optional_level(level: Level) -> Callable[[Callable], Callable]:
    """Register ``runner`` as an optional level (a decorator); a ``None`` result adds no evidence."""
    def register(runner: Callable) -> Callable:
        OPTIONAL_RUNNERS[level] = runner
        return runner
    return register


def instance_at(claim: Claim, point, run: Run) -> Instance:
    """The claim's instance at ``point``, through the run's cache."""
    return run.cache.get(claim, point, lambda: claim.instantiate(point))


def shape_failure(level: Level, exc: ShapeError, point) -> Evidence:
    """✗ at ``point``: the sides do not build there; the witness is the point itself (no values are needed)."""
    key = "dims" if isinstance(point, dict) else "case"
    where = {str(k): str(v) for k, v in point.items()} if isinstance(point, dict) else {"case": str(point)}
    witness = Witness("sizes", where, "no value: the sides do not fit", "no value: the sides do not fit",
                      f"the builders raise a shape error at these sizes: {exc}")
    return Evidence(level, False, str(exc), {key: point, "reason": str(exc)}, witness=witness)


def size_witness(inst: Instance, lhs: int, rhs: int) -> Witness:
    """A witness that needs no values: the sides have different numbers of entries at the instance's point."""
    return Witness("sizes", {"at": str(inst.where)}, f"{lhs} entries", f"{rhs} entries",
                   "the entry counts of the two sides (no values needed)")


@register_level(Level.SYMBOLIC)
def symbolic_level(claim: Claim, run: Run) -> Evidence:
    """``lhs - rhs`` reduces to 0 at every point (expansion, then canonical forms); else the first point, smallest
    first, with a checked witness; else ``undecided`` (a difference no canonical form reduces, and no witness)."""
    undecided = None
    methods: list[str] = []
    for point in claim.symbolic_points:
        try:
            inst = instance_at(claim, point, run)
        except ShapeError as exc:
            return shape_failure(Level.SYMBOLIC, exc, point)
        failure = inst.symbolic_failure()
        methods.extend(m for m in getattr(inst, "proof_methods", ()) if m not in methods)
        if failure is not None and failure.undecided:
            undecided = undecided or failure
        elif failure is not None:
            return Evidence(Level.SYMBOLIC, False, failure.detail,
                            LazyData(lambda: failure.data, eager={**inst.point, **getattr(failure.data, "eager", {})}),
                            witness=failure.witness)
    if undecided is not None:
        return Evidence(Level.SYMBOLIC, None, undecided.detail)
    scope = f" {claim.scope}" if claim.scope else ""
    statement = claim.symbolic_statement(methods) if methods else claim.symbolic_statement()
    return Evidence(Level.SYMBOLIC, True, f"{statement}.{scope}")


def entry_label(inst: Instance, idx: int) -> tuple[str, list[int]]:
    r, c = divmod(idx, max(inst.ncols, 1))
    return f"entry ({r + 1},{c + 1})", [r + 1, c + 1]


@register_level(Level.EXACT)
def exact_level(claim: Claim, run: Run) -> Evidence:
    r"""Both sides at ``trials`` random points of :math:`\mathbb F_p`, σ a random function (Schwartz–Zippel);
    piecewise-linear sides (``Max``, ``Abs``, ``Piecewise``) at random points of :math:`\mathbb Q` inside the
    hypotheses; sides with other functions (``exp``, ``sqrt``, …) are ``undecided`` here."""
    point = claim.check_point
    try:
        inst = instance_at(claim, point, run)
    except ShapeError as exc:
        return shape_failure(Level.EXACT, exc, point)
    kind = inst_kind(inst)
    if kind is Kind.PIECEWISE:
        return rational_check(inst, run)
    if kind is not Kind.RATIONAL:
        node = first_inexact(inst)
        return Evidence(Level.EXACT, None, f"undecided: {node} has no exact value in F_p or Q at {inst.where}; "
                                           "the float level evaluates it (float64, mpmath intervals)")
    return prime_check(inst, run)


def prime_check(inst: Instance, run: Run) -> Evidence:
    r"""The :math:`\mathbb F_p` check of rational sides; a difference is re-checked before it refutes."""
    per_trial = inst.survival_per_trial(MERSENNE_61)
    for t in range(run.trials):
        fld = PrimeField(seed=run.seed * 1000 + t)
        values = inst.bind(fld, np.random.default_rng([run.seed, t]))
        memo: dict = {}
        try:
            lhs, rhs = inst.side("lhs", values, fld, memo), inst.side("rhs", values, fld, memo)
        except ZeroDivisionError:
            return Evidence(Level.EXACT, None, f"undecided: a denominator is 0 in F_p at {inst.where} (seed "
                                               f"{run.seed}, trial {t})")
        if lhs.shape != rhs.shape:
            return Evidence(Level.EXACT, False, f"sides have {lhs.size} and {rhs.size} entries at {inst.where}",
                            {**inst.point, "reason": "size mismatch"}, witness=size_witness(inst, lhs.size, rhs.size))
        bad = [i for i in range(lhs.size) if int(lhs[i]) != int(rhs[i])]
        if bad:
            label, entry = entry_label(inst, bad[0])
            witness = inst.recheck_prime(bad[0], values, fld)
            if witness is None:
                return Evidence(Level.EXACT, None, f"undecided: {label} differs in F_p at {inst.where} (seed "
                                                   f"{run.seed}, trial {t}) but the independent re-check disagrees")
            return Evidence(
                Level.EXACT, False,
                f"{label} differs in F_p at {inst.where} (seed {run.seed}, trial {t})",
                {**inst.point, "field": "F_p", "p": MERSENNE_61, "seed": run.seed, "trial": t, "entry": entry,
                 "lhs_value": int(lhs[bad[0]]), "rhs_value": int(rhs[bad[0]])},
                witness=witness,
            )
    return Evidence(
        Level.EXACT, True,
        f"{run.trials} random points of F_p (p = 2^61-1, sigma a random function) at {inst.where}, seed {run.seed}; "
        f"{inst.degree_note}, a false identity survives with probability <= {per_trial ** run.trials:.1e}",
    )


def _side_exprs(inst: Instance) -> tuple:
    return tuple(inst.lhs) + tuple(inst.rhs) if hasattr(inst.lhs, "shape") else (inst.lhs, inst.rhs)


def inst_kind(inst: Instance) -> Kind:
    """The :class:`~symuat.evidence.functions.Kind` of both sides (cached on the instance)."""
    cached = inst.__dict__.get("_kind")
    if cached is None:
        cached = expression_kind(_side_exprs(inst))
        inst.__dict__["_kind"] = cached
    return cached


def first_inexact(inst: Instance) -> str:
    """The first node of the sides with no exact value (for the ``undecided`` reason)."""
    node = unsupported_node(_side_exprs(inst))
    if node is not None:
        return f"{type(node).__name__} ({node})"
    for e in _side_exprs(inst):
        for sub in e.atoms(sympy.Function, sympy.Pow, sympy.NumberSymbol, sympy.Float):
            if expression_kind(sub) is Kind.TRANSCENDENTAL and not (sub.is_Pow and sub.exp.is_Integer):
                return f"{sub}"
    return "a side"


#: Random rational points tried by the exact level on piecewise-linear sides.
RATIONAL_POINTS = 16


def rational_check(inst: Instance, run: Run) -> Evidence:
    r"""Piecewise-linear sides at random points of :math:`\mathbb Q` inside the hypotheses, decided exactly."""
    fld = RationalField(run.seed)
    for t in range(RATIONAL_POINTS):
        values = inst.bind(fld, np.random.default_rng([run.seed, 3, t]))
        try:
            lhs = [evaluate(e, values, fld) for e in inst.lhs]
            rhs = [evaluate(e, values, fld) for e in inst.rhs]
        except ZeroDivisionError:
            continue
        except UnsupportedError as exc:
            return Evidence(Level.EXACT, None, f"undecided: {exc} at {inst.where}")
        bad = [i for i in range(len(lhs)) if lhs[i] != rhs[i]]
        if bad:
            label, entry = entry_label(inst, bad[0])
            witness = inst.recheck_rational(bad[0], values, fld)
            if witness is None:
                return Evidence(Level.EXACT, None, f"undecided: {label} differs in Q at {inst.where} but the "
                                                   "independent re-check disagrees")
            return Evidence(Level.EXACT, False, f"{label} differs in Q at {inst.where} (seed {run.seed}, point {t}): "
                                                f"{witness.text}",
                            {**inst.point, "field": "Q", "seed": run.seed, "trial": t, "entry": entry},
                            witness=witness)
    return Evidence(Level.EXACT, True, f"{RATIONAL_POINTS} random points of Q inside the hypotheses at {inst.where}, "
                                       f"seed {run.seed}, decided exactly (Max, Min, Abs, Piecewise included); "
                                       "piecewise sides give no probability bound")
