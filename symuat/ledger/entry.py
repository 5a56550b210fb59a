r"""Ledger entries: one printed statement of the paper, with its source and claim (docs/ledger-format.md).

Entry ids are ``<version>:<place>``: the version is the key of a registered
source (:mod:`symuat.ledger.sources`: ``duat``, ``uat-aaai``, ``uat-arxiv``, ``ext``
or your own), the place follows that source's grammar (for papers ``eq<N>``,
``eq<N>.step<K>``, ``eq<N>.rule<K>``, ``fig<N>[.box<B>.row<R>]``, ``app<X>.eq<N>``,
``sec<N>…`` for prose, optionally followed by ``.reading<R>``).  See
``docs/writing-derivations.md``.
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
from .sources import Origin, origin

__all__ = ["Status", "Source", "Readings", "Denial", "Prose", "Correction", "CoqLink", "Entry"]

_THEOREM = re.compile(r"[A-Z][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_']*")


class Status(str, Enum):
    """The five statuses of an entry (docs/ledger-format.md)."""

    PROVED = "proved"
    CHECKED = "checked"
    ERRATUM = "erratum"
    CONVENTION = "convention"
    PROSE = "prose"


@dataclass(frozen=True)
class Source:
    r"""Where an entry is printed: a registered source (paper version) and a reference in it.

    Entries get theirs from the id (``Entry("duat:eq3", "Eq. 3", …).source``);
    the ledger JSON writes it as ``{"seed", "version", "ref"}``.

    >>> Source("duat", "Eq. 3").name
    'DUAT'
    """

    version: str
    ref: str

    def __post_init__(self) -> None:
        origin(self.version)

    @property
    def origin(self) -> Origin:
        """The registered :class:`~symuat.ledger.sources.Paper` or source."""
        return origin(self.version)

    @property
    def name(self) -> str:
        """The human name of the paper version or source."""
        return self.origin.name

    @property
    def seed(self) -> str:
        """The seed file of a built-in paper version (JSON compatibility only); ``""`` otherwise."""
        return self.origin.seed

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
    """The corrected statement of an erratum (LaTeX), the identity that proves it and, where one states it, the
    Coq theorem that proves it for every size (``coq``, a :class:`CoqLink` that is no negation)."""

    statement: str
    identity: Identity | OpaqueIdentity
    coq: CoqLink | None = None

    def __post_init__(self) -> None:
        if self.coq is not None and (not isinstance(self.coq, CoqLink) or self.coq.negation):
            raise LedgerError(f"a correction's coq must be a CoqLink that states it (no negation), got {self.coq!r}")


@dataclass(frozen=True)
class CoqLink:
    r"""The Coq theorem that states an entry (the ``coq`` evidence level, docs/coq.md).

    ``theorem`` is ``"<File>.<name>"`` (``coq/<File>.v``).  ``negation``: the entry is a refuted printed statement
    and the theorem states its negation (for a denial, the theorem proves the denied identity).

    >>> CoqLink("DUAT.duat_expansion").theorem
    'DUAT.duat_expansion'
    >>> CoqLink("duat_expansion")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symuat.errors.LedgerError: a Coq theorem is named ... got 'duat_expansion'
    """

    theorem: str
    negation: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.theorem, str) or not _THEOREM.fullmatch(self.theorem):
            raise LedgerError("a Coq theorem is named '<File>.<name>' (e.g. 'DUAT.duat_expansion'), "
                              f"got {self.theorem!r}")
        if not isinstance(self.negation, bool):
            raise LedgerError(f"CoqLink.negation must be a bool, got {self.negation!r}")


@dataclass(frozen=True)
class Entry:
    r"""One audited statement, transcribed *as printed*.

    The id ``<key>:<place>`` names the source (a registered paper version or
    plain source, see :mod:`symuat.ledger.sources`); ``ref`` says where in it the
    statement is printed (``"App. B.2, Eq. 22, step 3"``).  ``status`` is the
    *recorded* status; the audit recomputes it from the claim and fails when they
    disagree.  ``note`` is LaTeX text mode (formulas inside ``$…$``).

    >>> e = Entry("duat:eq1", "Eq. 1", "G(x)", Status.PROSE, Prose("an existence theorem"))
    >>> e.source, e.source.name
    (Source(version='duat', ref='Eq. 1'), 'DUAT')
    """

    id: str
    ref: str
    statement: str
    status: Status
    claim: Claim
    correction: Correction | None = None
    note: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)
    coq: CoqLink | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or ":" not in self.id:
            raise LedgerError(f"malformed entry id {self.id!r}; expected '<version>:<place>' "
                              "(see docs/writing-derivations.md)")
        version = self.id.split(":", 1)[0]
        known = origin(version)
        if not known.accepts(self.id):
            raise LedgerError(f"malformed entry id {self.id!r}; expected '<version>:<place>' with a place "
                              f"matching {known.places!r} (see docs/writing-derivations.md)")
        if isinstance(self.ref, Source):  # the older spelling Entry(id, Source(version, ref), …)
            if self.ref.version != version:
                raise LedgerError(f"entry {self.id!r} cites version {self.ref.version!r}")
            object.__setattr__(self, "ref", self.ref.ref)
        if not isinstance(self.ref, str):
            raise LedgerError(f"entry {self.id!r}: ref must be a string such as 'Eq. 3', got {self.ref!r}")
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
        if self.coq is not None and not isinstance(self.coq, CoqLink):
            raise LedgerError(f"entry {self.id!r}: coq must be a CoqLink, got {type(self.coq).__name__}")

    @property
    def source(self) -> Source:
        """The source version (from the id) and ``ref``."""
        return Source(self.id.split(":", 1)[0], self.ref)
