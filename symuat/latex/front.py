r"""Front matter of the appendices: the audited paper versions, symuat's version and date, the summary.

Nothing here reads the clock: the date is :data:`RELEASE_DATE`, the date of this
release of symuat (bumped together with the package version), so that the
generated document is byte-identical on every run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata

from ..ledger.audit import AuditRecord
from ..ledger.entry import EXTENSIONS, VERSIONS, Status

__all__ = ["RELEASE_DATE", "PaperVersion", "paper_versions", "version_name", "symuat_version", "VersionSummary",
           "version_summaries"]

#: Date of this release of symuat (ISO 8601); printed on the title page instead of the build date.
RELEASE_DATE = "2026-11-23"


@dataclass(frozen=True)
class PaperVersion:
    """One audited version of the paper: ledger key, human name, short name and full citation (LaTeX)."""

    key: str
    name: str
    short: str
    citation: str


_AUTHORS = "Wei Wang and Qing Li"
_PAPER_VERSIONS: tuple[PaperVersion, ...] = (
    PaperVersion("duat", "DUAT version", "DUAT",
                 _AUTHORS + r". \emph{Dynamic Universal Approximation Theory: The Basic Theory for "
                 r"Transformer-based Large Language Models}. Preprint, 2024 (the newest version; "
                 r"primary reference of this audit)."),
    PaperVersion("uat-aaai", "UAT conference version", "UAT (conf.)",
                 _AUTHORS + r". \emph{Universal Approximation Theory: The Basic Theory for Large Language "
                 r"Models}. Conference version (two-column layout), 2024."),
    PaperVersion("uat-arxiv", "UAT arXiv version", "UAT (arXiv)",
                 _AUTHORS + r". \emph{Universal Approximation Theory: The Basic Theory for Large Language "
                 r"Models}. arXiv preprint (HTML version), 2024."),
)
_BEYOND = PaperVersion("ext", "beyond the paper", "beyond",
                       "Work beyond the paper: modern LLM blocks, checked by symuat.")


def paper_versions() -> tuple[PaperVersion, ...]:
    """The audited paper versions, newest first (every ledger version except ``ext``).

    >>> [v.key for v in paper_versions()]
    ['duat', 'uat-aaai', 'uat-arxiv']
    """
    return tuple(v for v in _PAPER_VERSIONS if v.key in VERSIONS)


def version_name(key: str, short: bool = False) -> str:
    """Human name of a ledger version (``"duat"`` → ``"DUAT version"``); unknown keys are returned unchanged.

    >>> version_name("uat-arxiv"), version_name("ext", short=True)
    ('UAT arXiv version', 'beyond')
    """
    for v in (*_PAPER_VERSIONS, _BEYOND):
        if v.key == key:
            return v.short if short else v.name
    return key


def symuat_version() -> str:
    """The installed symuat version (``"unknown"`` when run from a source tree that is not installed)."""
    try:
        return metadata.version("symuat")
    except metadata.PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True)
class VersionSummary:
    """Status counts of one ledger version, statuses in :class:`~symuat.ledger.entry.Status` order."""

    key: str
    name: str
    counts: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.counts)


def version_summaries(records: Iterable[AuditRecord]) -> tuple[VersionSummary, ...]:
    """Per-version status counts, paper versions first, then ``ext`` if it has entries."""
    counts: dict[str, dict[Status, int]] = {}
    for r in records:
        per = counts.setdefault(r.entry.source.version, {s: 0 for s in Status})
        per[r.entry.status] += 1
    order = [v.key for v in paper_versions()] + sorted(EXTENSIONS)
    return tuple(VersionSummary(k, version_name(k, short=True), tuple(counts[k][s] for s in Status))
                 for k in order if k in counts)


def status_names() -> Mapping[str, str]:
    """Column heads of the status counts."""
    return {s.value: s.value for s in Status}
