r"""What each page of the HTML ledger shows, as plain values for the templates (no HTML is built here
except formulas, which arrive as MathML from :mod:`.mathml`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from ..evidence.verdict import Evidence, Level
from ..ledger.audit import COMPUTED_EXTRA, AuditRecord
from ..ledger.entry import Status
from ..ledger.snapshot import claim_kind, prose_reason
from ..ledger.sources import origin, origins
from .graph import Dependencies
from .mathml import math, text

__all__ = ["LevelCell", "EntryView", "VersionView", "levels_of", "entry_view", "version_views", "page_name",
           "anchor"]

#: Keys of a counterexample that hold LaTeX math (both sides and their difference).
_MATH_KEYS = (("lhs", "left-hand side"), ("rhs", "right-hand side"), ("difference", "difference (left − right)"))


def page_name(version: str) -> str:
    """The file of a source's page: ``duat`` → ``duat.html``."""
    return f"{version}.html"


def anchor(entry_id: str) -> str:
    """The HTML id of an entry's section (``duat:eq13.step2`` → ``duat-eq13.step2``).

    >>> anchor("uat-aaai:appB.fig1")
    'uat-aaai-appB.fig1'
    """
    return entry_id.replace(":", "-")


def href(entry_id: str) -> str:
    """A link to an entry from any page of the site."""
    return f"{page_name(entry_id.split(':', 1)[0])}#{anchor(entry_id)}"


@dataclass(frozen=True)
class LevelCell:
    """One evidence level of one entry: ``mark`` is ``all``, ``none``, ``some`` or ``n/a`` (of the checks that
    confirm the statement), or ``undecided`` (the level ran and could not decide); the checks as
    ``(confirms, detail)``, ``confirms`` ``None`` when undecided."""

    level: str
    mark: str
    checks: tuple[tuple[bool | None, str], ...]


@dataclass(frozen=True)
class EntryView:
    """Everything the page shows of one entry."""

    id: str
    anchor: str
    ref: str
    status: str
    computed: str
    agrees: bool
    denial: bool
    statement: Markup
    note: Markup
    reason: Markup
    cells: tuple[LevelCell, ...]
    counterexample: tuple[tuple[str, Markup], ...]
    correction: Markup | None
    correction_cells: tuple[LevelCell, ...]
    parent: tuple[str, str] | None
    children: tuple[tuple[str, str], ...]
    uses: tuple[tuple[str, str], ...]
    used_by: tuple[tuple[str, str], ...]
    grid: str = ""  # "N ≤ 2, M ≤ 3" when the statement is proved on that grid only (all-sizes undecided)
    verdict: str = ""  # the computed status as a word: a status, "refuted" or "no status" (the badge's class)

    @property
    def badge(self) -> str:
        """The CSS class of the computed status's badge (``no status`` → ``none``)."""
        return self.verdict.replace(" ", "-") if self.verdict else self.status


@dataclass(frozen=True)
class VersionView:
    """One source (paper version): key, name, citation, recorded status counts (statuses in order), its entries."""

    key: str
    name: str
    citation: str
    page: str
    counts: tuple[int, ...]
    entries: tuple[EntryView, ...]

    @property
    def total(self) -> int:
        return sum(self.counts)

    @property
    def computed(self) -> dict[str, int]:
        """Entries per *computed* status: the five statuses, ``refuted`` and ``no status`` (zeros included)."""
        names = (*(st.value for st in Status), *COMPUTED_EXTRA)
        return {k: sum(1 for e in self.entries if e.verdict == k) for k in names}

    @property
    def computed_counts(self) -> tuple[tuple[str, int], ...]:
        """The computed statuses this source has, with their counts (none left at zero)."""
        return tuple((k, n) for k, n in self.computed.items() if n)

    @property
    def disagreeing(self) -> int:
        """How many entries have a recorded status the audit does not compute."""
        return sum(1 for e in self.entries if not e.agrees)


def levels_of(records: Iterable[AuditRecord]) -> tuple[Level, ...]:
    """The evidence levels the records carry, in :class:`~symuat.evidence.verdict.Level` order (strongest first)."""
    seen = {ev.level for r in records for ev in (*r.evidence, *r.correction_evidence)}
    return tuple(level for level in Level if level in seen)


def _cells(evidence: tuple[Evidence, ...], levels: tuple[Level, ...], denial: bool = False) -> tuple[LevelCell, ...]:
    """Marks per level; for a denial the evidence is about the denied identity, so a check that refutes it
    confirms the statement (as in ``symuat audit``)."""
    cells = []
    for level in levels:
        checks = tuple((None if ev.holds is None else ev.holds != denial, ev.detail)
                       for ev in evidence if ev.level is level)
        held = [h for h, _ in checks if h is not None]  # an undecided check counts neither way
        mark = ("undecided" if checks else "n/a") if not held else \
            "all" if all(held) else "none" if not any(held) else "some"
        cells.append(LevelCell(level.value, mark, checks))
    return tuple(cells)


def _counterexample(cx: Mapping[str, Any] | None) -> tuple[tuple[str, Markup], ...]:
    if not cx:
        return ()
    rows: list[tuple[str, Markup]] = []
    for key, value in cx.items():
        if key in dict(_MATH_KEYS):
            continue
        rows.append((str(key), text(str(value)) if key == "proof" else Markup("<code>{}</code>").format(value)))
    for key, label in _MATH_KEYS:
        if key in cx:
            rows.append((label, math(str(cx[key]), display=True)))
    return tuple(rows)


def _link(entry_id: str) -> tuple[str, str]:
    return entry_id, href(entry_id)


def entry_view(record: AuditRecord, levels: tuple[Level, ...], deps: Dependencies,
               ids: frozenset[str] = frozenset()) -> EntryView:
    """The view of one audited entry (its record as :func:`~symuat.ledger.stable.stable_records` left it).

    ``ids``: every entry of the site; a group that is no entry (a chain printed without an entry of its own) is
    not named as the entry's parent (its siblings are listed on the group's other entries).
    """
    e = record.entry
    parent = deps.parent.get(e.id)
    denial = claim_kind(e) == "denial"
    return EntryView(
        id=e.id, anchor=anchor(e.id), ref=e.source.ref, status=e.status.value,
        computed=record.computed_label, agrees=record.agrees,
        denial=denial,
        statement=math(e.statement, display=True), note=text(e.note),
        reason=text(prose_reason(e) or record.reason), cells=_cells(record.evidence, levels, denial),
        counterexample=_counterexample(record.counterexample),
        correction=math(e.correction.statement, display=True) if e.correction is not None else None,
        correction_cells=_cells(record.correction_evidence, levels) if record.correction_evidence else (),
        parent=(parent, href(parent)) if parent in ids else None,  # a group that is no entry is not named
        children=tuple(_link(c) for c in deps.children.get(e.id, ()) if c in ids),
        uses=tuple(_link(u) for u in deps.uses.get(e.id, ())),
        used_by=tuple(_link(u) for u in deps.used_by.get(e.id, ())),
        grid=", ".join(f"{k} ≤ {v}" for k, v in record.grid.items()) if record.grid else "",  # computed proved only
        verdict=record.computed_status or "no status",
    )


def version_views(records: tuple[AuditRecord, ...], deps: Dependencies) -> tuple[VersionView, ...]:
    """One view per source with entries, in registry order (paper versions first), entries in ledger order."""
    levels = levels_of(records)
    ids = frozenset(r.entry.id for r in records)
    views = []
    for o in origins():
        mine = [r for r in records if r.entry.source.version == o.key]
        if not mine:
            continue
        counts = tuple(sum(1 for r in mine if r.entry.status is s) for s in Status)
        views.append(VersionView(o.key, o.name, getattr(origin(o.key), "citation", ""), page_name(o.key), counts,
                                 tuple(entry_view(r, levels, deps, ids) for r in mine)))
    return tuple(views)
