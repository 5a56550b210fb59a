r"""Printed derivation chains as tables: expressions once, steps as data rows.

A printed chain ``E1 = E2 = … = En`` becomes one ledger entry per ``=``.  Write
each expression once, as :class:`Expr` (its LaTeX as printed and a keyword builder
of its value), list the steps as :class:`Step` rows (place, left and right
expression keys, recorded status, optional correction and note), and let a
:class:`StepTable` say how a step is checked.  Builders use the keyword form of
:mod:`symuat.evidence.declare` (``lambda W1, x: W1.T * x``); a builder may also
take parameters the table fixes, such as the chain reading ``R``
(``lambda R, W1, W2, x: chain(R, W2, W1, x)``), through :func:`bind`.

>>> import sympy
>>> from symuat import Identity, Status, dims_grid
>>> exprs = {"E1": Expr(r"(\mathbf{A}^{T})^{T}", lambda A: A.T.T), "E2": Expr(r"\mathbf{A}", lambda A: A)}
>>> table = StepTable("ext", exprs, claim=lambda lhs, rhs: Identity({"A": ("n", "n")}, lhs.build, rhs.build,
...                   dims_grid(n=(1, 2))), ref=lambda place: f"toy chain, {place}")
>>> [e.id for e in table.entries([Step("toy.step1", "E1", "E2", Status.PROVED)])]
['ext:toy.step1']
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from ..errors import LedgerError
from .entry import Claim, Correction, Entry, Status

__all__ = ["Expr", "Step", "StepTable", "bind"]


def bind(builder: Callable, **values: object) -> Callable:
    r"""Fix the parameters of ``builder`` that ``values`` names; others stay keyword parameters.

    Names ``builder`` does not take are ignored, so one table can bind the chain
    reading ``R`` for every expression, whether or not it uses it.

    >>> f = bind(lambda R, x: (R, x), R="left-TN", unused=0)
    >>> f(x=1)
    ('left-TN', 1)
    """
    wanted = {k: v for k, v in values.items() if k in inspect.signature(builder).parameters}
    return functools.partial(builder, **wanted) if wanted else builder


@dataclass(frozen=True)
class Expr:
    """One printed expression: its LaTeX as printed and a keyword builder of its value."""

    tex: str
    build: Callable

    def __post_init__(self) -> None:
        if not isinstance(self.tex, str) or not callable(self.build):
            raise LedgerError(f"Expr needs LaTeX text and a callable builder, got {self.tex!r}, {self.build!r}")


@dataclass(frozen=True)
class Step:
    r"""One ``=`` of a printed chain: ``place`` (the id after ``<version>:``), its two sides and the record.

    ``correction`` names the two expressions whose equality is the corrected step;
    ``claim`` overrides the table's claim for this step.
    """

    place: str
    lhs: str
    rhs: str
    status: Status
    correction: tuple[str, str] | None = None
    note: str = ""
    claim: Claim | None = None


@dataclass(frozen=True)
class StepTable:
    r"""How the steps of one chain become entries.

    Parameters
    ----------
    version : str
        The source key of every entry id.
    exprs : mapping of str to Expr
        The chain's expressions by key.
    claim : callable
        ``(lhs: Expr, rhs: Expr) -> Claim`` checked for a step.
    ref : callable
        ``place -> str``, where the step is printed.
    correct : callable, optional
        ``(lhs: Expr, rhs: Expr) -> Identity`` proving a step's correction.
    note : str
        Prefix of every note (LaTeX text mode).
    suffix : callable, optional
        ``Step -> str`` appended to the printed statement and its correction (e.g. a definition printed beside it).
    correction_suffix : str
        Appended to every correction only (e.g. the reading under which it holds).
    """

    version: str
    exprs: Mapping[str, Expr]
    claim: Callable
    ref: Callable[[str], str]
    correct: Callable | None = None
    note: str = ""
    suffix: Callable[[Step], str] | None = None
    correction_suffix: str = ""

    def _expr(self, key: str, place: str) -> Expr:
        try:
            return self.exprs[key]
        except KeyError:
            raise LedgerError(f"step {self.version}:{place} names expression {key!r}; the table has "
                              f"{sorted(self.exprs)}") from None

    def entry(self, step: Step) -> Entry:
        lhs, rhs = self._expr(step.lhs, step.place), self._expr(step.rhs, step.place)
        suffix = self.suffix(step) if self.suffix is not None else ""
        correction = None
        if step.correction is not None:
            if self.correct is None:
                raise LedgerError(f"step {self.version}:{step.place} has a correction but the table no `correct`")
            fl, fr = (self._expr(k, step.place) for k in step.correction)
            correction = Correction(f"{fl.tex} = {fr.tex}{suffix}{self.correction_suffix}", self.correct(fl, fr))
        claim = step.claim if step.claim is not None else self.claim(lhs, rhs)
        return Entry(f"{self.version}:{step.place}", self.ref(step.place), f"{lhs.tex} = {rhs.tex}{suffix}",
                     step.status, claim, correction=correction, note=(self.note + step.note).strip())

    def entries(self, steps: Iterable[Step]) -> list[Entry]:
        """One entry per step, in order."""
        return [self.entry(s) for s in steps]
