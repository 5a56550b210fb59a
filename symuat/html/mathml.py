r"""LaTeX as printed → MathML for the HTML ledger (``symuat html``), and LaTeX text mode → HTML.

Math is converted with ``latex2mathml`` (the optional extra ``symuat[html]``) into MathML Core, which browsers
render without scripts or fonts from a CDN.  latex2mathml copies ``\text``, ``\tag``, ``\unicode`` and ``\href``
arguments into its output unescaped, so its output is never trusted as HTML: it passes through ``nh3`` (Ammonia)
with an allow-list of MathML elements (:data:`MATHML_TAGS`) and attributes (:data:`MATHML_ATTRIBUTES`), whose
values must be plain words, lengths or colours; no link, no style, no event handler, no ``javascript:`` survives.
Without ``latex2mathml`` or ``nh3`` the LaTeX source is shown in ``<code>`` (the site says so on every page):
never a half-converted or unsanitised formula.
"""

from __future__ import annotations

import html
import importlib
import importlib.util
import re

from markupsafe import Markup

__all__ = ["MATHML_TAGS", "MATHML_ATTRIBUTES", "mathml_available", "sanitize", "math", "text"]

#: The MathML elements a formula may hold (MathML Core and ``menclose``); no ``semantics``/``annotation-xml``
#: (an HTML integration point), no ``maction``, no HTML element.
MATHML_TAGS = frozenset({
    "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msub", "msup", "msubsup", "munder", "mover",
    "munderover", "mmultiscripts", "mprescripts", "none", "mfrac", "msqrt", "mroot", "mstyle", "mpadded",
    "mphantom", "merror", "menclose", "mtable", "mtr", "mtd",
})
_PRESENTATION = {"mathvariant", "mathcolor", "mathbackground", "mathsize", "displaystyle", "scriptlevel", "dir"}
#: Element → its allowed attributes (``"*"``: on every element).  No ``href``, ``src``, ``style``, ``class``,
#: ``id`` or ``on*``.
MATHML_ATTRIBUTES = {
    "*": frozenset(_PRESENTATION),
    "math": frozenset({"xmlns", "display"}),
    "mo": frozenset({"fence", "form", "stretchy", "symmetric", "largeop", "movablelimits", "accent", "lspace",
                     "rspace", "minsize", "maxsize", "separator"}),
    "mover": frozenset({"accent"}), "munder": frozenset({"accentunder"}),
    "munderover": frozenset({"accent", "accentunder"}),
    "mfrac": frozenset({"linethickness"}), "menclose": frozenset({"notation"}),
    "mspace": frozenset({"width", "height", "depth", "linebreak"}),
    "mpadded": frozenset({"width", "height", "depth", "lspace", "voffset"}),
    "mtable": frozenset({"columnalign", "rowalign", "columnlines", "rowlines", "columnspacing", "rowspacing",
                         "frame"}),
    "mtr": frozenset({"columnalign", "rowalign"}),
    "mtd": frozenset({"columnalign", "rowalign", "columnspan", "rowspan"}),
}
_MATHML_NS = "http://www.w3.org/1998/Math/MathML"
#: An attribute value that is a word, a number, a length or a colour (``red``, ``-0.167em``, ``#ff0000``,
#: ``left center``): no ``:``, quote, parenthesis or anything else a URL or a script needs.
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9#%+.\- ]*")


def mathml_available() -> bool:
    """Whether ``latex2mathml`` and ``nh3`` (both in ``pip install 'symuat[html]'``) are installed; imported only
    when converting."""
    return all(importlib.util.find_spec(name) is not None for name in ("latex2mathml", "nh3"))


def _attribute(element: str, attribute: str, value: str) -> str | None:
    if element == "math" and attribute == "xmlns":
        return value if value == _MATHML_NS else None
    return value if _PLAIN_VALUE.fullmatch(value) else None


def sanitize(mathml: str) -> str:
    r"""``mathml`` through the allow-list (:data:`MATHML_TAGS`, :data:`MATHML_ATTRIBUTES`) with ``nh3``: any
    other element is dropped (``script`` and ``style`` with their content, others keep their text), as is any
    other attribute or any value that is not a plain word, length or colour.

    >>> sanitize('<math><mi onclick="alert(1)">x</mi><mtext><script>alert(1)</script>y</mtext></math>')
    '<math><mi>x</mi><mtext>y</mtext></math>'
    """
    nh3 = importlib.import_module("nh3")
    return nh3.clean(mathml, tags=set(MATHML_TAGS), attributes={k: set(v) for k, v in MATHML_ATTRIBUTES.items()},
                     attribute_filter=_attribute, url_schemes=set(), link_rel=None, strip_comments=True,
                     generic_attribute_prefixes=set())


#: ``\text{…}`` in a formula: latex2mathml prints its argument verbatim, so text-mode commands are resolved first.
_TEXT_ARG = re.compile(r"\\text\{((?:[^{}]|\{[^{}]*\})*)\}")
_TEXT_MODE = ((r"\ldots{}", "\u2026"), (r"\ldots", "\u2026"), (r"\dots", "\u2026"), (r"\%", "%"), (r"\&", "&"),
              (r"\_", "_"), ("~", "\u00a0"), ("---", "\u2014"), ("--", "\u2013"))


#: latex2mathml unescapes ``&lt;``, ``&gt;`` and ``&amp;`` in what it prints; numeric references survive it.
_TEXT_MARKUP = (("&", "&#x26;"), ("<", "&#x3C;"), (">", "&#x3E;"))


def _text_mode(match: re.Match) -> str:
    arg = match.group(1)
    for old, new in _TEXT_MODE:
        arg = arg.replace(old, new)
    for old, new in _TEXT_MARKUP:  # "<b>" in \text is shown as typed, never parsed
        arg = arg.replace(old, new)
    return "\\text{" + arg + "}"


def math(tex: str, display: bool = False) -> Markup:
    r"""One formula as sanitised MathML (``display``: a block; :func:`sanitize`), or its LaTeX source in ``<code>``
    without latex2mathml and nh3.

    >>> "<msup><mi>x</mi><mn>2</mn></msup>" in math("x^2") or not mathml_available()
    True
    >>> "\\ldots" not in math(r"\text{and so on \ldots}") or not mathml_available()
    True
    """
    if not mathml_available():
        return Markup('<code class="tex">{}</code>').format(tex)
    converter = importlib.import_module("latex2mathml.converter")
    mathml = converter.convert(_TEXT_ARG.sub(_text_mode, tex), display="block" if display else "inline")
    return Markup(sanitize(mathml))


_TEXT_COMMANDS = {"texttt": "code", "emph": "em", "textit": "em", "textbf": "strong", "text": "span"}
_TOKEN = re.compile(r"\$(?P<math>(?:\\.|[^$\\])+)\$"
                    r"|\\(?P<cmd>texttt|emph|textit|textbf|text)\{(?P<arg>(?:[^{}]|\{[^{}]*\})*)\}"
                    r"|(?P<esc>\\[_%&#${}]|\\textbackslash\{\}|~|---|--|``|''|\\ldots\{\}|\\ldots)")
_ESCAPES = {"~": "\u00a0", "---": "\u2014", "--": "\u2013", "``": "\u201c", "''": "\u201d",
            r"\ldots{}": "\u2026", r"\ldots": "\u2026", r"\textbackslash{}": "\\"}


def text(tex: str) -> Markup:
    r"""LaTeX text mode (notes, prose reasons) as HTML: ``$…$`` as MathML, ``\texttt``/``\emph`` as tags.

    >>> str(text(r"see \texttt{a\_b}, ``quoted'' -- done"))
    'see <code>a_b</code>, “quoted” – done'
    """
    out: list[str] = []
    pos = 0
    for m in _TOKEN.finditer(tex):
        out.append(html.escape(tex[pos:m.start()], quote=False))
        if m.group("math") is not None:
            out.append(str(math(m.group("math"))))
        elif m.group("cmd") is not None:
            tag = _TEXT_COMMANDS[m.group("cmd")]
            out.append(f"<{tag}>{text(m.group('arg'))}</{tag}>")
        else:
            esc = m.group("esc")
            out.append(html.escape(_ESCAPES.get(esc, esc[1:] if esc.startswith("\\") else esc), quote=False))
        pos = m.end()
    out.append(html.escape(tex[pos:], quote=False))
    return Markup("".join(out))
