"""The source registry: built-in paper versions, ``ext``, and papers or sources a user registers."""

from __future__ import annotations

import pytest

from symuat import Entry, LedgerError, Origin, Paper, Prose, Source, Status, origin, paper, papers, register_source
from symuat.ledger.coverage import coverage

_TOY = Paper("toy-paper", "Toy paper", authors=("Ada Lovelace", "Alan Turing"), title="On toys",
             venue="Journal of Toys, 1936", equations=("eq1", "eq2", "appA.eq1"))


def test_built_in_papers_have_names_and_citations():
    keys = [p.key for p in papers()][:3]
    assert keys == ["uat-aaai", "duat", "uat-arxiv"]
    duat = paper("duat")
    assert duat.name == "DUAT" and duat.authors == ("Wei Wang", "Qing Li")
    assert duat.citation.startswith("Wei Wang and Qing Li. Dynamic Universal Approximation Theory")
    assert paper("uat-arxiv").equations == tuple(f"eq{n}" for n in range(1, 16))
    assert origin("ext").name == "Beyond the paper: modern LLM blocks" and not isinstance(origin("ext"), Paper)


def test_source_comes_from_the_id():
    e = Entry("uat-aaai:eq4", "§3.2, Eq. 4", "x", Status.PROSE, Prose("r"))
    assert e.source == Source("uat-aaai", "§3.2, Eq. 4")
    assert e.source.name == "UAT, conference version"
    assert e.source.to_json() == {"seed": "000_2bc2c73c7532a7f2.txt", "version": "uat-aaai", "ref": "§3.2, Eq. 4"}
    assert Entry("ext:gelu.tanh", "GELU", "x", Status.PROSE, Prose("r")).source.seed == ""


def test_older_spelling_with_a_source_is_checked_against_the_id():
    assert Entry("duat:eq1", Source("duat", "Eq. 1"), "x", Status.PROSE, Prose("r")).ref == "Eq. 1"
    with pytest.raises(LedgerError, match="cites version 'uat-arxiv'"):
        Entry("duat:eq1", Source("uat-arxiv", "Eq. 1"), "x", Status.PROSE, Prose("r"))
    with pytest.raises(LedgerError, match="ref must be a string"):
        Entry("duat:eq1", 3, "x", Status.PROSE, Prose("r"))


def test_register_your_own_paper_and_its_coverage():
    assert register_source(_TOY) is _TOY
    register_source(_TOY)  # importing a derivation package twice is harmless
    assert paper("toy-paper").citation == "Ada Lovelace and Alan Turing. On toys. Journal of Toys, 1936."
    entries = [Entry("toy-paper:eq1.step2", "Eq. 1", "x", Status.PROSE, Prose("r")),
               Entry("duat:eq3", "Eq. 3", "x", Status.PROSE, Prose("r"))]
    cov = coverage(entries[:1])
    assert cov.missing == {"toy-paper": ("eq2", "appA.eq1")}
    assert "Toy paper" in cov.to_text()
    assert set(coverage(entries).missing) == {"duat", "toy-paper"}


def test_register_a_plain_source():
    notes = register_source(Origin("my-notes", "My notes"))
    entry = Entry("my-notes:gelu.tanh-form", "note 3", "x", Status.PROSE, Prose("r"))
    assert entry.source.name == "My notes"
    assert coverage([entry]).missing == {}
    assert origin("my-notes") is notes


@pytest.mark.parametrize(("make", "message"), [
    (lambda: Origin("Bad Key", "x"), "source key 'Bad Key' is malformed"),
    (lambda: Origin("ok", ""), "needs a non-empty human name"),
    (lambda: Origin("ok", "x", places="("), "is not a regular expression"),
    (lambda: Paper("p", "P", authors="A. Author", title="T"), "authors must be a non-empty tuple"),
    (lambda: Paper("p", "P", authors=("A",), title=""), "needs a title"),
    (lambda: Paper("p", "P", authors=("A",), title="T", equations=("equation1",)), "does not match its place"),
    (lambda: register_source(Origin("duat", "Impostor")), "already registered as 'DUAT'"),
    (lambda: register_source("duat"), "expects a Paper or Origin"),
    (lambda: paper("ext"), "is not a paper"),
    (lambda: origin("uat-v9"), "unknown source version 'uat-v9'"),
    (lambda: Entry("nowhere:eq1", "Eq. 1", "x", Status.PROSE, Prose("r")), "unknown source version 'nowhere'"),
    (lambda: Entry("duat:gelu", "x", "x", Status.PROSE, Prose("r")), "malformed entry id 'duat:gelu'"),
    (lambda: Entry("ext:Eq1", "x", "x", Status.PROSE, Prose("r")), "malformed entry id 'ext:Eq1'"),
    (lambda: Entry("duat", "x", "x", Status.PROSE, Prose("r")), "malformed entry id 'duat'"),
])
def test_bad_sources_are_ledger_errors(make, message):
    with pytest.raises(LedgerError, match=message):
        make()
