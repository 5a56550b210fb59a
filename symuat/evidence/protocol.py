r"""The protocol every kind of claim implements, so that one pipeline checks them all.

A *claim* (:class:`~symuat.evidence.identity.Identity` for explicit matrices,
:class:`~symuat.evidence.opaque.OpaqueIdentity` for noncommutative expressions) says
where it is checked and how to build its two sides at a point; an *instance* (the
sides at one point) says how to evaluate them in a field.  The evidence levels
(:mod:`symuat.evidence.pipeline`) only talk to these two protocols — one recipe,
several backends.

:class:`InstanceCache` is the public cache hook: pass one to
:func:`~symuat.evidence.pipeline.check_identity` to build each claim's sides once per
point across many runs (e.g. a sweep over seeds).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import sympy

from .verdict import Level

__all__ = ["Claim", "Instance", "SymbolicFailure", "InstanceCache", "LazyData"]


class LazyData(Mapping):
    r"""Counterexample data computed on first read (printing both sides in LaTeX costs more than the check).

    ``eager`` holds the entries known up front (e.g. the dimensions): reading one of them
    computes nothing.

    >>> calls = []
    >>> data = LazyData(lambda: calls.append(1) or {"lhs": "a"}, eager={"dims": {"N": 2}})
    >>> data["dims"], len(calls)
    ({'N': 2}, 0)
    >>> dict(data), dict(data), len(calls)
    ({'dims': {'N': 2}, 'lhs': 'a'}, {'dims': {'N': 2}, 'lhs': 'a'}, 1)
    """

    __slots__ = ("_make", "_eager", "_data")

    def __init__(self, make: Callable[[], Mapping[str, Any]], eager: Mapping[str, Any] | None = None):
        self._make, self._eager, self._data = make, dict(eager or {}), None

    def _resolved(self) -> Mapping[str, Any]:
        if self._data is None:
            self._data, self._make = {**self._eager, **self._make()}, None
        return self._data

    @property
    def eager(self) -> Mapping[str, Any]:
        """The entries known without computing anything."""
        return dict(self._eager)

    def __getitem__(self, key: str) -> Any:
        if self._data is None and key in self._eager:
            return self._eager[key]
        return self._resolved()[key]

    def __iter__(self):
        return iter(self._resolved())

    def __len__(self) -> int:
        return len(self._resolved())

    def __bool__(self) -> bool:
        return bool(self._eager) or bool(self._resolved())

    def __repr__(self) -> str:
        return repr(self._resolved())


@dataclass(frozen=True)
class SymbolicFailure:
    """Where ``lhs - rhs`` did not reduce to 0: a message, the data to replay it (read lazily), the witness."""

    detail: str
    data: Mapping[str, Any]
    #: The checked point where the sides differ (a :class:`~symuat.evidence.witness.Witness`); ``None`` when
    #: ``undecided``.
    witness: Any = None
    #: No canonical form reduced the difference to 0 and no witness was found: the level cannot decide.
    undecided: bool = False


@runtime_checkable
class Instance(Protocol):
    r"""Both sides of a claim at one point (a dimension tuple or a case)."""

    #: The point, for counterexamples: ``{"dims": {...}}`` or ``{"case": ...}``.
    point: Mapping[str, Any]
    #: The point in words, e.g. ``"N=2, M=3"`` or ``"case 2, 3x3 matrices"``.
    where: str
    #: Columns of a side (to name entries ``(row, col)``).
    ncols: int

    def symbolic_failure(self) -> SymbolicFailure | None:
        """``None`` if ``expand(lhs - rhs) == 0`` (σ uninterpreted), else the first difference."""

    #: The degree bound in words, for the exact level's report.
    degree_note: str

    def survival_per_trial(self, p: int) -> float:
        r"""Bound on the probability that a false identity agrees at one random point of :math:`\mathbb F_p`."""

    def bind(self, fld, rng: np.random.Generator) -> dict[sympy.Symbol, Any]:
        """A random value in ``fld`` for every input symbol."""

    def side(self, name: str, values: Mapping, fld, memo: dict) -> np.ndarray:
        """Side ``"lhs"`` or ``"rhs"`` evaluated in ``fld``, flattened row-major (``memo`` shares sub-expressions)."""

    def reference(self, values: Mapping) -> np.ndarray | None:
        """The claim's independent NumPy reference at ``values`` (``None`` if it has none)."""

    def magnitudes(self, values: Mapping) -> np.ndarray:
        """Per-entry magnitude bound (every input and constant replaced by its absolute value)."""

    def input_count(self) -> int:
        """Number of scalar inputs, for the float tolerance's operation count."""


@runtime_checkable
class Claim(Protocol):
    """A statement ``lhs == rhs`` checked at several points."""

    levels: tuple[Level, ...]
    scope: str

    @property
    def symbolic_points(self) -> Sequence[Hashable]:
        """Points of the symbolic level, smallest first."""

    @property
    def check_point(self) -> Hashable:
        """Where the randomized levels look."""

    def instantiate(self, point) -> Instance:
        """Build both sides at ``point`` (raises :class:`~symuat.errors.ShapeError` if they do not fit)."""

    def symbolic_statement(self) -> str:
        """What the symbolic level proved when every point passed."""


def _point_key(point) -> Hashable:
    return tuple(sorted(point.items())) if isinstance(point, Mapping) else repr(point)


@dataclass
class InstanceCache:
    """Instances built once per ``(claim, point)``; ``hits``/``misses`` count the look-ups.

    >>> cache = InstanceCache()
    >>> cache.get("claim", {"N": 2}, lambda: "built"), cache.get("claim", {"N": 2}, lambda: "again")
    ('built', 'built')
    >>> cache.hits, cache.misses
    (1, 1)
    """

    hits: int = 0
    misses: int = 0
    _store: dict = field(default_factory=dict, repr=False)

    def get(self, claim, point, build: Callable[[], Instance]) -> Instance:
        key = (id(claim), _point_key(point))
        held = self._store.get(key)
        if held is not None and held[0] is claim:
            self.hits += 1
            return held[1]
        self.misses += 1
        built = build()
        self._store[key] = (claim, built)  # the claim is kept alive, so its id cannot be reused
        return built
