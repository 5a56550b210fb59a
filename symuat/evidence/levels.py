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

from ..errors import ShapeError
from .fields import MERSENNE_61, PrimeField
from .protocol import Claim, Instance, InstanceCache, LazyData
from .verdict import Evidence, Level

__all__ = ["Run", "LevelRunner", "RUNNERS", "register_level", "OPTIONAL_RUNNERS", "register_optional_level",
           "instance_at", "symbolic_level", "exact_level"]


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
    key = "dims" if isinstance(point, dict) else "case"
    return Evidence(level, False, str(exc), {key: point, "reason": str(exc)})


@register_level(Level.SYMBOLIC)
def symbolic_level(claim: Claim, run: Run) -> Evidence:
    """``expand(lhs - rhs) == 0`` at every point, smallest first (the first failure is the smallest)."""
    for point in claim.symbolic_points:
        try:
            inst = instance_at(claim, point, run)
        except ShapeError as exc:
            return shape_failure(Level.SYMBOLIC, exc, point)
        failure = inst.symbolic_failure()
        if failure is not None:
            return Evidence(Level.SYMBOLIC, False, failure.detail,
                            LazyData(lambda: failure.data, eager={**inst.point, **getattr(failure.data, "eager", {})}))
    scope = f" {claim.scope}" if claim.scope else ""
    return Evidence(Level.SYMBOLIC, True, f"{claim.symbolic_statement()}.{scope}")


def entry_label(inst: Instance, idx: int) -> tuple[str, list[int]]:
    r, c = divmod(idx, max(inst.ncols, 1))
    return f"entry ({r + 1},{c + 1})", [r + 1, c + 1]


@register_level(Level.EXACT)
def exact_level(claim: Claim, run: Run) -> Evidence:
    r"""Both sides at ``trials`` random points of :math:`\mathbb F_p`, σ a random function (Schwartz–Zippel)."""
    point = claim.check_point
    try:
        inst = instance_at(claim, point, run)
    except ShapeError as exc:
        return shape_failure(Level.EXACT, exc, point)
    per_trial = inst.survival_per_trial(MERSENNE_61)
    for t in range(run.trials):
        fld = PrimeField(seed=run.seed * 1000 + t)
        values = inst.bind(fld, np.random.default_rng([run.seed, t]))
        memo: dict = {}
        lhs, rhs = inst.side("lhs", values, fld, memo), inst.side("rhs", values, fld, memo)
        if lhs.shape != rhs.shape:
            return Evidence(Level.EXACT, False, f"sides have {lhs.size} and {rhs.size} entries at {inst.where}",
                            {**inst.point, "reason": "size mismatch"})
        bad = [i for i in range(lhs.size) if int(lhs[i]) != int(rhs[i])]
        if bad:
            label, entry = entry_label(inst, bad[0])
            return Evidence(
                Level.EXACT, False,
                f"{label} differs in F_p at {inst.where} (seed {run.seed}, trial {t})",
                {**inst.point, "field": "F_p", "p": MERSENNE_61, "seed": run.seed, "trial": t, "entry": entry,
                 "lhs_value": int(lhs[bad[0]]), "rhs_value": int(rhs[bad[0]])},
            )
    return Evidence(
        Level.EXACT, True,
        f"{run.trials} random points of F_p (p = 2^61-1, sigma a random function) at {inst.where}, seed {run.seed}; "
        f"{inst.degree_note}, a false identity survives with probability <= {per_trial ** run.trials:.1e}",
    )
