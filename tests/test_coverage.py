"""The coverage report lists exactly the numbered equations without an entry."""

from __future__ import annotations

from symuat import Entry, Prose, Source, Status
from symuat.ledger.coverage import NUMBERED_EQUATIONS, coverage


def _entry(id_: str) -> Entry:
    return Entry(id_, Source(id_.split(":")[0], "ref"), "x", Status.PROSE, Prose("r"))


def test_steps_cover_their_equation():
    cov = coverage([_entry("duat:eq22.step3"), _entry("uat-aaai:appA.eq1.step2")])
    assert "eq22" not in cov.missing["duat"] and "eq1" in cov.missing["duat"]
    assert "appA.eq1" not in cov.missing["uat-aaai"] and "appA.eq2" in cov.missing["uat-aaai"]
    assert cov.counts["duat"] == {"prose": 1}
    assert not cov.complete


def test_all_numbered_equations_listed():
    assert len(NUMBERED_EQUATIONS["duat"]) == 35
    assert len(NUMBERED_EQUATIONS["uat-aaai"]) == 17 + 2 + 9
    assert len(NUMBERED_EQUATIONS["uat-arxiv"]) == 15
    every = [_entry(f"{v}:{p}") for v, places in NUMBERED_EQUATIONS.items() for p in places]
    assert coverage(every).complete
    assert "none" in coverage(every).to_text()
