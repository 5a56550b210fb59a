"""What the HTML pages say about a user's paper: the computed status everywhere (a refuted entry never wears the
green "proved" badge or a grid), no "Part of" an entry that does not exist, the footer's command with its
``--derivations``, the counts' punctuation, and a counterexample whose short difference stays in view beside
long sides (headless Chromium measures it)."""

from __future__ import annotations

import re

import pytest
import sympy
from chromium_support import screenshot

from symuat import Correction, Entry, Identity, Paper, Prose, Status, audit, dims_grid, register_source
from symuat.html import site_files
from symuat.ledger import sources
from symuat.ledger.stable import stable_records


@pytest.fixture(scope="module", autouse=True)
def _own_sources():
    """This module's paper, registered while its tests run only: the registry is global, and the session's own
    documents (tests/test_determinism.py) must not list another paper."""
    saved = dict(sources._REGISTRY)
    register_source(Paper("pages", "Pages paper", authors=("Zoë Ærø",), title="Pages", equations=("eq1", "eq2")))
    yield
    sources._REGISTRY.clear()
    sources._REGISTRY.update(saved)


def _transpose(rhs) -> Identity:
    return Identity({"A": ("n", "n"), "B": ("n", "n")}, lhs=lambda A, B: (A * B).T, rhs=rhs,
                    dims=dims_grid(n=(1, 2)), reference=lambda A, B: (A @ B).T)


def _long(A, x, n) -> sympy.Matrix:
    """A long sum (the sides of DUAT's eq11.part2.rule4 run far past the page) and a short difference."""
    return sympy.Matrix([[sum((A[0, 0] + k) ** 2 * x[0, 0] ** k for k in range(1, 40))]])


LONG = Identity({"A": (1, 1), "x": (1, 1)}, lhs=lambda A, x: _long(A, x, 1) + A,
                rhs=lambda A, x: _long(A, x, 1), dims=({"n": 1},))


@pytest.fixture(scope="module")
def files(without_figures_module):
    right = _transpose(lambda A, B: B.T * A.T)
    records = audit([
        Entry("pages:eq1.step1", "Eq. 1", "(AB)^T = B^T A^T", Status.PROVED, right),  # its chain has no entry
        Entry("pages:eq1.step2", "Eq. 1", "(AB)^T = BA", Status.PROVED, _transpose(lambda A, B: B * A)),
        Entry("pages:eq2", "Eq. 2", "f = f + A", Status.ERRATUM, LONG,
              correction=Correction("f = f", Identity({"A": (1, 1), "x": (1, 1)}, lhs=lambda A, x: _long(A, x, 1),
                                                       rhs=lambda A, x: _long(A, x, 1), dims=({"n": 1},)))),
        Entry("pages:sec1", "§1", "prose", Status.PROSE, Prose("Words.")),
    ])
    return site_files(stable_records(records), derivations="my_paper")


@pytest.fixture(scope="module")
def without_figures_module():
    from symuat.latex import figures

    saved = figures.plot_available
    figures.plot_available = lambda: False
    yield
    figures.plot_available = saved


def _section(page: str, anchor: str) -> str:
    return re.search(rf'<section class="entry [\w-]+" id="{re.escape(anchor)}">.*?</section>', page, re.S).group(0)


def test_a_refuted_entry_shows_its_computed_status_and_never_a_green_badge(files):
    page = files["pages.html"]
    refuted = _section(page, "pages-eq1.step2")
    assert refuted.startswith('<section class="entry refuted"')
    assert '<span class="badge refuted">refuted</span>' in refuted and "badge proved" not in refuted.split("</h2>")[0]
    assert "grid" not in refuted.split("</h2>")[0]
    row = re.search(r'<tr><td><a href="#pages-eq1.step2">.*?</tr>', page).group(0)
    assert '<span class="badge refuted">refuted</span> <span class="recorded">recorded proved</span>' in row


def test_the_dependency_tree_shows_the_computed_status(files):
    tree = files["dependencies.html"]
    assert re.search(r'<code>pages:eq1.step2</code></a> <span class="badge refuted">refuted</span>', tree)


def test_no_entry_is_part_of_an_entry_that_does_not_exist(files):
    assert "Part of" not in _section(files["pages.html"], "pages-eq1.step1")


def test_counts_are_the_computed_ones_and_end_with_a_full_stop(files):
    page = files["pages.html"]
    assert re.search(r"4 entries, as the audit computes them:\n.*prose</span> 1, .*refuted</span> 1\. The recorded",
                     page)
    assert ", ." not in page and "The recorded status of 1 entry differs from the computed one." in page
    index = files["index.html"]
    assert '<span class="badge refuted">refuted</span></th>' in index  # a column only because one entry has it
    assert "<code>pages:eq1.step2</code>" in index  # the errata list the refuted entry too


def test_the_footer_gives_the_command_with_its_derivations(files):
    for name in ("index.html", "pages.html", "dependencies.html"):
        assert "regenerate with\n<code>symuat html --derivations my_paper --out DIR</code>" in files[name]


def test_accented_names_are_intact(files):
    assert "Zoë Ærø. Pages." in files["pages.html"]


MEASURE = """<script>
const box = document.querySelector('#pages-eq2 .counterexample');
for (const row of box.querySelectorAll('tr')) {
  const math = row.querySelector('math');
  if (!math) continue;
  const ink = document.createRange();
  ink.selectNodeContents(math);
  const r = ink.getBoundingClientRect();
  console.log(`MEASURE ${row.querySelector('th').textContent}|${r.left}|${window.innerWidth - r.left}`);
}
</script>"""


def test_a_short_difference_starts_in_view_beside_long_sides(chromium, files, tmp_path):
    """Every side's formula starts inside the window, at the left of its own cell (it used to be centred in a table
    as wide as the longest side: off-screen, the difference row looked empty)."""
    for name, data in files.items():
        (tmp_path / name).write_text(data) if isinstance(data, str) else (tmp_path / name).write_bytes(data)
    page = tmp_path / "pages.html"
    page.write_text(files["pages.html"].replace("</body>", MEASURE + "</body>"))  # the test's probe, not the site's
    console = screenshot(chromium, page, tmp_path / "shot.png", tmp_path / "profile", size="1000,1400")
    measured = {m.group(1): (float(m.group(2)), float(m.group(3)))
                for m in (re.search(r"MEASURE ([^|]+)\|([-\d.e]+)\|([-\d.e]+)", line) for line in console) if m}
    assert {"left-hand side", "right-hand side", "difference (left − right)"} <= set(measured), console
    for side, (left, room) in measured.items():
        assert 0 <= left < 400 and room > 500, (side, left, room)
