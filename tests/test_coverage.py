"""The coverage report lists exactly the numbered equations without an entry."""

from __future__ import annotations

from symuat import Entry, Prose, Status
from symuat.ledger.coverage import coverage, numbered_equations


def _entry(id_: str) -> Entry:
    return Entry(id_, "ref", "x", Status.PROSE, Prose("r"))


def test_steps_cover_their_equation():
    cov = coverage([_entry("duat:eq22.step3"), _entry("uat-aaai:appA.eq1.step2")])
    assert "eq22" not in cov.missing["duat"] and "eq1" in cov.missing["duat"]
    assert "appA.eq1" not in cov.missing["uat-aaai"] and "appA.eq2" in cov.missing["uat-aaai"]
    assert cov.counts["duat"] == {"prose": 1}
    assert not cov.complete


def test_all_numbered_equations_listed():
    assert len(numbered_equations()["duat"]) == 35
    assert len(numbered_equations()["uat-aaai"]) == 17 + 2 + 9
    assert len(numbered_equations()["uat-arxiv"]) == 15
    every = [_entry(f"{v}:{p}") for v, places in numbered_equations().items() for p in places]
    assert coverage(every).complete
    assert "none" in coverage(every).to_text()


def test_only_papers_with_entries_are_reported():
    cov = coverage([_entry("uat-arxiv:eq1"), Entry("ext:gelu", "GELU", "x", Status.PROSE, Prose("r"))])
    assert set(cov.missing) == {"uat-arxiv"} and set(cov.counts) == {"uat-arxiv"}
    assert "UAT, arXiv version" in cov.to_text() and "ext" not in cov.to_text()
    assert coverage([Entry("ext:gelu", "GELU", "x", Status.PROSE, Prose("r"))]).missing == {}
