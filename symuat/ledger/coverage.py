r"""Which numbered equations of each paper version have a ledger entry (issue: complete the ledger).

The numbered equations of each version, read off the seeds:

==============  =====================================================================
version         numbered equations
==============  =====================================================================
``duat``        Eq. 1–35 (main text and App. B–C share one numbering)
``uat-aaai``    Eq. 1–17 (main text); App. A Eq. 1–2; App. C Eq. 3–11 (App. B has none)
``uat-arxiv``   Eq. 1–15 (App. A continues with Eq. 13–14, App. B.1 with Eq. 15)
==============  =====================================================================

Seed 000 (OCR) prints 17 numbered equations in its main text (the last is the LoRA
form, "(17"); a range "Eq. 1–18" would have no Eq. 18 to match.  Its appendices share one
numbering: App. A has (1)–(2) and App. C continues with (3) (Lemma 1) to (11).

An equation counts as covered when an entry has its place as id, or as the
prefix of a step, rule, part or reading (``duat:eq22.step3`` covers ``duat:eq22``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .entry import VERSIONS, Entry, Status

__all__ = ["NUMBERED_EQUATIONS", "Coverage", "coverage"]

#: Every numbered equation of every version, as entry places.
NUMBERED_EQUATIONS: Mapping[str, tuple[str, ...]] = {
    "duat": tuple(f"eq{n}" for n in range(1, 36)),
    "uat-aaai": (*(f"eq{n}" for n in range(1, 18)), *(f"appA.eq{n}" for n in range(1, 3)),
                 *(f"appC.eq{n}" for n in range(3, 12))),
    "uat-arxiv": tuple(f"eq{n}" for n in range(1, 16)),
}


@dataclass(frozen=True)
class Coverage:
    """Entries per version and status, and the numbered equations with no entry."""

    counts: Mapping[str, Mapping[str, int]]
    missing: Mapping[str, tuple[str, ...]]

    @property
    def complete(self) -> bool:
        return not any(self.missing.values())

    def to_text(self) -> str:
        statuses = [s.value for s in Status]
        lines = ["version    " + " ".join(f"{s:>10}" for s in statuses) + "      total"]
        for version in VERSIONS:
            row = self.counts.get(version, {})
            lines.append(f"{version:<10} " + " ".join(f"{row.get(s, 0):>10}" for s in statuses)
                         + f" {sum(row.values()):>10}")
        for version in VERSIONS:
            miss = self.missing.get(version, ())
            lines.append(f"numbered equations of {version} with no entry ({len(miss)}): "
                         + (", ".join(miss) if miss else "none"))
        return "\n".join(lines)


def _covered_places(entries: Iterable[Entry]) -> dict[str, set[str]]:
    places: dict[str, set[str]] = {v: set() for v in VERSIONS}
    for e in entries:
        version, place = e.id.split(":", 1)
        if version not in places:
            continue
        parts = place.split(".")
        for k in range(1, len(parts) + 1):
            places[version].add(".".join(parts[:k]))
    return places


def coverage(entries: Iterable[Entry]) -> Coverage:
    """Count entries per version and status; list numbered equations without an entry."""
    entries = tuple(entries)
    counts: dict[str, Counter] = {v: Counter() for v in VERSIONS}
    for e in entries:
        if e.source.version in counts:
            counts[e.source.version][e.status.value] += 1
    places = _covered_places(entries)
    missing = {v: tuple(p for p in NUMBERED_EQUATIONS[v] if p not in places[v]) for v in VERSIONS}
    return Coverage({v: dict(c) for v, c in counts.items()}, missing)
