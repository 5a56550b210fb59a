r"""Front matter of the appendices: the audited paper versions, symuat's version and date, the summary.

Names and citations come from the source registry (:mod:`symuat.ledger.sources`).
Nothing here reads the clock: the date is :data:`RELEASE_DATE`, the date of this
release of symuat (bumped together with the package version), so that the
generated document is byte-identical on every run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata

from ..ledger.audit import COMPUTED_EXTRA, AuditRecord
from ..ledger.entry import Status
from ..ledger.sources import Paper, is_built_in, origin, origins, papers
from .escape import escape_text

__all__ = ["RELEASE_DATE", "PaperVersion", "paper_versions", "version_name", "is_paper", "symuat_version",
           "VersionSummary", "version_summaries", "summary_columns", "is_own_paper", "AuditedPaper",
           "audited_papers", "errata_records"]

#: Date of this release of symuat (ISO 8601); printed on the title page instead of the build date.
RELEASE_DATE = "2026-11-23"


@dataclass(frozen=True)
class PaperVersion:
    """One audited version of the paper as the title page prints it: ledger key, human name, citation (LaTeX)."""

    key: str
    name: str
    citation: str


def paper_versions(keys: Iterable[str] | None = None) -> tuple[PaperVersion, ...]:
    """Every registered paper version (or those of ``keys``), with its name and citation escaped for LaTeX.

    >>> [v.key for v in paper_versions()][:3]
    ['uat-aaai', 'duat', 'uat-arxiv']
    """
    wanted = None if keys is None else set(keys)
    return tuple(PaperVersion(p.key, escape_text(p.name), escape_text(p.citation)) for p in papers()
                 if wanted is None or p.key in wanted)


def is_own_paper(records: Iterable[AuditRecord]) -> bool:
    """Whether ``records`` are a paper of the user's (``--derivations DIR``): some entries, none from a source
    symuat ships.  The document is then that paper's appendix, without the DUAT appendices and figures."""
    keys = {r.entry.source.version for r in records}
    return bool(keys) and not any(is_built_in(k) for k in keys)


@dataclass(frozen=True)
class AuditedPaper:
    """A paper of the user's as its title page prints it (LaTeX, escaped): title, authors, venue, key."""

    key: str
    title: str
    authors: str
    venue: str


def audited_papers(records: Iterable[AuditRecord]) -> tuple[AuditedPaper, ...]:
    """The registered papers that have entries among ``records``, in registry order, escaped for LaTeX."""
    keys = {r.entry.source.version for r in records}
    out = []
    for p in papers():
        if p.key in keys:
            authors = p.authors[0] if len(p.authors) == 1 else ", ".join(p.authors[:-1]) + " and " + p.authors[-1]
            out.append(AuditedPaper(p.key, escape_text(p.title), escape_text(authors), escape_text(p.venue)))
    return tuple(out)


def errata_records(records: Iterable[AuditRecord]) -> tuple[AuditRecord, ...]:
    """Every entry the errata section prints: recorded or computed an erratum, or refuted (false as printed with
    no proved correction), or without a status but with a counterexample; in ledger order."""
    return tuple(r for r in records if Status.ERRATUM in (r.entry.status, r.computed)
                 or r.computed_status == "refuted" or (r.computed is None and r.counterexample is not None))


def version_name(key: str) -> str:
    """Human name of a ledger source, escaped for LaTeX (``"duat"`` → ``"DUAT"``).

    >>> version_name("uat-arxiv")
    'UAT, arXiv version'
    """
    return escape_text(origin(key).name)


def is_paper(key: str) -> bool:
    """Whether the source ``key`` is a version of a paper (``ext`` is not).

    >>> is_paper("duat"), is_paper("ext")
    (True, False)
    """
    return isinstance(origin(key), Paper)


def symuat_version() -> str:
    """The installed symuat version (``"unknown"`` when run from a source tree that is not installed)."""
    try:
        return metadata.version("symuat")
    except metadata.PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True)
class VersionSummary:
    """*Computed* status counts of one ledger source, in the order of :func:`summary_columns`, and how many
    entries have the recorded status the audit computes."""

    key: str
    name: str
    counts: tuple[int, ...]
    agree: int = 0

    @property
    def total(self) -> int:
        return sum(self.counts)


def summary_columns(records: Iterable[AuditRecord]) -> tuple[str, ...]:
    """The columns of the summary table: the five statuses, then ``refuted`` and ``no status`` where any entry
    has them."""
    seen = {r.computed_status or "no status" for r in records}
    return (*(s.value for s in Status), *(k for k in COMPUTED_EXTRA if k in seen))


def version_summaries(records: Iterable[AuditRecord]) -> tuple[VersionSummary, ...]:
    """Per-source computed status counts in registry order (paper versions first), sources without entries left
    out."""
    records = tuple(records)
    columns = summary_columns(records)
    counts: dict[str, dict[str, int]] = {}
    agree: dict[str, int] = {}
    for r in records:
        key = r.entry.source.version
        per = counts.setdefault(key, dict.fromkeys(columns, 0))
        per[r.computed_status or "no status"] += 1
        agree[key] = agree.get(key, 0) + r.agrees
    return tuple(VersionSummary(o.key, version_name(o.key), tuple(counts[o.key].values()), agree[o.key])
                 for o in origins() if o.key in counts)
