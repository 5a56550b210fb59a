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
prefix of a step, rule, part or reading (``duat:eq22.step3`` covers ``duat:eq22``),
or when an entry's printed reference names it: an entry ``eq18`` printed at
"Eq. 16, 18" (one display holding two numbered equations) covers ``eq16`` too
(:func:`cited_equations`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .entry import Entry, Status
from .sources import Paper, origins, papers

__all__ = ["numbered_equations", "cited_equations", "Coverage", "coverage"]

#: "Eq. 16", "Eqs. 16, 18", "Eq. (16)–(18)", "Equations 3 and 4", optionally after "App. B" / "Appendix C".
_CITED = re.compile(r"(?:\b(?:App\.|Appendix)\s*(?P<app>[A-Z])\b[^;]*?)?\b(?:Eqs?\.|Equations?)\s*"
                    r"(?P<nums>\(?\d+\)?(?:\s*(?:,|and|&|--|–|-)\s*\(?\d+\)?)*)")
_RANGE = re.compile(r"\(?(\d+)\)?\s*(?:--|–|-)\s*\(?(\d+)\)?")
_LONGEST_RANGE = 50


def cited_equations(ref: str) -> tuple[tuple[str | None, int], ...]:
    r"""The numbered equations a printed reference names, as ``(appendix letter or None, number)``.

    >>> cited_equations("Eq. 16, 18")
    ((None, 16), (None, 18))
    >>> cited_equations("App. B.2, Eqs. (3)–(5)")
    (('B', 3), ('B', 4), ('B', 5))
    >>> cited_equations("§3.2, text before Figure 5")
    ()
    """
    found: list[tuple[str | None, int]] = []
    for m in _CITED.finditer(ref):
        app, nums = m.group("app"), m.group("nums")
        for part in re.split(r"\s*(?:,|and|&)\s*", nums):
            span = _RANGE.fullmatch(part.strip())
            if span and 0 <= int(span.group(2)) - int(span.group(1)) <= _LONGEST_RANGE:
                found.extend((app, n) for n in range(int(span.group(1)), int(span.group(2)) + 1))
            elif part.strip("() "):
                found.extend((app, int(n)) for n in re.findall(r"\d+", part))
    return tuple(dict.fromkeys(found))


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
    #: Entries per status of the sources that are not papers (``ext``): counted, no numbered equations.
    others: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not any(self.missing.values())

    def to_text(self) -> str:
        statuses = [s.value for s in Status]
        rows = {**self.counts, **self.others}
        width = max([10, *(len(v) for v in rows)])
        lines = [f"{'version':<{width}} " + " ".join(f"{s:>10}" for s in statuses) + "      total"]
        for version, row in rows.items():
            lines.append(f"{version:<{width}} " + " ".join(f"{row.get(s, 0):>10}" for s in statuses)
                         + f" {sum(row.values()):>10}")
        if len(rows) > 1:
            lines.append(f"{'all':<{width}} " + " ".join(f"{sum(r.get(s, 0) for r in rows.values()):>10}"
                                                      for s in statuses)
                         + f" {sum(sum(r.values()) for r in rows.values()):>10}")
        for version, miss in self.missing.items():
            lines.append(f"numbered equations of {self.names[version]} ({version}) with no entry ({len(miss)}): "
                         + (", ".join(miss) if miss else "none"))
        return "\n".join(lines)


def _covered_places(entries: Iterable[Entry], used: Iterable[Paper]) -> dict[str, set[str]]:
    numbered = {p.key: set(p.equations) for p in used}
    places: dict[str, set[str]] = {k: set() for k in numbered}
    for e in entries:
        version, place = e.id.split(":", 1)
        if version in places:
            parts = place.split(".")
            places[version].update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
            for app, n in cited_equations(e.source.ref):
                in_app = f"app{app}.eq{n}" if app else None
                places[version].add(in_app if in_app in numbered[version] else f"eq{n}")
    return places


def coverage(entries: Iterable[Entry]) -> Coverage:
    """Count entries per paper and status; list each paper's numbered equations without an entry."""
    entries = tuple(entries)
    cited = {e.source.version for e in entries}
    used: tuple[Paper, ...] = tuple(p for p in papers() if p.key in cited)
    counts: dict[str, Counter] = {p.key: Counter() for p in used}
    others: dict[str, Counter] = {o.key: Counter() for o in origins() if o.key in cited and o.key not in counts}
    for e in entries:
        (counts if e.source.version in counts else others)[e.source.version][e.status.value] += 1
    places = _covered_places(entries, used)
    missing = {p.key: tuple(q for q in p.equations if q not in places[p.key]) for p in used}
    return Coverage({k: dict(c) for k, c in counts.items()}, missing, {p.key: p.name for p in used},
                    {k: dict(c) for k, c in others.items()})
