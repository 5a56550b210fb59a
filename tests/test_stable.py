"""Generated files carry no machine-dependent float digits (symuat.ledger.stable)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from symuat.build import latex_files
from symuat.ledger.stable import stable_text, stable_value

_SCI = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?e[-+]?\d+")


def _other_machine(text: str) -> str:
    """The same detail as another machine might print it: every rounding-level number 1.3x larger (0 -> 1e-17)."""
    def shift(m):
        if text[:m.start()].endswith(("probability <= ", "tolerance ")):
            return m.group()
        x = float(m.group())
        return f"{(x * 1.3 if x else 1e-17):.1e}" if abs(x) < 1e-9 else m.group()

    return _SCI.sub(shift, text)


def _perturbed(records):
    def ev(evidence):
        return tuple(replace(e, detail=_other_machine(e.detail)) for e in evidence)

    return tuple(replace(r, evidence=ev(r.evidence), correction_evidence=ev(r.correction_evidence)) for r in records)


@pytest.mark.xdist_group("audit")
def test_generated_files_do_not_depend_on_rounding_digits(audited, without_figures):
    # the text only: no record reaches a figure
    files = latex_files(audited, depth=1)
    assert latex_files(_perturbed(audited), depth=1) == files
    for name, text in files.items():
        for m in _SCI.finditer(text):
            kept = text[:m.start()].endswith(("probability <= ", "tolerance ", "<="))
            assert kept or abs(float(m.group())) >= 1e-9, (name, text[m.start() - 80:m.end()])


@pytest.mark.parametrize("detail,expected", [
    ("max error/magnitude 0.0e+00, tolerance 8*n*eps*magnitude", "max error/magnitude <1e-9, tolerance 8*n*eps*"
                                                                 "magnitude"),
    ("agrees with X to 3.6e-17 (tolerance 2.7e-12)", "agrees with X to <=2.7e-12 (tolerance 2.7e-12)"),
    ("agrees with X to 3.6e-10 (tolerance 2.7e-12)", "agrees with X to <1e-9 (tolerance 2.7e-12)"),
    ("differs from X by 2.911e+00 > tolerance 1.290e-10", "differs from X by more than tolerance 1.290e-10"),
    ("density 0.562, rms 1.1e-03", "density 0.562, rms 1.1e-03"),
])
def test_stable_text(detail, expected):
    assert stable_text(detail) == expected
    assert stable_text(_other_machine(detail)) == expected


def test_stable_value_rounds_floats_and_keeps_ints():
    cx = {"lhs_value": 2**61 - 2, "derived": 1.0000000000000002, "entry": (1, 2), "ok": True}
    assert stable_value(cx) == {"lhs_value": 2**61 - 2, "derived": 1.0, "entry": [1, 2], "ok": True}
