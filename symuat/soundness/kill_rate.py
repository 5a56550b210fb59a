r"""Kill rates of the evidence levels on mutants of true statements.

For every mutant (:mod:`symuat.soundness.mutants`) each applicable level is
run and the outcome classified:

* a mutant is **non-equivalent** when some level rejects it *and* the rejection
  is confirmed symbolically (the grid, or the exact/float check point);
* a mutant is **equivalent** when the symbolic level says it holds — at the
  grid and at the check point of the randomized levels; it leaves every
  denominator and is reported;
* the **kill rate** of a level is rejected / non-equivalent, counting only
  mutants that differ from the original where that level looks (the exact and
  float levels look at one dimension tuple / case);
* a **false rejection** is a level rejecting a mutant that is symbolically
  equivalent where it looked — a soundness bug in that level.

For substitution tables the symbolic levels are the local layer check
(:func:`~symuat.expansion.verify_table`) and, for boxes 1 and ``rule_layer``,
the induction proof (:func:`~symuat.expansion.induction_proof`); equivalence
is decided by the naive full expansion (:func:`~symuat.expansion.verify_depth_naive`),
and the exact/float levels compare the unfolded mutant with the nested network.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import DerivationError, ShapeError
from ..evidence.fields import logistic
from ..evidence.identity import Identity
from ..evidence.levels import Run, instance_at
from ..evidence.opaque import OpaqueIdentity
from ..evidence.pipeline import check_identity
from ..evidence.protocol import InstanceCache
from ..evidence.verdict import Level
from ..expansion import induction_proof, nested_form, substitution_table, verify_depth_naive, verify_table
from ..ledger.entry import Status
from ..ledger.registry import load_entries
from .mutants import Mutant, identity_mutants, opaque_mutants, table_mutants

__all__ = ["Outcome", "LevelCount", "KillReport", "assess", "assess_table", "ledger_mutants", "kill_rates",
           "true_statement_sweep", "table_reference"]

LEVELS = ("symbolic", "induction", "exact", "float")


@dataclass(frozen=True)
class Outcome:
    r"""What each level said about one mutant.

    ``holds[level]`` is True/False, or absent when the level does not apply;
    ``differs[level]`` says whether the mutant differs from the original
    where that level looks (decided symbolically).
    """

    mutant: Mutant
    family: str
    holds: Mapping[str, bool]
    differs: Mapping[str, bool]

    @property
    def equivalent(self) -> bool:
        return not any(self.differs.values())


@dataclass
class LevelCount:
    """Per-level tally."""

    killed: int = 0
    total: int = 0
    false_rejections: int = 0
    survivors: list = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.killed / self.total if self.total else 1.0


@dataclass(frozen=True)
class KillReport:
    """Kill rates per family and level, equivalent mutants, false rejections."""

    counts: Mapping[str, Mapping[str, LevelCount]]
    mutants: Mapping[str, int]
    equivalent: Mapping[str, list]

    def to_text(self) -> str:
        lines = [f"{'family':9} {'mutants':>7} {'equiv':>5}  " + "  ".join(f"{lv:>22}" for lv in LEVELS)]
        for fam, per in self.counts.items():
            cells = []
            for lv in LEVELS:
                c = per.get(lv)
                cells.append(f"{'-':>22}" if c is None or not c.total else
                             f"{c.killed:>5}/{c.total:<5} {100 * c.rate:6.2f}%" + (f" FR{c.false_rejections}"
                                                                                   if c.false_rejections else "    "))
            lines.append(f"{fam:9} {self.mutants[fam]:>7} {len(self.equivalent[fam]):>5}  " + "  ".join(cells))
        for fam, per in self.counts.items():
            for lv, c in per.items():
                for s in c.survivors[:10]:
                    lines.append(f"survivor [{fam}/{lv}] {s}")
        return "\n".join(lines)


def _label(m: Mutant) -> str:
    return f"{m.source} {m.operator} {m.site}"


def _symbolic_at(claim, where, cache: InstanceCache) -> bool | None:
    """``lhs - rhs`` reduces to 0 at ``where`` (on the sides the randomized levels evaluated there): True, False
    (a witness), or None (undecided)."""
    try:
        inst = instance_at(claim, where, Run(cache=cache))
    except ShapeError:
        return False
    failure = inst.symbolic_failure()
    return True if failure is None else None if failure.undecided else False


def assess(mutant: Mutant, seed: int = 0) -> Outcome:
    """Run every level of an explicit or opaque identity mutant and classify the result."""
    claim = mutant.claim
    cache = InstanceCache()
    verdict = check_identity(claim, seed=seed, cache=cache)
    holds = {ev.level.value: ev.holds for ev in verdict.evidence if ev.holds is not None}  # undecided: no test
    differs = {"symbolic": not holds.get("symbolic", True)}
    randomized = [lv for lv in ("exact", "float") if lv in holds]
    if randomized:
        equal = _symbolic_at(claim, claim.check_point, cache)
        if equal is None:  # undecided symbolically: a refutation with a checked witness shows the difference
            equal = not any(ev.holds is False and ev.witness is not None for ev in verdict.evidence
                            if ev.level.value in randomized)
        differs_at_check = mutant.fires_at_check and not equal
        for lv in randomized:
            differs[lv] = differs_at_check
    family = "opaque" if isinstance(claim, OpaqueIdentity) else "explicit"
    return Outcome(mutant, family, holds, differs)


def table_reference(a: Mapping[str, np.ndarray], depth: int) -> np.ndarray:
    """Plain NumPy Eq. 20 recursion, an independent reference for the unfolded table."""
    x = a["x'_{0}"]
    for i in range(1, depth + 1):
        w = {k: a[f"W'_{{{i},{k}}}"] for k in (1, 2, 3)}
        x = w[1] @ x + a[f"b'_{{{i},3}}"] + w[3] @ logistic(w[2] @ x + a[f"b'_{{{i},2}}"])
    return x


def assess_table(mutant: Mutant, seed: int = 0, rule_layer: int | None = None) -> Outcome:
    """Run the table levels on one table mutant and classify the result."""
    table = mutant.claim
    depth = table.depth
    r = depth if rule_layer is None else rule_layer
    layer = table.row(mutant.source).layer
    local = verify_table(table)
    holds = {"symbolic": local.holds}
    if layer in (1, r):
        try:
            holds["induction"] = induction_proof(table, rule_layer=r).holds
        except DerivationError:  # a cyclic table cannot be unfolded: the proof rejects it
            holds["induction"] = False
    well_founded = all(lc.well_founded for lc in local.layers)
    try:
        form = table.unfold(table.form())
    except DerivationError:  # a cyclic (ill-founded) table has no value
        return Outcome(mutant, "table", holds, {"symbolic": True, "induction": "induction" in holds})
    naive = verify_depth_naive(depth, table).holds
    differs_all = (not naive) or (not well_founded)
    ident = OpaqueIdentity(lambda c: nested_form(depth), lambda c, f=form: f, (depth,),
                           reference=table_reference, width=3, levels=(Level.EXACT, Level.FLOAT))
    for ev in check_identity(ident, seed=seed).evidence:
        holds[ev.level.value] = ev.holds
    differs = {"symbolic": differs_all, "exact": not naive, "float": not naive}
    if "induction" in holds:
        differs["induction"] = differs_all
    return Outcome(mutant, "table", holds, differs)


def ledger_mutants(entries: Iterable | None = None, sources: Sequence[str] | None = None) -> tuple[Mutant, ...]:
    """Mutants of every ``proved`` ledger entry whose claim is an Identity or OpaqueIdentity."""
    entries = load_entries() if entries is None else entries
    out: list[Mutant] = []
    made: dict[int, tuple[Mutant, ...]] = {}  # a claim that several entries share is mutated once
    for e in entries:
        if e.status is not Status.PROVED or (sources is not None and e.id not in sources):
            continue
        if id(e.claim) in made:
            out.extend(replace(m, source=e.id) for m in made[id(e.claim)])
        elif isinstance(e.claim, (Identity, OpaqueIdentity)):
            mutate = opaque_mutants if isinstance(e.claim, OpaqueIdentity) else identity_mutants
            made[id(e.claim)] = mutate(e.id, e.claim)
            out.extend(made[id(e.claim)])
    return tuple(out)


def kill_rates(outcomes: Iterable[Outcome]) -> KillReport:
    """Tally outcomes into per-family, per-level kill rates."""
    counts: dict[str, dict[str, LevelCount]] = {}
    mutants: dict[str, int] = {}
    equivalent: dict[str, list] = {}
    for o in outcomes:
        per = counts.setdefault(o.family, {})
        mutants[o.family] = mutants.get(o.family, 0) + 1
        eq = equivalent.setdefault(o.family, [])
        if o.equivalent:
            eq.append(_label(o.mutant))
        for lv, held in o.holds.items():
            c = per.setdefault(lv, LevelCount())
            if o.differs.get(lv, False):
                c.total += 1
                if not held:
                    c.killed += 1
                else:
                    c.survivors.append(_label(o.mutant))
            elif not held and lv in ("exact", "float") and (o.mutant.fires_at_check or o.family == "table"):
                c.false_rejections += 1  # rejected, but symbolically equal where the level looked
    return KillReport(counts, mutants, equivalent)


def true_statement_sweep(seeds: Iterable[int], entries: Iterable | None = None,
                         levels: Sequence[Level] = (Level.EXACT, Level.FLOAT),
                         cache: InstanceCache | None = None) -> tuple[int, list[str]]:
    """Run the randomized levels of every proved Identity/OpaqueIdentity at each seed; return (runs, failures).

    The sides of each claim are built once (the builders are deterministic, ``cache``
    keeps them) and only the random evaluation is repeated, through the levels' own code.
    A claim that several entries share is run once per seed, under the first entry's id.
    """
    cache = InstanceCache() if cache is None else cache
    entries = load_entries() if entries is None else entries
    claims = [(e.id, e.claim) for e in entries
              if e.status is Status.PROVED and isinstance(e.claim, (Identity, OpaqueIdentity))]
    claims += [(f"{e.id} (correction)", e.correction.identity) for e in entries
               if e.correction is not None and isinstance(e.correction.identity, (Identity, OpaqueIdentity))]
    first: dict[int, tuple[str, object]] = {}
    for name, claim in claims:
        first.setdefault(id(claim), (name, claim))
    failures: list[str] = []
    runs = 0
    for seed in seeds:
        for name, claim in first.values():
            for ev in check_identity(claim, seed=seed, levels=levels, cache=cache).evidence:
                runs += 1
                if ev.holds is False:  # a refutation; an undecided level refutes nothing
                    failures.append(f"{name} seed {seed}: {ev.level.value}: {ev.detail}")
    return runs, failures


def table_kill_outcomes(depth: int = 3, seed: int = 0) -> list[Outcome]:
    """Outcomes of every mutant of the depth-``depth`` substitution table."""
    return [assess_table(m, seed=seed) for m in table_mutants(substitution_table(depth))]
