"""The coverage report lists exactly the numbered equations without an entry."""

from __future__ import annotations

import pytest

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
    assert "UAT, arXiv version" in cov.to_text()
    assert coverage([Entry("ext:gelu", "GELU", "x", Status.PROSE, Prose("r"))]).missing == {}


def test_plain_sources_are_counted_in_the_table_and_the_total():
    """The CLI's per-version table counts ``ext`` too (259 + 37 = 296, as the HTML ledger and the PDF say)."""
    cov = coverage([_entry("uat-arxiv:eq1"), Entry("ext:gelu", "GELU", "x", Status.PROSE, Prose("r"))])
    assert cov.others == {"ext": {"prose": 1}}
    rows = {line.split()[0]: line.split()[1:] for line in cov.to_text().splitlines()[1:4]}
    assert rows["ext"][-1] == "1" and rows["all"][-1] == "2" and rows["uat-arxiv"][-1] == "1"


@pytest.mark.parametrize(("ref", "covered"), [
    ("Eq. 16, 18", {"eq16", "eq18"}),
    ("Eqs. (3)–(5)", {"eq3", "eq4", "eq5"}),
    ("§4.4, Eq. 16 and 17", {"eq16", "eq17"}),
    ("text before Figure 5", set()),
])
def test_a_reference_naming_several_equations_covers_each(ref, covered):
    """An entry printed at "Eq. 16, 18" covers Eq. 16 as well as its own place."""
    entry = Entry("duat:sec4.4.claim1", ref, "x", Status.PROSE, Prose("r"))
    missing = set(coverage([entry]).missing["duat"])
    assert covered.isdisjoint(missing) and len(missing) == 35 - len(covered)


def test_an_appendix_reference_covers_the_appendix_numbering():
    """"App. C, Eq. 3" of the conference version is its App. C Eq. 3, not its main-text Eq. 3."""
    entry = Entry("uat-aaai:sec3.claim1", "App. C, Eq. 3", "x", Status.PROSE, Prose("r"))
    missing = coverage([entry]).missing["uat-aaai"]
    assert "appC.eq3" not in missing and "eq3" in missing
