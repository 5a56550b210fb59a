"""Fault injection at the HTML ledger: hostile LaTeX in a note or a statement never becomes a live script, and a
source never replaces one of the site's own pages.

latex2mathml copies ``\\text``, ``\\tag``, ``\\unicode`` and ``\\href`` arguments into its output unescaped; the
site passes every formula through an allow-list (symuat.html.mathml.sanitize).  Each payload below is checked by
parsing the written page with the standard library's parser (an independent list of MathML elements, no script,
no ``on*`` attribute, no ``javascript:`` value), and all of them at once in headless Chromium: each payload calls
``console.error``, and the console must stay empty.
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from html.parser import HTMLParser

import pytest
from chromium_support import screenshot
from faults_support import HEADER, one_error_line, run

from symuat import Entry, Prose
from symuat.errors import LedgerError
from symuat.html import mathml, site_files
from symuat.latex.render import write_files
from symuat.ledger import sources
from symuat.ledger.audit import audit_entry
from symuat.ledger.entry import Status
from symuat.ledger.sources import Origin, register_source

pytestmark = [pytest.mark.skipif(not mathml.mathml_available(), reason="latex2mathml and nh3 (symuat[html])"),
              pytest.mark.usefixtures("without_figures")]  # the text only: no matplotlib figure is drawn

#: The elements of MathML Core (and menclose), written out here independently of symuat's allow-list.
MATHML = {"math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msub", "msup", "msubsup", "munder", "mover",
          "munderover", "mmultiscripts", "mprescripts", "none", "mfrac", "msqrt", "mroot", "mstyle", "mpadded",
          "mphantom", "merror", "menclose", "mtable", "mtr", "mtd"}
_PWN = 'console.error("pwned")'

#: name → hostile LaTeX (math mode).
PAYLOADS = {
    "text_script": rf"\text{{<script>{_PWN}</script>}}",
    "textrm_closes_math": rf"\textrm{{</math><script>{_PWN}</script>}}",
    "mbox_svg_onload": rf"\mbox{{<svg onload='{_PWN}'></svg>}}",
    "text_iframe": r"\text{<iframe src='javascript:console.error(1)'></iframe>}",
    "text_link": r"\text{<a href='javascript:console.error(1)'>x</a>}",
    "unicode_script": rf"\unicode{{x3C;<script>{_PWN}</script>}}",
    "tag_img_onerror": rf"x \tag{{<img src=x onerror='{_PWN}'>}}",
    "href_javascript": rf"\href{{javascript:{_PWN}}}{{x}}",
    "style_url": r"\style{background:url(javascript:console.error(1))}{x}",
    "class_breaks_out": r"\class{a' onclick='console.error(1)}{x}",
    "color_javascript": r"\color{javascript:console.error(1)}{x}",
    "operatorname_img": rf"\operatorname{{<img src=x onerror='{_PWN}'>}} x",
}


class _Page(HTMLParser):
    """Every element and attribute of a page, and whether each element lies inside ``<math>``."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.in_math: list[str] = []
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [(k, v or "") for k, v in attrs]
        if self.depth or tag == "math":
            self.in_math.append(tag)
        self.depth += tag == "math"

    def handle_endtag(self, tag):
        self.depth -= tag == "math" and self.depth > 0

    def handle_data(self, data):
        self.text.append(data)


def _harmless(page: str) -> _Page:
    parsed = _Page()
    parsed.feed(page)
    assert not {"script", "iframe", "img", "svg", "object", "embed", "a", "style"} & \
        {t for t in parsed.tags if t in parsed.in_math or t in ("script", "iframe", "object", "embed")}, parsed.tags
    assert set(parsed.in_math) <= MATHML, set(parsed.in_math) - MATHML
    assert not [k for k, _ in parsed.attributes if k.lower().startswith("on")]
    squeezed = ["".join(v.split()).lower() for _, v in parsed.attributes]
    assert not [v for v in squeezed if "javascript:" in v or "url(" in v]
    assert "javascript:" not in page.lower() or "javascript:" in "".join(parsed.text).lower()
    return parsed


def _record(tex: str, key: str = "ext", place: str = "hostile"):
    """An audited prose entry whose statement is ``tex`` and whose note holds it as ``$tex$``."""
    return audit_entry(Entry(f"{key}:{place}", "Sec. 1", tex, Status.PROSE, Prose("why"), note=f"see ${tex}$ here"))


@pytest.mark.parametrize("case", sorted(PAYLOADS))
def test_hostile_latex_in_a_statement_and_a_note_cannot_run(case):
    page = site_files([_record(PAYLOADS[case])])["ext.html"]
    parsed = _harmless(page)
    assert parsed.in_math.count("math") >= 2  # the statement and the note are still formulas


def test_markup_typed_in_text_mode_is_shown_as_typed():
    page = site_files([_record(r"\text{a <b> & c}")])["ext.html"]
    assert "<mtext>a&nbsp;&lt;b&gt;&nbsp;&amp;&nbsp;c</mtext>" in page


def test_hostile_latex_in_a_counterexample_cannot_run():
    record = _record("x")
    record = replace(record, counterexample={"lhs": PAYLOADS["text_script"], "rhs": PAYLOADS["href_javascript"],
                                             "difference": PAYLOADS["tag_img_onerror"]})
    _harmless(site_files([record])["ext.html"])


def test_no_payload_runs_in_chromium(chromium, tmp_path):
    records = [_record(tex, place=f"hostile.case{i}") for i, tex in enumerate(PAYLOADS.values())]
    write_files(tmp_path / "site", site_files(records))
    console = screenshot(chromium, tmp_path / "site" / "ext.html", tmp_path / "page.png", tmp_path / "profile")
    assert console == [], console


@pytest.mark.parametrize("page", ["dependencies", "figures"])  # "index": through the command line, below
def test_a_source_named_like_a_site_page_is_refused_by_name(page, monkeypatch):
    monkeypatch.setattr(sources, "_REGISTRY", dict(sources._REGISTRY))  # the registry is global: leave it as found
    key = register_source(Origin(page, f"A source keyed {page}")).key
    with pytest.raises(LedgerError, match=rf"source key '{key}' cannot have a page in the HTML ledger: its page "
                                          rf"'{key}\.html' is the site's own"):
        site_files([_record("x", key=key)])


def test_a_paper_keyed_index_leaves_the_sites_index_as_it_was(tmp_path):
    """``symuat html`` refuses the ledger in one line (exit 2) before writing anything: the index survives."""
    good, evil, out = tmp_path / "good", tmp_path / "evil", tmp_path / "site"
    good.mkdir()
    (good / "mine.py").write_text(HEADER + "def entries():\n    return [Entry('ext:one', 'Sec. 1', 'x', "
                                           "Status.PROSE, Prose('why'))]\n")
    evil.mkdir()
    (evil / "mine.py").write_text(HEADER + "from symuat import Paper, register_source\n"
                                           "register_source(Paper('index', 'Index', authors=('A. Author',), "
                                           "title='Evil', equations=('eq1',)))\n"
                                           "def entries():\n    return [Entry('index:eq1', 'Eq. 1', 'x', "
                                           "Status.PROSE, Prose('why'))]\n")
    assert run(["html", "--derivations", str(good), "--out", str(out), "--no-cache", "--quiet"]).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    result = run(["html", "--derivations", str(evil), "--out", str(out), "--no-cache", "--quiet"])
    one_error_line(result, "source key 'index' cannot have a page in the HTML ledger")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert "ext.html" in before and b"Index" not in before["index.html"]


def test_the_sanitiser_keeps_typical_formulas_whole():
    """A formula the allow-list emptied would be a silent loss: typical statements keep their elements."""
    for tex in [r"\mathbf{H}_1 = \operatorname{softmax}\left(\frac{QK^\top}{\sqrt{d}}\right)",
                r"\sum_{i=1}^{n} \hat{x}_i \;\quad \mathbb{R}^{N \times M}",
                r"\begin{pmatrix} a & b \\ c & d \end{pmatrix} \overline{y} \sqrt[3]{x}"]:
        html = str(mathml.math(tex, display=True))
        parsed = _harmless(html)
        assert {"mfrac", "msqrt", "msub", "msup", "mtable", "mover", "mroot", "munderover", "msubsup"} & \
            set(parsed.in_math)
        assert "".join(parsed.text).strip()



@pytest.mark.parametrize("missing", ["nh3", "latex2mathml"])
def test_without_the_sanitiser_formulas_are_latex_source_never_raw_mathml(monkeypatch, missing):
    """latex2mathml without nh3 (or the reverse): the page shows the LaTeX in ``<code>``, escaped."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == missing else real(name, *a))
    page = site_files([_record(PAYLOADS["text_script"])])["ext.html"]
    parsed = _harmless(page)
    assert "math" not in parsed.tags and '<code class="tex">\\text{&lt;script&gt;' in page
