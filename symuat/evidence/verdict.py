r"""Verdict objects returned by every evidence level (docs/evidence.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = ["Level", "Evidence", "Verdict"]


class Level(str, Enum):
    """The three levels of evidence, strongest first."""

    SYMBOLIC = "symbolic"
    EXACT = "exact"
    FLOAT = "float"


@dataclass(frozen=True)
class Evidence:
    r"""The outcome of one check at one level.

    ``counterexample`` is set when ``holds`` is false: the smallest instance
    found, with enough data (dimensions, seed, entry, values) to replay it.
    """

    level: Level
    holds: bool
    detail: str
    counterexample: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level.value, "holds": self.holds, "detail": self.detail}


@dataclass(frozen=True)
class Verdict:
    """All the evidence gathered for one claim; ``holds`` only if every level holds."""

    evidence: tuple[Evidence, ...] = field(default_factory=tuple)

    @property
    def holds(self) -> bool:
        return bool(self.evidence) and all(e.holds for e in self.evidence)

    @property
    def consistent(self) -> bool:
        """True when all levels agree (a disagreement means a checker bug)."""
        return len({e.holds for e in self.evidence}) <= 1

    @property
    def levels(self) -> tuple[Level, ...]:
        return tuple(e.level for e in self.evidence)

    @property
    def counterexample(self) -> Mapping[str, Any] | None:
        for e in self.evidence:
            if e.counterexample is not None:
                return e.counterexample
        return None
