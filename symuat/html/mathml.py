r"""LaTeX as printed → MathML for the HTML ledger (``symuat html``), and LaTeX text mode → HTML.

Math is converted with ``latex2mathml`` (the optional extra ``symuat[html]``) into MathML Core, which browsers
render without scripts or fonts from a CDN.  Without ``latex2mathml`` the LaTeX source is shown in ``<code>``
(the site says so on every page): never a half-converted formula.
"""

from __future__ import annotations

import html
import importlib
import importlib.util
import re

from markupsafe import Markup

__all__ = ["mathml_available", "math", "text"]


def mathml_available() -> bool:
    """Whether ``latex2mathml`` (``pip install 'symuat[html]'``) is installed; imported only when converting."""
    return importlib.util.find_spec("latex2mathml") is not None


#: ``\text{…}`` in a formula: latex2mathml prints its argument verbatim, so text-mode commands are resolved first.
_TEXT_ARG = re.compile(r"\\text\{((?:[^{}]|\{[^{}]*\})*)\}")
_TEXT_MODE = ((r"\ldots{}", "\u2026"), (r"\ldots", "\u2026"), (r"\dots", "\u2026"), (r"\%", "%"), (r"\&", "&"),
              (r"\_", "_"), ("~", "\u00a0"), ("---", "\u2014"), ("--", "\u2013"))


def _text_mode(match: re.Match) -> str:
    arg = match.group(1)
    for old, new in _TEXT_MODE:
        arg = arg.replace(old, new)
    return "\\text{" + arg + "}"


def math(tex: str, display: bool = False) -> Markup:
    r"""One formula as MathML (``display``: a block), or its LaTeX source in ``<code>`` without latex2mathml.

    >>> "<msup><mi>x</mi><mn>2</mn></msup>" in math("x^2") or not mathml_available()
    True
    >>> "\\ldots" not in math(r"\text{and so on \ldots}") or not mathml_available()
    True
    """
    if not mathml_available():
        return Markup('<code class="tex">{}</code>').format(tex)
    converter = importlib.import_module("latex2mathml.converter")
    return Markup(converter.convert(_TEXT_ARG.sub(_text_mode, tex), display="block" if display else "inline"))


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
