"""``symuat html``: the ledger as a static site — counts, errata, every entry, offline, deterministic, and rendered
by headless Chromium without console errors (skipped without ``chromium``; fails instead with
SYMUAT_REQUIRE_CHROMIUM=1, as in CI)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from chromium_support import distinct_colours, screenshot
from click.testing import CliRunner

from symuat.cli import main
from symuat.evidence.verdict import Level
from symuat.html import dependencies, site_files, write_site
from symuat.html import mathml as _mathml
from symuat.latex import figures
from symuat.ledger.entry import Status
from symuat.ledger.registry import load_entries
from symuat.ledger.snapshot import claim_kind
from symuat.ledger.stable import stable_records

pytestmark = pytest.mark.xdist_group("audit")  # the session's audit is computed once, on one worker

REQUIRE_DOCS = os.environ.get("SYMUAT_REQUIRE_DOCS") == "1"


@pytest.fixture(scope="session")
def html_site(audited, session_seed, tmp_path_factory) -> Path:
    """The site of the session's audit, written once."""
    out = tmp_path_factory.mktemp("html-site")
    write_site(out, seed=session_seed, records=audited)
    return out


class _Page(HTMLParser):
    """Ids, links, sources, scripts and MathML of one page (parsed with the standard library's parser)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.links: list[str] = []
        self.scripts = 0
        self.maths = 0
        self.attributes: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.attributes |= set(a)
        if "id" in a:
            self.ids.append(a["id"])
        for key in ("href", "src"):
            if key in a:
                self.links.append(a[key])
        self.scripts += tag == "script"
        self.maths += tag == "math"

    def handle_data(self, data):
        self.text.append(data)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def test_the_index_counts_each_versions_statuses_and_lists_every_erratum(html_site, audited):
    index = (html_site / "index.html").read_text(encoding="utf-8")
    for version in sorted({r.entry.source.version for r in audited}):
        mine = [r for r in audited if r.entry.source.version == version]
        counts = [sum(r.computed is s for r in mine) for s in Status] + [len(mine), sum(not r.agrees for r in mine)]
        row = re.search(rf'<tr><td><a href="{version}\.html">.*?</tr>', index)
        assert row is not None, version
        assert [int(n) for n in re.findall(r'<td class="num">(\d+)</td>', row.group(0))] == counts
    errata = [r.entry.id for r in audited if r.entry.status is Status.ERRATUM]
    assert errata and all(f"<code>{i}</code>" in index for i in errata)
    assert "The audit agrees with every recorded status." in index


def test_every_entry_has_its_section_with_statement_and_evidence(html_site, audited):
    for version in sorted({r.entry.source.version for r in audited}):
        page = (html_site / f"{version}.html").read_text(encoding="utf-8")
        for r in (r for r in audited if r.entry.source.version == version):
            anchor = r.entry.id.replace(":", "-")
            section = re.search(rf'<section class="entry (\w+)" id="{re.escape(anchor)}">(.*?)</section>', page, re.S)
            assert section is not None, r.entry.id
            assert section.group(1) == r.entry.status.value
            body = section.group(2)
            assert "<math" in body or '<code class="tex">' in body
            for ev in r.evidence:  # every level the record carries, generically (a new level needs no change here)
                assert f'<td class="level">{ev.level.value}</td>' in body, (r.entry.id, ev.level)
            assert ("<h3>Correction</h3>" in body) == (r.entry.correction is not None)
            assert ("<h3>Counterexample" in body) == bool(r.counterexample)


def test_the_site_is_offline_and_every_link_resolves(html_site):
    pages = sorted(html_site.glob("*.html"))
    assert {p.name for p in pages} >= {"index.html", "duat.html", "dependencies.html"}
    ids = {p.name: set(_parse(p).ids) for p in pages}
    for p in pages:
        parsed = _parse(p)
        assert parsed.scripts == 0, p.name
        for link in parsed.links:
            assert not re.match(r"^[a-z]+:", link), f"{p.name} fetches {link}"
            target, _, frag = link.partition("#")
            target = target or p.name
            assert (html_site / target).is_file(), f"{p.name}: {link}"
            if frag:
                assert frag in ids[target], f"{p.name}: {link}"


def test_statements_are_mathml(html_site):
    if not _mathml.mathml_available():
        assert not REQUIRE_DOCS, "SYMUAT_REQUIRE_DOCS=1 but latex2mathml is missing"
        pytest.skip("latex2mathml not installed (pip install 'symuat[html]'; CI sets SYMUAT_REQUIRE_DOCS=1)")
    page = (html_site / "duat.html").read_text(encoding="utf-8")
    assert '<code class="tex">' not in page and "latex2mathml is not installed" not in page
    assert _parse(html_site / "duat.html").maths > 133
    for p in sorted(html_site.glob("*.html")):  # a macro latex2mathml does not know would show as "\name"
        unknown = [m for math in re.findall(r"<math.*?</math>", p.read_text(encoding="utf-8"), re.S)
                   for m in re.findall(r">[^<]*(\\[A-Za-z]+)", math)]
        assert unknown == [], (p.name, unknown[:5])


def test_figures_are_svg_files_the_pages_show(html_site):
    if not figures.plot_available():
        pytest.skip("matplotlib not installed")
    svgs = sorted(p.name for p in html_site.glob("*.svg"))
    assert "fig-attribution.svg" in svgs and "fig-attention.svg" in svgs
    shown = set(_parse(html_site / "figures.html").links)
    assert set(svgs) <= shown
    assert all(b"<dc:date>" not in (html_site / s).read_bytes() for s in svgs)


@pytest.mark.slow  # a second rendering of the whole site in another process (CI's slow step)
def test_the_site_is_byte_identical_in_another_process_and_hash_seed(html_site, audited, session_seed, tmp_path):
    """A fresh ``symuat html`` (reading the session's audit from the cache) under another PYTHONHASHSEED."""
    out = tmp_path / "again"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run([sys.executable, "-m", "symuat.cli", "html", "--out", str(out), "--seed", str(session_seed)],
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    first = {p.name: p.read_bytes() for p in sorted(html_site.iterdir())}
    second = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    assert sorted(first) == sorted(second)
    assert [n for n in first if first[n] != second[n]] == []


def test_without_latex2mathml_formulas_are_latex_source_and_the_page_says_so(audited, monkeypatch, without_figures):
    monkeypatch.setattr(_mathml, "mathml_available", lambda: False)
    from symuat.html import site

    monkeypatch.setattr(site, "mathml_available", lambda: False)
    records = stable_records(audited[:3])
    files = site_files(records)
    page = files[f"{records[0].entry.source.version}.html"]
    assert '<code class="tex">' in page and "<math" not in page
    assert "latex2mathml is not installed" in page
    assert not any(name.endswith(".svg") for name in files) and "figures.html" not in files


def test_a_disagreeing_entry_is_shown_on_its_page_and_the_index(audited, without_figures):
    records = list(stable_records(audited[:4]))
    flipped = next(i for i, r in enumerate(records) if r.entry.status is not Status.PROSE)
    records[flipped] = replace(records[flipped], computed=None)
    files = site_files(records)
    victim = records[flipped].entry.id
    assert "The audit disagrees with the recorded status of 1 entry:" in files["index.html"]
    assert "The audit computes <strong>no status</strong>" in files[f"{victim.split(':')[0]}.html"]


def test_hostile_text_is_escaped_and_never_runs(without_figures):
    """Markup in a statement, note, reference or check detail is shown as text: no element of it reaches the page."""
    from symuat import Entry, Prose
    from symuat.ledger.audit import audit_entry

    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    entry = Entry("ext:hostile", f"ref {hostile}", r"a < b \\& c > d", Status.PROSE,
                  Prose(f"reason {hostile}"), note=f"note {hostile} $x<y$")
    record = audit_entry(entry)
    record = replace(record, evidence=(replace(record.evidence[0], detail=hostile),) if record.evidence else ())
    page = site_files([record])["ext.html"]
    parsed = _Page()
    parsed.feed(page)
    assert parsed.scripts == 0 and "<img src=x" not in page and "&lt;script&gt;" in page
    assert "onerror" not in parsed.attributes and "x" not in parsed.links


def test_a_denial_is_marked_by_what_confirms_it(html_site, audited):
    """As in ``symuat audit``: for a printed denial, a level that refutes the denied identity gets ✓."""
    denials = [r for r in audited if claim_kind(r.entry) == "denial"]
    assert denials
    for r in denials:
        page = (html_site / f"{r.entry.source.version}.html").read_text(encoding="utf-8")
        row = re.search(rf'<tr><td><a href="#{re.escape(r.entry.id.replace(":", "-"))}">.*?</tr>', page).group(0)
        marks = re.findall(r'<td class="mark (\w+)"', row)
        want = ["all" if not ev.holds else "none" for ev in r.evidence]
        assert marks[:len(want)] == want and set(marks[len(want):]) <= {"na"}, (r.entry.id, marks, want)


def test_the_dependency_view_nests_steps_under_their_chain(audited):
    deps = dependencies(audited)
    ids = [r.entry.id for r in audited]
    steps = [i for i in ids if re.fullmatch(r"duat:eq22\.step\d+", i)]
    assert steps and deps.children["duat:eq22"][:len(steps)] == tuple(steps)
    assert all(deps.parent[s] == "duat:eq22" for s in steps)
    assert all(u in ids for used in deps.uses.values() for u in used)
    assert all(i in deps.used_by[u] for i, used in deps.uses.items() for u in used)


def test_every_level_of_the_records_gets_a_column(html_site, audited):
    page = (html_site / "duat.html").read_text(encoding="utf-8")
    header = re.search(r'<table class="summary">\s*<thead>(.*?)</thead>', page, re.S).group(1)
    carried = [lvl.value for lvl in Level if any(ev.level is lvl for r in audited for ev in r.evidence)]
    assert re.findall(r'<th class="lvl">([^<]+)</th>', header) == carried


@pytest.mark.parametrize("args, message", [
    (["--out", "{file}"], "cannot create output directory"),
    (["--out", "{dir}", "--seed", "-1"], "seed must be a non-negative integer"),
    (["--out", "{dir}", "--derivations", "{dir}/missing"], "does not exist"),
])
def test_bad_arguments_are_one_line_errors_before_any_audit(tmp_path, args, message):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    argv = ["html", *[a.format(file=blocker / "sub", dir=tmp_path / "site") for a in args]]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("symuat: error: ") and message in result.output
    assert len(result.output.strip().splitlines()) == 1


# --- headless Chromium -------------------------------------------------------------------------------------

def test_chromium_renders_the_ledger_without_console_errors(chromium, html_site, tmp_path):
    shots = Path(os.environ.get("SYMUAT_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    png = shots / "ledger-duat.png"  # the largest page: 133 entries, every kind of status and evidence
    console = screenshot(chromium, html_site / "duat.html", png, tmp_path / "profile")
    assert console == [], console
    assert distinct_colours(png) > 50  # text, badges, formulas: not a blank page


def test_the_console_check_sees_a_planted_error(chromium, tmp_path):
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><p>x</p><script>console.error("planted")</script>', encoding="utf-8")
    console = screenshot(chromium, page, tmp_path / "bad.png", tmp_path / "profile", size="400,300")
    assert any('"planted"' in line for line in console)


@pytest.mark.xdist_group("audit")
def test_an_undecided_level_is_a_question_mark_and_a_grid_proof_says_so(html_site, audited, session_seed, tmp_path):
    """All-sizes outside its fragment is '?', never ✓; a statement proved for every size by Coq shows no grid, and one
    proved on its grid only (the same records without their Coq evidence) shows that grid."""
    import dataclasses

    from symuat import Level

    def row(site, r):
        page = (site / f"{r.entry.source.version}.html").read_text(encoding="utf-8")
        return re.search(rf'<tr><td><a href="#{re.escape(r.entry.id.replace(":", "-"))}">.*?</tr>', page).group(0)

    outside = [r for r in audited if r.entry.status.value == "proved" and any(
        ev.level is Level.ALL_SIZES and ev.holds is None and ev.grid is not None for ev in r.evidence)]
    by_coq = [r for r in outside if any(ev.level is Level.COQ and ev.holds for ev in r.evidence)]
    assert by_coq  # the identities Coq decides for every size (Fig. 3, Eq. 10's paths, ALiBi, unselected experts)
    for r in outside:
        assert '<td class="mark undecided" title="all-sizes: undecided">?</td>' in row(html_site, r)
        if r in by_coq:
            assert r.grid is None and 'class="grid"' not in row(html_site, r)
        else:  # proved on its grid only (none in the shipped ledger since coq/Buckets.v)
            assert f'<span class="grid">grid {", ".join(f"{k} ≤ {v}" for k, v in r.grid.items())}</span>' in row(
                html_site, r)
    graded = [dataclasses.replace(r, evidence=tuple(ev for ev in r.evidence if ev.level is not Level.COQ))
              for r in by_coq]
    by_id = {g.entry.id: g for g in graded}
    write_site(tmp_path, seed=session_seed, records=[by_id.get(r.entry.id, r) for r in audited])
    for r in graded:
        assert r.grid is not None
        assert '<td class="mark undecided" title="all-sizes: undecided">?</td>' in row(tmp_path, r)
        assert f'<span class="grid">grid {", ".join(f"{k} ≤ {v}" for k, v in r.grid.items())}</span>' in row(
            tmp_path, r)


class _Shape(HTMLParser):
    """Elements (with their attributes) and text of a formula, in order: what a reader of the page sees."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[tuple] = []

    def handle_starttag(self, tag, attrs):
        self.items.append((tag, tuple(sorted((k, v or "") for k, v in attrs))))

    def handle_data(self, data):
        if self.items and self.items[-1][0] == "#":
            self.items[-1] = ("#", self.items[-1][1] + data)
        else:
            self.items.append(("#", data))


def _shape(markup: str) -> list[tuple]:
    parsed = _Shape()
    parsed.feed(markup)
    parsed.close()
    return parsed.items


def test_the_sanitiser_changes_no_formula_of_the_shipped_ledger():
    """Every statement, correction and ``$…$`` of a note, through nh3's allow-list, keeps every element, attribute and
    character latex2mathml wrote (a formula emptied by the allow-list would be a silent loss)."""
    if not _mathml.mathml_available():
        assert not REQUIRE_DOCS, "SYMUAT_REQUIRE_DOCS=1 but latex2mathml or nh3 is missing"
        pytest.skip("latex2mathml or nh3 not installed (pip install 'symuat[html]')")
    converter = pytest.importorskip("latex2mathml.converter")
    texs = []
    for e in load_entries():
        texs += [e.statement, *re.findall(r"\$((?:\\.|[^$\\])+)\$", e.note or "")]
        texs += [e.correction.statement] if e.correction is not None else []
    assert len(texs) > 1000
    changed = [t for t in texs if _shape(str(_mathml.math(t)))
               != _shape(converter.convert(_mathml._TEXT_ARG.sub(_mathml._text_mode, t)))]
    assert changed == []
