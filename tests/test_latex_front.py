"""Front matter: versions and citations from the registry, status counts, errata links, entries beyond the paper."""

from __future__ import annotations

from collections import Counter

from symuat import Correction, Entry, Identity, Status, audit, dims_grid, papers
from symuat.latex.front import RELEASE_DATE, paper_versions, version_summaries
from symuat.latex.render import render_beyond, render_document


def _same():
    return Identity(lambda d: {"x": (d["n"], 1)}, lambda e, d: e["x"], lambda e, d: e["x"], dims_grid(n=(1,)))


def _other():
    return Identity(lambda d: {"x": (d["n"], 1)}, lambda e, d: e["x"], lambda e, d: 2 * e["x"], dims_grid(n=(1,)))


def _records():
    return audit([
        Entry("duat:eq5", "Eq. 5", "x", Status.PROVED, _same()),
        Entry("duat:eq6", "Eq. 6", "x = 2x", Status.ERRATUM, _other(), correction=Correction("x = x", _same())),
        Entry("uat-arxiv:eq1", "Eq. 1", "x", Status.PROVED, _same()),
        Entry("ext:gelu.tanh", "GELU", "x", Status.PROVED, _same()),
    ])


def test_every_registered_paper_is_cited_on_the_title_page():
    tex = render_document(["appendix-audit"], _records())
    for p in papers():
        assert p.key in [v.key for v in paper_versions()]
        assert p.title.split(":")[0] in tex
    assert RELEASE_DATE in tex and r"\date" not in tex and r"\today" not in tex


def test_status_counts_per_version_match_a_direct_count():
    records = _records()
    direct = Counter((r.entry.id.split(":")[0], r.computed_status) for r in records)  # the computed statuses
    for v in version_summaries(records):
        assert v.counts == tuple(direct[(v.key, s.value)] for s in Status)
        assert v.agree == sum(r.agrees for r in records if r.entry.source.version == v.key)
    assert sum(v.total for v in version_summaries(records)) == len(records)


def test_summary_links_every_erratum_to_its_page():
    tex = render_document(["appendix-audit"], _records())
    assert r"\hyperref[erratum:duat:eq6]" in tex and r"\pageref{erratum:duat:eq6}" in tex
    assert "erratum:duat:eq5" not in tex


def test_entries_beyond_the_paper_get_their_own_section():
    records = _records()
    beyond = render_beyond(records)
    assert "ext:" in beyond and "gelu" in beyond and "duat:eq5" not in beyond
    assert "No such entry" in render_beyond(r for r in records if not r.entry.id.startswith("ext:"))
