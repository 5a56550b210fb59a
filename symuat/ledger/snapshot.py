r"""Audit records as plain data, and back: what the cache stores and the worker processes return.

A snapshot keeps everything the CLI table, the JSON ledger and the LaTeX
appendices read from an :class:`~symuat.ledger.audit.AuditRecord` — the entry's
id, source, statement, recorded status, note, tags and correction statement, the
computed status, reason, evidence and counterexamples — and nothing live (no
claim callables, no SymPy objects).  :func:`record_from_data` rebuilds a record
whose ``entry`` is an :class:`EntrySnapshot`; it raises
:class:`~symuat.errors.LedgerError` on malformed data so that a corrupt cache is
recognised and ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import LedgerError
from ..evidence.verdict import Evidence, Level
from ..evidence.witness import Witness
from .audit import AuditRecord
from .entry import Denial, Prose, Readings, Source, Status

__all__ = ["EntrySnapshot", "CorrectionSnapshot", "claim_kind", "prose_reason", "entry_data", "record_to_data",
           "record_from_data"]


@dataclass(frozen=True)
class CorrectionSnapshot:
    """The printed correction of an erratum (its identity is not kept)."""

    statement: str


@dataclass(frozen=True)
class EntrySnapshot:
    r"""The printed, recorded part of an :class:`~symuat.ledger.entry.Entry`, without its claim.

    ``kind`` names the claim type: ``identity``, ``opaque``, ``readings``, ``denial`` or ``prose``.

    >>> EntrySnapshot("duat:eq1", Source("duat", "Eq. 1"), "G(x)", Status.PROSE, "prose").status.value
    'prose'
    """

    id: str
    source: Source
    statement: str
    status: Status
    kind: str
    correction: CorrectionSnapshot | None = None
    note: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)
    prose: str = ""


def prose_reason(entry) -> str:
    r"""The reason of a :class:`~symuat.ledger.entry.Prose` claim (LaTeX text), ``""`` for any other claim.

    >>> prose_reason(EntrySnapshot("duat:eq1", Source("duat", "Eq. 1"), "G(x)", Status.PROSE, "prose", prose="why"))
    'why'
    """
    if isinstance(entry, EntrySnapshot):
        return entry.prose
    return entry.claim.reason if isinstance(entry.claim, Prose) else ""


def claim_kind(entry) -> str:
    r"""The claim type of an entry (or snapshot) as a word.

    >>> claim_kind(EntrySnapshot("duat:eq1", Source("duat", "Eq. 1"), "G(x)", Status.PROSE, "prose"))
    'prose'
    """
    if isinstance(entry, EntrySnapshot):
        return entry.kind
    claim = entry.claim
    for kind, cls in (("readings", Readings), ("denial", Denial), ("prose", Prose)):
        if isinstance(claim, cls):
            return kind
    return "opaque" if type(claim).__name__ == "OpaqueIdentity" else "identity"


def _mapping_as_dict(value: Any) -> dict:
    if isinstance(value, Mapping):  # e.g. evidence data read lazily
        return dict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _plain(value: Any) -> Any:
    """``value`` after a JSON round trip (tuples become lists); LedgerError if it has no JSON form."""
    try:
        return json.loads(json.dumps(value, default=_mapping_as_dict))
    except (TypeError, ValueError) as exc:
        raise LedgerError(f"audit data has no JSON form: {exc}") from None


def _evidence_data(evidence: tuple[Evidence, ...]) -> list[list[Any]]:
    return [[ev.level.value, None if ev.holds is None else bool(ev.holds), ev.detail, _plain(ev.counterexample),
             _plain(ev.grid), ev.theorem, None if ev.witness is None else _plain(ev.witness.to_data())]
            for ev in evidence]


def entry_data(e) -> dict[str, Any]:
    r"""The printed, recorded part of an entry (or snapshot) as JSON-safe data: id, source, statement, status, …"""
    return {
        "id": e.id, "version": e.source.version, "ref": e.source.ref, "statement": e.statement,
        "status": e.status.value, "kind": claim_kind(e),
        "correction": e.correction.statement if e.correction is not None else None,
        "note": e.note, "tags": list(e.tags), "prose": prose_reason(e),
    }


def record_to_data(record: AuditRecord) -> dict[str, Any]:
    r"""A JSON-safe dict holding everything the CLI, ``ledger.json`` and the LaTeX read from ``record``."""
    return {
        **entry_data(record.entry),
        "computed": record.computed.value if record.computed is not None else None,
        "reason": record.reason,
        "evidence": _evidence_data(record.evidence),
        "counterexample": _plain(dict(record.counterexample)) if record.counterexample is not None else None,
        "correction_evidence": _evidence_data(record.correction_evidence),
    }


def _evidence(rows: Any) -> tuple[Evidence, ...]:
    out = []
    for row in rows:
        level, holds, detail, cx, grid, theorem, witness = (*row, None, None, None, None)[:7]
        if not (holds is None or isinstance(holds, bool)) or not isinstance(detail, str) \
                or not (cx is None or isinstance(cx, Mapping)) or not (grid is None or isinstance(grid, Mapping)) \
                or not (theorem is None or isinstance(theorem, str)):
            raise LedgerError("malformed evidence in audit data")
        out.append(Evidence(Level(level), holds, detail, cx, grid, theorem, _witness(witness)))
    return tuple(out)


def _witness(data: Any) -> Witness | None:
    """The :class:`~symuat.evidence.witness.Witness` of :func:`_evidence_data`; LedgerError on malformed data."""
    if data is None:
        return None
    keys = ("field", "point", "lhs", "rhs", "checked_by")
    if not (isinstance(data, Mapping) and set(data) == set(keys) and isinstance(data["point"], Mapping)
            and all(isinstance(data[k], str) for k in keys if k != "point")
            and all(isinstance(k, str) and isinstance(v, str) for k, v in data["point"].items())):
        raise LedgerError("malformed witness in audit data")
    return Witness(data["field"], dict(data["point"]), data["lhs"], data["rhs"], data["checked_by"])


def record_from_data(data: Mapping[str, Any]) -> AuditRecord:
    r"""Rebuild the :class:`AuditRecord` of :func:`record_to_data`; LedgerError on malformed data."""
    try:
        correction = data["correction"]
        entry = EntrySnapshot(
            id=str(data["id"]), source=Source(data["version"], str(data["ref"])), statement=str(data["statement"]),
            status=Status(data["status"]), kind=str(data["kind"]),
            correction=CorrectionSnapshot(str(correction)) if correction is not None else None,
            note=str(data["note"]), tags=tuple(str(t) for t in data["tags"]), prose=str(data["prose"]),
        )
        computed = Status(data["computed"]) if data["computed"] is not None else None
        cx = data["counterexample"]
        if not (cx is None or isinstance(cx, Mapping)) or not isinstance(data["reason"], str):
            raise LedgerError("malformed record in audit data")
        return AuditRecord(entry, computed, _evidence(data["evidence"]), data["reason"], cx,
                           _evidence(data["correction_evidence"]))
    except LedgerError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise LedgerError(f"malformed record in audit data: {type(exc).__name__}: {exc}") from None
