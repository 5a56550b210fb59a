r"""Verdict objects returned by every evidence level (docs/evidence.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = ["Level", "Evidence", "Verdict"]


class Level(str, Enum):
    """The levels of evidence (``all-sizes``: decided for every size, not only a grid; ``coq``: a named Coq
    theorem, compiled, with no axiom)."""

    ALL_SIZES = "all-sizes"
    SYMBOLIC = "symbolic"
    EXACT = "exact"
    FLOAT = "float"
    COQ = "coq"


@dataclass(frozen=True)
class Evidence:
    r"""The outcome of one check at one level.

    ``holds`` is ``True`` or ``False``, or ``None`` when the level ran but could not decide (``detail`` then
    starts with ``undecided:`` and gives the reason); an undecided level counts neither for nor against.
    ``counterexample`` is set when ``holds`` is false: the smallest instance
    found, with enough data (dimensions, seed, entry, values) to replay it.
    ``grid`` (undecided ``all-sizes`` evidence) is the largest value of each dimension that the grid-bound
    levels covered: a claim proved there is proved on that grid only.
    ``theorem`` (``coq`` evidence) names the Coq theorem, ``"<File>.<name>"``.
    ``witness`` (a refutation at the symbolic, exact or float level) is the checked point where the sides
    differ, a :class:`~symuat.evidence.witness.Witness`; every ``holds is False`` of those levels has one.
    """

    level: Level
    holds: bool | None
    detail: str
    counterexample: Mapping[str, Any] | None = None
    grid: Mapping[str, int] | None = None
    theorem: str | None = None
    witness: Any = None

    @property
    def decided(self) -> bool:
        return self.holds is not None

    def to_json(self) -> dict[str, Any]:
        out = {"level": self.level.value, "holds": self.holds, "detail": self.detail}
        if self.grid is not None:
            out["grid"] = dict(self.grid)
        if self.theorem is not None:
            out["theorem"] = self.theorem
        if self.witness is not None:  # a refutation's checked point and who re-checked it
            out["witness"] = self.witness.to_data()
        return out


@dataclass(frozen=True)
class Verdict:
    """All the evidence gathered for one claim; ``holds`` only if every level holds."""

    evidence: tuple[Evidence, ...] = field(default_factory=tuple)

    @property
    def decided(self) -> tuple[Evidence, ...]:
        """The evidence of the levels that decided (undecided ones count neither way)."""
        return tuple(e for e in self.evidence if e.holds is not None)

    @property
    def holds(self) -> bool:
        return bool(self.decided) and all(e.holds for e in self.decided)

    @property
    def consistent(self) -> bool:
        """True when all deciding levels agree."""
        return len({e.holds for e in self.decided}) <= 1

    @property
    def levels(self) -> tuple[Level, ...]:
        return tuple(e.level for e in self.evidence)

    @property
    def counterexample(self) -> Mapping[str, Any] | None:
        for e in self.evidence:
            if e.counterexample is not None:
                return e.counterexample
        return None
