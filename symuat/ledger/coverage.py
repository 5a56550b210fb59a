r"""Which numbered equations of each registered paper have a ledger entry.

Only papers (:class:`~symuat.ledger.sources.Paper`) have numbered equations; a
plain source such as ``ext`` gets no coverage report, and neither does a paper
none of whose entries was loaded (so auditing your own package does not list the
audited paper's equations as missing).  The built-in papers' numbering:

==================  =====================================================================
version             numbered equations
==================  =====================================================================
DUAT                Eq. 1–35 (main text and App. B–C share one numbering)
UAT, conference     Eq. 1–17 (main text); App. A Eq. 1–2; App. C Eq. 3–11 (App. B has none)
UAT, arXiv          Eq. 1–15 (App. A continues with Eq. 13–14, App. B.1 with Eq. 15)
==================  =====================================================================

The conference version (OCR) prints 17 numbered equations in its main text (the
last is the LoRA form, "(17"); its appendices share one numbering: App. A has
(1)–(2) and App. C continues with (3) (Lemma 1) to (11).

An equation counts as covered when an entry has its place as id, or as the
prefix of a step, rule, part or reading (``duat:eq22.step3`` covers ``duat:eq22``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .entry import Entry, Status
from .sources import Paper, papers

__all__ = ["numbered_equations", "Coverage", "coverage"]


def numbered_equations() -> Mapping[str, tuple[str, ...]]:
    r"""Every registered paper's numbered equations, as entry places.

    >>> len(numbered_equations()["duat"])
    35
    """
    return {p.key: p.equations for p in papers()}


@dataclass(frozen=True)
class Coverage:
    """Entries per paper and status, and the numbered equations with no entry."""

    counts: Mapping[str, Mapping[str, int]]
    missing: Mapping[str, tuple[str, ...]]
    names: Mapping[str, str]

    @property
    def complete(self) -> bool:
        return not any(self.missing.values())

    def to_text(self) -> str:
        statuses = [s.value for s in Status]
        lines = ["version    " + " ".join(f"{s:>10}" for s in statuses) + "      total"]
        for version, row in self.counts.items():
            lines.append(f"{version:<10} " + " ".join(f"{row.get(s, 0):>10}" for s in statuses)
                         + f" {sum(row.values()):>10}")
        for version, miss in self.missing.items():
            lines.append(f"numbered equations of {self.names[version]} ({version}) with no entry ({len(miss)}): "
                         + (", ".join(miss) if miss else "none"))
        return "\n".join(lines)


def _covered_places(entries: Iterable[Entry], keys: Iterable[str]) -> dict[str, set[str]]:
    places: dict[str, set[str]] = {k: set() for k in keys}
    for e in entries:
        version, place = e.id.split(":", 1)
        if version in places:
            parts = place.split(".")
            places[version].update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
    return places


def coverage(entries: Iterable[Entry]) -> Coverage:
    """Count entries per paper and status; list each paper's numbered equations without an entry."""
    entries = tuple(entries)
    cited = {e.source.version for e in entries}
    used: tuple[Paper, ...] = tuple(p for p in papers() if p.key in cited)
    counts: dict[str, Counter] = {p.key: Counter() for p in used}
    for e in entries:
        if e.source.version in counts:
            counts[e.source.version][e.status.value] += 1
    places = _covered_places(entries, counts)
    missing = {p.key: tuple(q for q in p.equations if q not in places[p.key]) for p in used}
    return Coverage({k: dict(c) for k, c in counts.items()}, missing, {p.key: p.name for p in used})
