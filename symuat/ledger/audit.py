r"""Recompute the status of every ledger entry from its claim (docs/evidence.md, docs/ledger-format.md).

The audit never trusts the recorded status: it runs the evidence levels and
derives the status, then reports whether the two agree.

=============  ============================================================
computed       when
=============  ============================================================
``proved``     every level holds, the symbolic level among them
``checked``    every level holds, no symbolic level applies
``erratum``    every level fails and the correction is ``proved``
               (for a denial: the denied identity is proved)
``convention`` some readings of an ambiguous statement hold, others fail
``prose``      the claim is not an equation (a proxy may be measured)
``None``       anything else: levels disagree, or an erratum lacks a proof
=============  ============================================================
"""

from __future__ import annotations

import numbers
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..errors import InvalidValueError
from ..evidence.identity import check_identity
from ..evidence.protocol import InstanceCache
from ..evidence.verdict import Evidence, Level, Verdict
from .coverage import coverage
from .entry import Denial, Entry, Prose, Readings, Status
from .guard import defined_at, entry_timeout, report, time_limit, user_code

__all__ = ["AuditRecord", "check_seed", "audit_entry", "with_coq", "with_correction_coq", "audit", "ledger_json",
           "summary", "computed_summary", "COMPUTED_EXTRA"]


@dataclass(frozen=True)
class AuditRecord:
    """The audit of one entry: computed status, evidence, counterexample, correction proof."""

    entry: Entry
    computed: Status | None
    evidence: tuple[Evidence, ...]
    reason: str
    counterexample: Mapping[str, Any] | None = None
    correction_evidence: tuple[Evidence, ...] = ()

    @property
    def agrees(self) -> bool:
        return self.computed is self.entry.status

    @property
    def grid(self) -> Mapping[str, int] | None:
        """The grid a claim is proved on when the all-sizes level ran and could not decide; ``None`` otherwise:
        whenever the *computed* status is not ``proved`` (a refuted entry is proved on no grid), and when the entry's
        Coq theorem holds (it proves the statement for every size)."""
        if self.computed is not Status.PROVED or any(ev.level is Level.COQ and ev.holds for ev in self.evidence):
            return None
        for ev in self.evidence:
            if ev.level is Level.ALL_SIZES and ev.holds is None and ev.grid is not None:
                return ev.grid
        return None

    def _scoped(self, status: Status) -> str:
        grid = self.grid if status is Status.PROVED else None
        return status.value + (f" (grid {', '.join(f'{k} ≤ {v}' for k, v in grid.items())})" if grid else "")

    @property
    def status_label(self) -> str:
        """The recorded status, with the grid when the statement is proved on its grid only: ``proved (grid n ≤ 2)``
        (the grid only when the audit computes ``proved`` too)."""
        return self._scoped(self.entry.status)

    @property
    def computed_status(self) -> str | None:
        """The computed status as a word: a :class:`Status` value, ``refuted`` (the statement fails and no proved
        correction is recorded), or ``None`` when the levels disagree."""
        if self.computed is not None:
            return self.computed.value
        label = self.computed_label
        return label if label == "refuted" else None

    @property
    def computed_label(self) -> str:
        """The computed status as :attr:`status_label` words it; ``refuted`` for a statement that fails with no
        proved correction, ``no status`` when the deciding levels disagree."""
        if self.computed is not None:
            return self._scoped(self.computed)
        decided = [ev for ev in self.evidence if ev.holds is not None]
        if decided and (not any(ev.holds for ev in decided) or _refuted_above_grid(Verdict(self.evidence))):
            return "refuted"
        return "no status"

    def to_json(self) -> dict[str, Any]:
        e = self.entry
        return {
            "id": e.id,
            "source": e.source.to_json(),
            "statement": e.statement,
            "status": e.status.value,
            "evidence": [ev.to_json() for ev in self.evidence],
            "counterexample": dict(self.counterexample) if self.counterexample is not None else None,
            "correction": e.correction.statement if e.correction is not None else None,
            "correction_evidence": [ev.to_json() for ev in self.correction_evidence],
            "note": e.note,
            "computed": self.computed_status,
            "agrees": self.agrees,
            "grid": dict(self.grid) if self.grid is not None else None,
        }


def check_seed(seed) -> int:
    r"""The seed of the randomized levels: a non-negative integer (NumPy seeds cannot be negative).

    >>> check_seed(3)
    3
    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    symuat.errors.InvalidValueError: seed must be a non-negative integer, got -1
    """
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InvalidValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _refuted_above_grid(verdict: Verdict) -> bool:
    """The all-sizes level found a witness above the grid on which every other level holds."""
    others = [ev.holds for ev in verdict.decided if ev.level is not Level.ALL_SIZES]
    return all(others) and any(ev.level is Level.ALL_SIZES and ev.holds is False and ev.counterexample is not None
                               for ev in verdict.evidence)


def _above_grid(entry: Entry, verdict: Verdict, seed: int, instances: InstanceCache) -> AuditRecord:
    """A statement that holds on its grid and fails above it: false, with the all-sizes witness."""
    witness = next(ev for ev in verdict.evidence if ev.level is Level.ALL_SIZES)
    status, reason, fixed = _failure(entry, verdict, seed, instances)
    return AuditRecord(entry, status, verdict.evidence, f"false above the grid of the other levels ({witness.detail}); "
                       f"{reason}", witness.counterexample, fixed)


def _symbolic(verdict: Verdict) -> bool | None:
    """What the symbolic level said: True, False, or None (undecided, or not run)."""
    return next((ev.holds for ev in verdict.evidence if ev.level is Level.SYMBOLIC), None)


def _proved(verdict: Verdict) -> bool:
    return verdict.holds and _symbolic(verdict) is True


def _all_fail(verdict: Verdict) -> bool:
    return bool(verdict.decided) and not any(ev.holds for ev in verdict.decided)


def _failure(entry: Entry, verdict: Verdict, seed: int,
             instances: InstanceCache) -> tuple[Status | None, str, tuple[Evidence, ...]]:
    if entry.correction is None:
        return None, "the statement fails and no correction is recorded", ()
    fixed = check_identity(entry.correction.identity, seed=seed, cache=instances)
    if _proved(fixed):
        return Status.ERRATUM, "false as printed; the correction is proved", fixed.evidence
    return None, "the statement fails and its correction is not proved", fixed.evidence


def audit_entry(entry: Entry, seed: int = 0, instances: InstanceCache | None = None,
                timeout: float | None = None, coq: Evidence | None = None) -> AuditRecord:
    """Run the claim of ``entry`` at every applicable level and derive its status.

    ``instances`` lets the entries of one audit share the sides built for a claim (or correction) they share.
    The claim's builders, references and proxies are user code: anything they raise (``SystemExit``
    included), or running past ``timeout`` seconds (default: :func:`~symuat.ledger.guard.entry_timeout`),
    is one :class:`~symuat.errors.DerivationError` naming the entry and the ``file:line``.
    ``coq`` is the entry's ``coq`` evidence (:func:`~symuat.ledger.coq.linked_evidence`); a decided one that
    contradicts the other levels leaves the entry without a computed status.
    """
    check_seed(seed)
    limit = entry_timeout(timeout)
    instances = InstanceCache() if instances is None else instances
    report("begin", id=entry.id, at=defined_at(entry.claim))
    with user_code(f"entry {entry.id!r}"), time_limit(limit, entry.id):
        record = _audit_entry(entry, seed, instances)
    return record if coq is None else with_coq(record, coq, denial=isinstance(entry.claim, Denial))


def with_coq(record: AuditRecord, coq: Evidence, denial: bool = False) -> AuditRecord:
    """``record`` with its Coq evidence; no status when Coq and the other levels disagree on the printed statement.

    ``denial``: the entry denies an identity, and the evidence (like every level's) is about that identity.
    """
    out = replace(record, evidence=record.evidence + (coq,))
    if coq.holds is None or record.computed not in (Status.PROVED, Status.CHECKED, Status.ERRATUM):
        return out
    printed_true = coq.holds != denial
    if printed_true == (record.computed is not Status.ERRATUM):
        return out
    return replace(out, computed=None, reason=f"the coq level disagrees with the others ({record.reason}): "
                                              f"{coq.detail}")


def with_correction_coq(record: AuditRecord, coq: Evidence) -> AuditRecord:
    """``record`` with the Coq evidence of its correction (✓, or undecided with Coq's reason: a theorem that is
    missing or rests on an axiom proves nothing, and the correction keeps the other levels' proof)."""
    return replace(record, correction_evidence=record.correction_evidence + (coq,))


def _audit_entry(entry: Entry, seed: int, instances: InstanceCache) -> AuditRecord:
    claim = entry.claim
    if isinstance(claim, Prose):
        evidence = tuple(claim.proxy(seed)) if claim.proxy is not None else ()
        return AuditRecord(entry, Status.PROSE, evidence, claim.reason)
    if isinstance(claim, Readings):
        return _audit_readings(entry, claim, seed, instances)
    if isinstance(claim, Denial):
        return _audit_denial(entry, claim, seed, instances)
    verdict = check_identity(claim, seed=seed, cache=instances)
    if not verdict.decided:  # no level could decide: no status, never "fails"
        return AuditRecord(entry, None, verdict.evidence, "undecided at every level: "
                           + "; ".join(ev.detail.removeprefix("undecided: ") for ev in verdict.evidence))
    if _refuted_above_grid(verdict):
        return _above_grid(entry, verdict, seed, instances)
    if not verdict.consistent:
        return AuditRecord(entry, None, verdict.evidence, "evidence levels disagree", verdict.counterexample)
    if verdict.holds:
        status = Status.PROVED if _proved(verdict) else Status.CHECKED
        return AuditRecord(entry, status, verdict.evidence, "holds as printed")
    status, reason, fixed = _failure(entry, verdict, seed, instances)
    return AuditRecord(entry, status, verdict.evidence, reason, verdict.counterexample, fixed)


def _audit_denial(entry: Entry, claim: Denial, seed: int, instances: InstanceCache) -> AuditRecord:
    verdict = check_identity(claim.identity, seed=seed, cache=instances)
    if not verdict.consistent:
        return AuditRecord(entry, None, verdict.evidence, "evidence levels disagree")
    if _all_fail(verdict) and _symbolic(verdict) is False:
        return AuditRecord(entry, Status.PROVED, verdict.evidence,
                           "the denied identity fails: the counterexample proves the denial", verdict.counterexample)
    if _proved(verdict):
        status, reason, fixed = _failure(entry, verdict, seed, instances)
        proof = {"refuted_by": "the denied identity is proved",
                 "proof": next(ev.detail for ev in verdict.evidence if ev.level is Level.SYMBOLIC)}
        return AuditRecord(entry, status, verdict.evidence, f"the denied identity holds; {reason}", proof, fixed)
    return AuditRecord(entry, None, verdict.evidence, "no symbolic level to decide the denial")


def _audit_readings(entry: Entry, claim: Readings, seed: int, instances: InstanceCache) -> AuditRecord:
    evidence: list[Evidence] = []
    held, failed = [], []
    counterexample = None
    for name, identity in claim.readings.items():
        verdict = check_identity(identity, seed=seed, cache=instances)
        evidence.extend(Evidence(ev.level, ev.holds, f"[{name}] {ev.detail}", ev.counterexample,
                                 witness=ev.witness) for ev in verdict.evidence)
        if not verdict.consistent:
            return AuditRecord(entry, None, tuple(evidence), f"evidence levels disagree for reading {name!r}")
        symbolic = next((ev for ev in verdict.evidence if ev.level is Level.SYMBOLIC), None)
        if symbolic is not None and symbolic.holds is None and not any(ev.holds is False for ev in verdict.evidence):
            return AuditRecord(entry, None, tuple(evidence), f"reading {name!r} is undecided: {symbolic.detail}")
        if verdict.holds and _symbolic(verdict) is True:
            held.append(name)
        else:
            failed.append(name)
            if counterexample is None and verdict.counterexample is not None:
                counterexample = {"reading": name, **verdict.counterexample}
    if not failed:
        return AuditRecord(entry, Status.PROVED, tuple(evidence), f"holds under every reading of {claim.convention}")
    if held:
        reason = f"holds only under {', '.join(held)} ({claim.convention}); fails under {', '.join(failed)}"
        return AuditRecord(entry, Status.CONVENTION, tuple(evidence), reason, counterexample)
    fake = Verdict(tuple(evidence))
    status, reason, fixed = _failure(entry, fake, seed, instances)
    return AuditRecord(entry, status, tuple(evidence), f"fails under every reading; {reason}", counterexample, fixed)


def audit(entries: Iterable[Entry], seed: int = 0) -> tuple[AuditRecord, ...]:
    """Audit every entry, in ledger order; entries that share a claim share its built sides."""
    check_seed(seed)
    instances = InstanceCache()
    return tuple(audit_entry(e, seed=seed, instances=instances) for e in entries)


def summary(records: Iterable[AuditRecord]) -> dict[str, int]:
    """Count entries per recorded status (all five statuses, in the order of docs/ledger-format.md)."""
    counts = Counter(r.entry.status.value for r in records)
    return {s.value: counts.get(s.value, 0) for s in Status}


#: What :func:`computed_summary` counts besides the five statuses: a failing statement with no proved
#: correction, and an entry whose deciding levels disagree.
COMPUTED_EXTRA = ("refuted", "no status")


def computed_summary(records: Iterable[AuditRecord]) -> dict[str, int]:
    """Count entries per *computed* status: the five statuses, then ``refuted`` and ``no status`` (always present,
    zero or not, so that the JSON keys are fixed)."""
    counts = Counter(r.computed_status or "no status" for r in records)
    return {k: counts.get(k, 0) for k in (*(s.value for s in Status), *COMPUTED_EXTRA)}


def ledger_json(records: Iterable[AuditRecord]) -> dict[str, Any]:
    """The machine-readable ledger (docs/ledger-format.md)."""
    records = tuple(records)
    cov = coverage(r.entry for r in records)
    return {"entries": [r.to_json() for r in records], "summary": summary(records),
            "computed_summary": computed_summary(records),
            "coverage": {"per_version": cov.counts, "missing": {v: list(m) for v, m in cov.missing.items()}}}
