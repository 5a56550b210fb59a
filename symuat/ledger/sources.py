r"""Where ledger entries come from: papers and other sources, in one registry.

An entry id is ``<key>:<place>``; the key names a registered :class:`Origin`,
either a :class:`Paper` (full citation, numbered equations for the coverage
report, a grammar for places such as ``eq3.step2``) or a plain source such as
``ext`` (work beyond the paper, no coverage).  The three versions of the audited
paper and ``ext`` are built in; :func:`register_source` adds your own.

>>> paper("duat").name
'DUAT'
>>> origin("ext").name
'Beyond the paper: modern LLM blocks'
>>> [p.key for p in papers()][:3]
['uat-aaai', 'duat', 'uat-arxiv']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import LedgerError

__all__ = ["Origin", "Paper", "register_source", "origin", "origins", "papers", "paper", "is_built_in",
           "PAPER_PLACES", "NAME_PLACES"]

#: Places of a paper: ``eq3``, ``eq3.step2``, ``appA.eq1``, ``fig2.box1.row3``, ``sec4.2.claim1``, ``defUATR.part3``.
PAPER_PLACES = (r"(eq\d+|app[A-Z](\.\d+)?\.(eq|lemma)\d+|(app[A-Z]\.)?fig\d+|sec\d+(\.\d+)*|def[A-Za-z]+)"
                r"(\.(step|rule|box|row|reading|part|claim|lemma)\d+)*")
#: Places of a plain source: lower-case dotted names such as ``gelu.tanh-approx``.
NAME_PLACES = r"[a-z0-9]+([.-][a-z0-9]+)*"
_KEY = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Origin:
    r"""A source of ledger entries that is not a paper: no citation, no coverage report.

    Parameters
    ----------
    key : str
        The id prefix, lower-case words joined by ``-`` (``ext``, ``my-notes``).
    name : str
        The human name shown in LaTeX and the CLI.
    places : str
        A regular expression every place (the id after ``key:``) must match in full.

    >>> Origin("notes", "My notes").accepts("notes:gelu.tanh")
    True
    """

    key: str
    name: str
    places: str = NAME_PLACES

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not _KEY.match(self.key):
            raise LedgerError(f"source key {self.key!r} is malformed; expected lower-case words joined by '-'")
        if not isinstance(self.name, str) or not self.name.strip():
            raise LedgerError(f"source {self.key!r} needs a non-empty human name, got {self.name!r}")
        try:
            re.compile(self.places)
        except (re.error, TypeError) as exc:
            raise LedgerError(f"source {self.key!r}: places {self.places!r} is not a regular expression: "
                              f"{exc}") from None

    @property
    def seed(self) -> str:
        """The seed file name kept in the ledger JSON for compatibility; ``""`` unless a built-in paper."""
        return ""

    def accepts(self, entry_id: str) -> bool:
        """Whether ``entry_id`` is ``<key>:<place>`` with a place of this source's grammar."""
        key, _, place = entry_id.partition(":")
        return key == self.key and re.fullmatch(self.places, place) is not None


@dataclass(frozen=True)
class Paper(Origin):
    r"""A paper (or one version of it): full citation and its numbered equations.

    Parameters
    ----------
    key, name, places
        As for :class:`Origin`; ``places`` defaults to :data:`PAPER_PLACES`.
    authors : tuple of str
    title, venue : str
        As printed; ``venue`` says where (and, if printed, when) it appeared.
    equations : tuple of str
        The places of its numbered equations; the coverage report lists those without an entry.

    >>> p = Paper("toy", "Toy paper", authors=("A. Author",), title="A toy", venue="Notes, 2025",
    ...           equations=("eq1", "eq2"))
    >>> p.citation
    'A. Author. A toy. Notes, 2025.'
    """

    places: str = PAPER_PLACES
    authors: tuple[str, ...] = ()
    title: str = ""
    venue: str = ""
    equations: tuple[str, ...] = ()
    seed_file: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.authors, str) or not all(isinstance(a, str) and a for a in self.authors) \
                or not self.authors:
            raise LedgerError(f"paper {self.key!r}: authors must be a non-empty tuple of names, got {self.authors!r}")
        object.__setattr__(self, "authors", tuple(self.authors))
        if not isinstance(self.title, str) or not self.title.strip():
            raise LedgerError(f"paper {self.key!r} needs a title, got {self.title!r}")
        if isinstance(self.equations, str) or not all(isinstance(e, str) for e in self.equations):
            raise LedgerError(f"paper {self.key!r}: equations must be a tuple of places, got {self.equations!r}")
        object.__setattr__(self, "equations", tuple(self.equations))
        for place in self.equations:
            if re.fullmatch(self.places, place) is None:
                raise LedgerError(f"paper {self.key!r}: equation {place!r} does not match its place grammar")

    @property
    def seed(self) -> str:
        return self.seed_file

    @property
    def citation(self) -> str:
        """Authors, title and venue as one sentence (plain text)."""
        authors = self.authors[0] if len(self.authors) == 1 else ", ".join(self.authors[:-1]) + " and " + \
            self.authors[-1]
        return f"{authors}. {self.title}. {self.venue}." if self.venue else f"{authors}. {self.title}."


_AUTHORS = ("Wei Wang", "Qing Li")
_UAT_TITLE = "Universal Approximation Theory: The basic theory for large language models"
_BUILT_IN: tuple[Origin, ...] = (
    Paper("uat-aaai", "UAT, conference version", authors=_AUTHORS, title=_UAT_TITLE,
          venue="Conference version (AAAI two-column layout, OCR text); no year printed",
          equations=(*(f"eq{n}" for n in range(1, 18)), *(f"appA.eq{n}" for n in range(1, 3)),
                     *(f"appC.eq{n}" for n in range(3, 12))),
          seed_file="000_2bc2c73c7532a7f2.txt"),
    Paper("duat", "DUAT", authors=_AUTHORS,
          title="Dynamic Universal Approximation Theory: The Basic Theory for Transformer-based Large Language "
                "Models",
          venue="The Hong Kong Polytechnic University, preprint; no venue or year printed",
          equations=tuple(f"eq{n}" for n in range(1, 36)), seed_file="001_280f2464439a611b.txt"),
    Paper("uat-arxiv", "UAT, arXiv version", authors=_AUTHORS, title=_UAT_TITLE,
          venue="arXiv (HTML version); no year printed",
          equations=tuple(f"eq{n}" for n in range(1, 16)), seed_file="004_8bd8de7be183899d.txt"),
    Origin("ext", "Beyond the paper: modern LLM blocks"),
)
_REGISTRY: dict[str, Origin] = {o.key: o for o in _BUILT_IN}


def is_built_in(key: str) -> bool:
    """Whether ``key`` is one of the sources symuat ships (the audited paper's versions and ``ext``).

    >>> is_built_in("duat"), is_built_in("toy")
    (True, False)
    """
    return any(o.key == key for o in _BUILT_IN)


def register_source(source: Origin) -> Origin:
    r"""Register a :class:`Paper` or plain :class:`Origin` so that entry ids may start with its key.

    Registering the same object twice is harmless (a derivation package may be imported
    more than once); a different source under a taken key is a :class:`~symuat.errors.LedgerError`.

    >>> register_source(Origin("doctest-notes", "Doctest notes")).key
    'doctest-notes'
    >>> register_source(Origin("duat", "Impostor"))
    Traceback (most recent call last):
    ...
    symuat.errors.LedgerError: source key 'duat' is already registered as 'DUAT'
    """
    if not isinstance(source, Origin):
        raise LedgerError(f"register_source expects a Paper or Origin, got {type(source).__name__}")
    known = _REGISTRY.get(source.key)
    if known is not None and known != source:
        raise LedgerError(f"source key {source.key!r} is already registered as {known.name!r}")
    _REGISTRY[source.key] = source
    return source


def origin(key: str) -> Origin:
    """The registered source ``key``; :class:`~symuat.errors.LedgerError` names the known keys otherwise."""
    try:
        return _REGISTRY[key]
    except (KeyError, TypeError):
        raise LedgerError(f"unknown source version {key!r}; expected one of {sorted(_REGISTRY)} "
                          "(register your own with symuat.register_source)") from None


def origins() -> tuple[Origin, ...]:
    """Every registered source, built-in ones first, then in order of registration."""
    return tuple(_REGISTRY.values())


def papers() -> tuple[Paper, ...]:
    """Every registered :class:`Paper`: the audited paper's three versions first."""
    return tuple(o for o in _REGISTRY.values() if isinstance(o, Paper))


def paper(key: str) -> Paper:
    """The registered paper ``key`` (its ``name`` and ``citation`` are what reports print)."""
    found = origin(key)
    if not isinstance(found, Paper):
        raise LedgerError(f"source {key!r} ({found.name}) is not a paper")
    return found
