r"""Ledger entries: one printed statement of the paper, with its source and claim (docs/ledger-format.md).

Entry ids are ``<version>:<place>`` — version ``duat`` (seed 001), ``uat-aaai``
(seed 000) or ``uat-arxiv`` (seed 004); place ``eq<N>``, ``eq<N>.step<K>``,
``eq<N>.rule<K>``, ``fig<N>[.box<B>.row<R>]``, ``app<X>.eq<N>``, ``app<X>.lemma<N>``, ``appB.fig<N>…``,
``sec<N>…`` for prose, optionally followed by ``.reading<R>``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Union

from ..errors import LedgerError
from ..evidence.identity import Identity
from ..evidence.opaque import OpaqueIdentity
from ..evidence.verdict import Evidence

__all__ = ["Status", "Source", "Readings", "Denial", "Prose", "Correction", "Entry", "VERSIONS", "SEEDS", "EXTENSIONS"]


class Status(str, Enum):
    """The five statuses of docs/ledger-format.md."""

    PROVED = "proved"
    CHECKED = "checked"
    ERRATUM = "erratum"
    CONVENTION = "convention"
    PROSE = "prose"


#: Paper version of each seed file.
VERSIONS: Mapping[str, str] = {
    "uat-aaai": "000_2bc2c73c7532a7f2.txt",
    "duat": "001_280f2464439a611b.txt",
    "uat-arxiv": "004_8bd8de7be183899d.txt",
}
SEEDS: Mapping[str, str] = {v: k for k, v in VERSIONS.items()}
#: Sources that are not a paper version: ``ext`` holds work beyond the paper (no seed, no coverage report).
EXTENSIONS: Mapping[str, str] = {"ext": "Beyond the paper: modern LLM blocks"}

_PLACE = r"(eq\d+|app[A-Z](\.\d+)?\.(eq|lemma)\d+|(app[A-Z]\.)?fig\d+|sec\d+(\.\d+)*|def[A-Za-z]+)" \
         r"(\.(step|rule|box|row|reading|part|claim|lemma)\d+)*"
_ID = re.compile(rf"^(duat|uat-aaai|uat-arxiv):{_PLACE}$|^ext:[a-z0-9]+([.-][a-z0-9]+)*$")


@dataclass(frozen=True)
class Source:
    """Where a statement is printed: seed file, paper version, equation/figure reference."""

    version: str
    ref: str

    def __post_init__(self) -> None:
        if self.version not in VERSIONS and self.version not in EXTENSIONS:
            raise LedgerError(f"unknown source version {self.version!r}; expected one of "
                              f"{sorted(VERSIONS) + sorted(EXTENSIONS)}")

    @property
    def seed(self) -> str:
        """The seed file of a paper version; ``""`` for a source beyond the paper."""
        return VERSIONS.get(self.version, "")

    def to_json(self) -> dict[str, str]:
        return {"seed": self.seed, "version": self.version, "ref": self.ref}


@dataclass(frozen=True)
class Readings:
    r"""An ambiguous statement: one :class:`Identity` per reading of a convention.

    The computed status is ``proved`` if every reading holds, ``convention`` if
    only some do (the ledger names them), ``erratum`` if none does.
    """

    convention: str
    readings: Mapping[str, Identity]

    def __post_init__(self) -> None:
        if len(self.readings) < 2:
            raise LedgerError("Readings needs at least two readings")


@dataclass(frozen=True)
class Denial:
    r"""A printed *negative* claim: "``identity`` does not hold in general".

    The denial is ``proved`` when the symbolic level finds a counterexample to
    ``identity`` (the smallest one is reported); it is an ``erratum`` when the
    identity turns out to be ``proved`` after all.
    """

    identity: Identity


@dataclass(frozen=True)
class Prose:
    """A claim that is not an equation: why it cannot be checked, or a measured proxy."""

    reason: str
    proxy: Callable[[int], tuple[Evidence, ...]] | None = None


Claim = Union[Identity, OpaqueIdentity, Readings, Denial, Prose]


@dataclass(frozen=True)
class Correction:
    """The corrected statement of an erratum (LaTeX) and the identity that proves it."""

    statement: str
    identity: Identity | OpaqueIdentity


@dataclass(frozen=True)
class Entry:
    r"""One audited statement, transcribed *as printed*.

    ``status`` is the *recorded* status; the audit recomputes it from the claim
    and fails when they disagree.
    """

    id: str
    source: Source
    statement: str
    status: Status
    claim: Claim
    correction: Correction | None = None
    note: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not _ID.match(self.id):
            raise LedgerError(f"malformed entry id {self.id!r}; expected '<version>:<place>' "
                              f"as in docs/ledger-format.md")
        if not self.id.startswith(self.source.version + ":"):
            raise LedgerError(f"entry {self.id!r} cites version {self.source.version!r}")
        if not isinstance(self.status, Status):
            try:
                object.__setattr__(self, "status", Status(self.status))
            except ValueError:
                raise LedgerError(
                    f"entry {self.id!r}: unknown status {self.status!r}; expected one of "
                    f"{[s.value for s in Status]}"
                ) from None
        if not isinstance(self.claim, (Identity, OpaqueIdentity, Readings, Denial, Prose)):
            raise LedgerError(f"entry {self.id!r}: claim must be Identity, Readings or Prose, "
                              f"got {type(self.claim).__name__}")
        if self.status is Status.ERRATUM and self.correction is None:
            raise LedgerError(f"entry {self.id!r} is recorded as erratum but has no correction")
