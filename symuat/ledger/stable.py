r"""Machine-independent audit data for generated files (``latex/ledger.json`` and the appendices).

A float check measures rounding errors whose digits depend on the BLAS, the CPU
and the summation order (2.9e-17 on one machine, 3.6e-17 on another), so a file
that prints them changes from machine to machine.  Before records are written,
every measured number in an evidence detail or a counterexample is replaced by a
bound that holds on any machine:

* a measured value below ``1e-9`` (rounding level, zero included) becomes
  ``<=T`` when the detail states a numeric tolerance ``T`` it satisfies, else ``<1e-9``;
* ``by X > tolerance T`` (a failed float check) becomes ``by more than tolerance T``;
* a float in a counterexample keeps 6 significant digits.

Probability bounds (``probability <= P``) and tolerances are computed from exact
quantities and kept as printed.  The CLI (``symuat audit``) shows the raw values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ..evidence.verdict import Evidence
from .audit import AuditRecord

__all__ = ["ROUNDING_BOUND", "stable_text", "stable_value", "stable_records"]

#: Measured values below this are rounding errors: printed as a bound, never as digits.
ROUNDING_BOUND = 1e-9

_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
_SCI = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?e[-+]?\d+")
_FAILED = re.compile(rf"by {_NUMBER} > tolerance")
_TOLERANCE = re.compile(rf"tolerance ({_NUMBER})(?![\w*])")
_KEPT_AFTER = ("probability <= ", "tolerance ")


def stable_text(text: str) -> str:
    r"""``text`` with its measured rounding-level numbers replaced by machine-independent bounds.

    >>> stable_text("max error/magnitude 2.9e-17, tolerance 8*n*eps*magnitude")
    'max error/magnitude <1e-9, tolerance 8*n*eps*magnitude'
    >>> stable_text("agrees to 2.2e-16 (tolerance 1.0e-11); survives with probability <= 3.0e-36")
    'agrees to <=1.0e-11 (tolerance 1.0e-11); survives with probability <= 3.0e-36'
    >>> stable_text("differs by 1.757e-13 > tolerance 1.2e-14")
    'differs by more than tolerance 1.2e-14'
    >>> stable_text("rms 1.1e-03, sup 2.4e-03")
    'rms 1.1e-03, sup 2.4e-03'
    """
    text = _FAILED.sub("by more than tolerance", text)
    tolerances = [(m.group(1), float(m.group(1))) for m in _TOLERANCE.finditer(text)]

    def bound(m: re.Match) -> str:
        if text[:m.start()].endswith(_KEPT_AFTER):
            return m.group()
        x = abs(float(m.group()))
        if x >= ROUNDING_BOUND:
            return m.group()
        fitting = [printed for printed, t in tolerances if x <= t < ROUNDING_BOUND]
        return f"<={fitting[0]}" if fitting else f"<{ROUNDING_BOUND:.0e}".replace("e-09", "e-9")

    return _SCI.sub(bound, text)


def stable_value(value: Any) -> Any:
    r"""A counterexample value with machine-independent digits (recursively).

    >>> stable_value({"derived": 0.12345678912345, "dims": {"N": 2}, "note": "off by 3.1e-17"})
    {'derived': 0.123457, 'dims': {'N': 2}, 'note': 'off by <1e-9'}
    """
    if isinstance(value, bool) or isinstance(value, int):
        return value
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, str):
        return stable_text(value)
    if isinstance(value, Mapping):
        return {k: stable_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [stable_value(v) for v in value]
    return value


def _evidence(evidence: Iterable[Evidence]) -> tuple[Evidence, ...]:
    return tuple(replace(ev, detail=stable_text(ev.detail),
                         counterexample=stable_value(ev.counterexample) if ev.counterexample is not None else None)
                 for ev in evidence)


def stable_records(records: Iterable[AuditRecord]) -> tuple[AuditRecord, ...]:
    r"""The records with :func:`stable_text` / :func:`stable_value` applied to evidence, reasons and counterexamples."""
    return tuple(replace(r, evidence=_evidence(r.evidence), reason=stable_text(r.reason),
                         counterexample=stable_value(r.counterexample) if r.counterexample is not None else None,
                         correction_evidence=_evidence(r.correction_evidence))
                 for r in records)
