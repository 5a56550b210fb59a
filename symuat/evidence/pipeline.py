r"""One evidence pipeline: run the applicable levels of any claim and collect a verdict.

>>> import sympy
>>> from symuat.evidence.identity import Identity
>>> claim = Identity({"A": ("N", "N")}, lambda A: A + A, lambda A: 2 * A, ({"N": 2},))
>>> [(ev.level.value, ev.holds) for ev in check_identity(claim).evidence]
[('symbolic', True), ('exact', True), ('float', True)]
"""

from __future__ import annotations

from collections.abc import Sequence

from . import float_level as _float_level  # noqa: F401  (registers the float level)
from .levels import RUNNERS, Run
from .protocol import Claim, InstanceCache
from .verdict import Level, Verdict

__all__ = ["check_identity"]


def check_identity(claim: Claim, seed: int = 0, trials: int = 2, levels: Sequence[Level] | None = None,
                   cache: InstanceCache | None = None) -> Verdict:
    """Run every applicable level of ``claim`` (an ``Identity`` or an ``OpaqueIdentity``).

    ``levels`` restricts the run to those of the claim's levels; ``cache`` (an
    :class:`~symuat.evidence.protocol.InstanceCache`) lets many runs share the built sides.
    """
    chosen = tuple(claim.levels if levels is None else (lv for lv in claim.levels if lv in levels))
    run = Run(seed, trials, InstanceCache() if cache is None else cache)
    return Verdict(tuple(RUNNERS[lv](claim, run) for lv in chosen))
