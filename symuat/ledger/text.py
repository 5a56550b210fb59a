r"""Plain-text views of audit records: the ``symuat audit`` table with its legend, and ``symuat explain``.

The marks are relative to the statement *as printed*: ✓ when a level confirms it,
✗ when a level refutes it.  For a denial ("… does not hold") the evidence is about
the denied identity, so a level that refutes that identity confirms the denial
and shows ✓.  Levels are printed by name, whatever levels the evidence holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..evidence.verdict import Evidence
from .audit import AuditRecord
from .snapshot import claim_kind, record_from_data

__all__ = ["LEGEND", "evidence_marks", "table", "explain", "disagreement"]

LEGEND = "\n".join([
    "legend: ✓ the level confirms the statement as printed, ✗ it refutes it (an erratum, or a reading that",
    "        fails), ? it ran and could not decide (all-sizes outside its fragment: explain ID says why);",
    "        [name] marks one reading of an ambiguous statement; for a denial (\"… does not hold\")",
    "        ✓ means the level refutes the denied identity, i.e. confirms the denial.",
    "status: the status the audit computes (the recorded one, where they differ, under agrees);",
    "        proved = every level holds, the symbolic proof among them (\"proved (grid n ≤ 2)\": for those sizes",
    "        only, neither the all-sizes level nor a Coq theorem decides every size); checked = every level holds, no",
    "        symbolic level applies; erratum = false as printed, with a counterexample and a proved correction;",
    "        convention = holds only under some readings; prose = not an equation (a proxy may be measured);",
    "        refuted = fails, with no proved correction; no status = the levels disagree.",
    "agrees: whether the status recomputed from the claim equals the recorded one (NO: recorded … otherwise).",
])


def _reading(ev: Evidence) -> tuple[str, str]:
    """``("[name] ", rest)`` for an evidence line of one reading, ``("", detail)`` otherwise."""
    if ev.detail.startswith("[") and "] " in ev.detail:
        name, rest = ev.detail[1:].split("] ", 1)
        return f"[{name}] ", rest
    return "", ev.detail


def _mark(ev: Evidence, kind: str) -> str:
    """✓ the level confirms the statement as printed, ✗ it refutes it, ? it ran and could not decide."""
    if ev.holds is None:
        return "?"
    return "✓" if ((not ev.holds) if kind == "denial" else ev.holds) else "✗"


def _example(kind: str, holds: bool) -> AuditRecord:
    """A one-entry record for the doctests."""
    evidence = [[level, holds, "detail", None] for level in ("symbolic", "exact")]
    return record_from_data({"id": "duat:eq1", "version": "duat", "ref": "Eq. 1", "statement": "AB = BA",
                             "status": "proved", "kind": kind, "correction": None, "note": "", "tags": [], "prose": "",
                             "computed": "proved", "reason": "holds as printed", "evidence": evidence,
                             "counterexample": None, "correction_evidence": []})


def evidence_marks(record: AuditRecord) -> str:
    r"""Every level of ``record`` with its ✓/✗ mark, grouped by reading; ``-`` when there is none.

    >>> evidence_marks(_example("identity", True))
    'symbolic ✓ exact ✓'
    >>> evidence_marks(_example("denial", False))  # the denied identity fails: the denial holds
    'denial: symbolic ✓ exact ✓'
    """
    kind = claim_kind(record.entry)
    groups: dict[str, list[str]] = {}
    for ev in record.evidence:
        name, _ = _reading(ev)
        groups.setdefault(name, []).append(f"{ev.level.value} {_mark(ev, kind)}")
    if not groups:
        return "-"
    text = "; ".join(f"{name}{' '.join(marks)}" for name, marks in groups.items())
    return f"denial: {text}" if kind == "denial" else text


def _source(record: AuditRecord) -> str:
    return f"{record.entry.source.version} {record.entry.source.ref}"


def table(records: Sequence[AuditRecord]) -> str:
    r"""The audit table: computed status, id, source, agreement (with the recorded status where it differs) and
    every level's mark; a disagreement's reason below it.

    >>> print(table([_example("identity", True)]))
    status  id        source      agrees  evidence
    ------  --------  ----------  ------  --------
    proved  duat:eq1  duat Eq. 1  yes     symbolic ✓ exact ✓
    """
    header = ("status", "id", "source", "agrees", "evidence")
    rows = [(r.computed_label, r.entry.id, _source(r), "yes" if r.agrees else f"NO: recorded {r.status_label}",
             evidence_marks(r)) for r in records]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]

    def line(row) -> str:
        return "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[-1]]).rstrip()

    lines = [line(header), "  ".join("-" * w for w in [*widths, len(header[-1])])]
    for r, row in zip(records, rows):
        lines.append(line(row))
        if not r.agrees:
            lines.append(f"    ↳ recorded {r.entry.status.value}, computed {r.computed_label}: {r.reason}")
    return "\n".join(lines)


def _fmt_value(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(map(str, value)) + ")"
    return str(value)


def _counterexample(cx: Mapping[str, Any] | None) -> list[str]:
    if not cx:
        return ["  none recorded"]
    return [f"  {key}: {_fmt_value(value)}" for key, value in cx.items()]


def _evidence_lines(evidence: Iterable[Evidence], kind: str) -> list[str]:
    out = []
    for ev in evidence:
        name, detail = _reading(ev)
        out.append(f"  {name}{ev.level.value} {_mark(ev, kind)}  {detail}")
    return out or ["  none (no level applies)"]


def explain(record: AuditRecord) -> str:
    r"""One entry in full: statement as printed, each level's verdict, counterexample, correction.

    >>> print(explain(_example("identity", True)).splitlines()[3:5])
    ['statement as printed:', '  AB = BA']
    """
    e = record.entry
    kind = claim_kind(e)
    lines = [
        f"{e.id} — {e.source.name}, {e.source.ref}",
        f"recorded {e.status.value}; computed {record.computed_label}; {'agrees' if record.agrees else 'DISAGREES'}",
        f"claim: {kind}",
        "statement as printed:", f"  {e.statement}",
        f"reason: {record.reason}",
        "evidence" + (" (✓ = the level refutes the denied identity, confirming the denial)" if kind == "denial"
                      else "") + ":",
        *_evidence_lines(record.evidence, kind),
    ]
    if record.counterexample is not None or any(ev.holds is False for ev in record.evidence):
        lines += ["counterexample" + (" (to the denied identity)" if kind == "denial" else "") + ":",
                  *_counterexample(record.counterexample)]
    if e.correction is not None:
        lines += ["correction:", f"  {e.correction.statement}", "correction evidence:",
                  *_evidence_lines(record.correction_evidence, "identity")]
    if e.note:
        lines += [f"note: {e.note}"]
    return "\n".join(lines)


def disagreement(records: Iterable[AuditRecord]) -> str:
    """``symuat: 2 entries disagree with their record: …`` naming every record whose computed status disagrees with
    the recorded one, or ``""`` when none does (the commands then exit 1)."""
    ids = [r.entry.id for r in records if not r.agrees]
    if not ids:
        return ""
    what = "entry disagrees with its" if len(ids) == 1 else "entries disagree with their"
    return f"symuat: {len(ids)} {what} record: {', '.join(ids)}"
