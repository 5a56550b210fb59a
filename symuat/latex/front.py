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

from ..ledger.audit import AuditRecord
from ..ledger.entry import Status
from ..ledger.sources import Paper, origin, origins, papers
from .escape import escape_text

__all__ = ["RELEASE_DATE", "PaperVersion", "paper_versions", "version_name", "is_paper", "symuat_version",
           "VersionSummary", "version_summaries"]

#: Date of this release of symuat (ISO 8601); printed on the title page instead of the build date.
RELEASE_DATE = "2026-11-23"


@dataclass(frozen=True)
class PaperVersion:
    """One audited version of the paper as the title page prints it: ledger key, human name, citation (LaTeX)."""

    key: str
    name: str
    citation: str


def paper_versions() -> tuple[PaperVersion, ...]:
    """Every registered paper version, with its name and citation escaped for LaTeX.

    >>> [v.key for v in paper_versions()][:3]
    ['uat-aaai', 'duat', 'uat-arxiv']
    """
    return tuple(PaperVersion(p.key, escape_text(p.name), escape_text(p.citation)) for p in papers())


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
    """Status counts of one ledger source, statuses in :class:`~symuat.ledger.entry.Status` order."""

    key: str
    name: str
    counts: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.counts)


def version_summaries(records: Iterable[AuditRecord]) -> tuple[VersionSummary, ...]:
    """Per-source status counts in registry order (paper versions first), sources without entries left out."""
    counts: dict[str, dict[Status, int]] = {}
    for r in records:
        per = counts.setdefault(r.entry.source.version, {s: 0 for s in Status})
        per[r.entry.status] += 1
    return tuple(VersionSummary(o.key, version_name(o.key), tuple(counts[o.key][s] for s in Status))
                 for o in origins() if o.key in counts)
