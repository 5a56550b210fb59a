r"""Break long LaTeX formulas across lines at normal size (no scaling).

A formula printed by SymPy or transcribed from the paper is one long string.
:func:`display` turns it into a display whose lines fit the text width:

* ``\left``/``\right`` pairs become plain delimiters (a ``\left`` group cannot
  span lines), and a function argument ``\sigma{\left(…\right)}`` loses its
  braces, so that a line may break inside the argument of :math:`\sigma`;
* the formula is cut before every binary ``+``, ``-`` and ``=`` outside braces
  and environments (matrices stay whole);
* the pieces are packed greedily into lines of at most ``budget`` points,
  by :func:`math_width`, a conservative estimate of the printed width at 11 pt.

The first line is flush left, continuation lines are indented by ``\qquad``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["LINE_BUDGET_PT", "plain_delimiters", "break_points", "math_width", "split_lines", "text_runs", "display",
           "breakable_id"]

#: Width of one display line in points (the text width is about 470 pt; the rest is indent and slack).
LINE_BUDGET_PT = 420.0

_LEFT_RIGHT = re.compile(r"\\(left|right)(?![A-Za-z])\s*(\\[A-Za-z]+|\\[{}|]|[.()\[\]|])")
_FUNCTION_BRACE = re.compile(r"(\\[A-Za-z]+)\{\(")

#: Estimated widths (pt at 11 pt) of commands; commands not listed count as one symbol.
_COMMAND_PT: Mapping[str, float] = {
    "mathbf": 0.0, "boldsymbol": 0.0, "mathrm": 0.0, "operatorname": 0.0, "tilde": 0.0, "hat": 0.0,
    "bigl": 0.0, "bigr": 0.0, "Bigl": 0.0, "Bigr": 0.0, "displaystyle": 0.0, "mathit": 0.0, "text": 0.0,
    ",": 2.0, ";": 3.0, "quad": 11.0, "qquad": 22.0, "!": -2.0, " ": 4.0,
    "otimes": 13.0, "odot": 13.0, "cdot": 8.0, "times": 13.0, "diamond": 11.0, "circ": 11.0,
    "sum": 16.0, "prod": 16.0, "frac": 0.0, "sqrt": 9.0, "ldots": 14.0, "cdots": 14.0, "dots": 14.0,
}
#: A sign right after one of these is unary (``(-x``, ``= -x``), not a place to break.
_NO_BREAK_AFTER = ("", "(", "[", "=", "+", "-", "&", "{", ",")
_ENVIRONMENT = re.compile(r"\\begin\{[A-Za-z*]+\}(\{[^}]*\})?")


def plain_delimiters(tex: str) -> str:
    r"""``tex`` with ``\left``/``\right`` pairs made plain and braces around function arguments dropped.

    Pairs around an environment (a matrix) keep their size.

    >>> plain_delimiters(r"\sigma{\left(W x \right)} + \left[a\right]")
    '\\sigma(W x ) + [a]'
    """
    marks = list(_LEFT_RIGHT.finditer(tex))
    keep: set[int] = set()
    stack: list[int] = []
    for k, m in enumerate(marks):
        if m.group(1) == "left":
            stack.append(k)
        elif stack:
            opened = stack.pop()
            if r"\begin{" in tex[marks[opened].end():m.start()]:
                keep.update((opened, k))
    out, pos = [], 0
    for k, m in enumerate(marks):
        out.append(tex[pos:m.start()])
        out.append(m.group(0) if k in keep else ("" if m.group(2) == "." else m.group(2)))
        pos = m.end()
    out.append(tex[pos:])
    out_text = "".join(out)
    while (m := _FUNCTION_BRACE.search(out_text)) is not None:
        start = m.end() - 2  # the "{"
        end = _matching(out_text, start, "{", "}")
        inner = out_text[start + 1:end]
        if end < 0 or _matching(inner, 0, "(", ")") != len(inner) - 1:
            break
        out_text = out_text[:start] + inner + out_text[end + 1:]
    return out_text


def _matching(text: str, start: int, opening: str, closing: str) -> int:
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "\\":
            continue
        if text[i] == opening and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif text[i] == closing and (i == 0 or text[i - 1] != "\\"):
            depth -= 1
            if depth == 0:
                return i
    return -1


def break_points(tex: str, inside_parentheses: bool = True) -> list[str]:
    r"""Cut ``tex`` before each binary ``+``, ``-``, ``=`` at brace depth 0 outside environments.

    With ``inside_parentheses=False`` only signs outside every ``(…)``/``[…]`` are cut.

    >>> break_points(r"a + b_{i+1} - \begin{matrix}x+y\end{matrix} = c")
    ['a ', '+ b_{i+1} ', '- \\begin{matrix}x+y\\end{matrix} ', '= c']
    """
    pieces, start, depth, env, parens, i = [], 0, 0, 0, 0, 0
    last = ""  # last non-space character outside commands, to tell binary from unary signs
    while i < len(tex):
        ch = tex[i]
        if ch == "\\":
            if tex.startswith(r"\begin{", i) or re.match(r"\\left(?![A-Za-z])", tex[i:]):
                env += 1
            elif tex.startswith(r"\end{", i) or re.match(r"\\right(?![A-Za-z])", tex[i:]):
                env -= 1
            m = re.match(r"\\([A-Za-z]+|.)", tex[i:])
            i += len(m.group(0)) if m else 1
            last = "x"
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch in "([":
            parens += 1
        elif ch in ")]":
            parens -= 1
        elif (ch in "+-=" and depth == 0 and env == 0 and (inside_parentheses or parens == 0)
              and last not in _NO_BREAK_AFTER):
            if tex[start:i].strip():
                pieces.append(tex[start:i])
                start = i
        if not ch.isspace():
            last = ch
        i += 1
    pieces.append(tex[start:])
    return pieces


def math_width(tex: str) -> float:
    r"""A conservative estimate of the printed width of inline math ``tex``, in points at 11 pt.

    >>> math_width("a+b") > math_width("ab") > math_width("a_b")
    True
    """
    if (env := _ENVIRONMENT.search(tex)) is not None:
        end = _environment_end(tex, env)
        inner = tex[env.end():end[0]]
        rows = re.split(r"\\\\", inner)
        cells = [[math_width(cell) for cell in row.split("&")] for row in rows]
        widest = sum(max(row[c] for row in cells if c < len(row)) + 10.0 for c in range(max(map(len, cells))))
        return math_width(tex[:env.start()]) + widest + math_width(tex[end[1]:])
    total, i = 0.0, 0
    stack = [(1.0, False)]  # (scale, bold) of each open brace group
    script = bold = False  # the next token is a sub/superscript; the next group is bold

    def add(pt: float) -> None:
        nonlocal total, script
        total += pt * stack[-1][0] * (0.7 if script else 1.0)
        script = False

    while i < len(tex):
        ch = tex[i]
        if ch == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", tex[i:])
            name = m.group(1)
            i += len(m.group(0))
            if name in ("mathbf", "boldsymbol"):
                bold = True
            elif name in ("{", "}"):
                add(5.5)
            else:
                pt = _COMMAND_PT.get(name, 7.0)
                if pt or not script:
                    add(pt)
            continue
        i += 1
        scale, in_bold = stack[-1]
        if ch in "_^":
            script = True
        elif ch == "{":
            stack.append((scale * (0.7 if script else 1.0), in_bold or bold))
            script = bold = False
        elif ch == "}":
            if len(stack) > 1:
                stack.pop()
        elif ch.isspace():
            continue
        elif ch in "+=<>-":
            add(12.0 if scale == 1.0 and not script else 8.0)
        elif ch.isupper():
            add(11.5 if (in_bold or bold) else 8.5)
        elif ch.isalnum():
            add(6.5 if (in_bold or bold) else 5.5)
        elif ch in "()[]|":
            add(4.5)
        elif ch in ",'":
            add(3.0)
        else:
            add(5.5)
    return total


def _environment_end(tex: str, begin: re.Match) -> tuple[int, int]:
    depth = 0
    for m in re.finditer(r"\\(begin|end)\{[A-Za-z*]+\}(\{[^}]*\})?", tex[begin.start():]):
        depth += 1 if m.group(1) == "begin" else -1
        if depth == 0:
            return begin.start() + m.start(), begin.start() + m.end()
    return len(tex), len(tex)


def split_lines(tex: str, budget: float = LINE_BUDGET_PT) -> list[str]:
    r"""``tex`` packed into lines of at most ``budget`` points (a piece wider than that gets its own line).

    >>> split_lines("a + b + c", budget=30)
    ['a + b', '+ c']
    """
    pieces = [tex]
    if math_width(tex) > budget:
        pieces = []
        for outer in break_points(plain_delimiters(tex), inside_parentheses=False):
            pieces.extend(break_points(outer) if math_width(outer) > budget - 22.0 else [outer])
    lines: list[str] = []
    current, width = "", 0.0
    for piece in pieces:
        w = math_width(piece)
        limit = budget if not lines else budget - 22.0
        lonely = not lines and width < 60.0 and r"\begin{" in piece  # a short left side before a matrix
        if current and width + w > limit and not lonely:
            lines.append(current.strip())
            current, width = "", 0.0
        current += piece
        width += w
    lines.append(current.strip())
    return lines


def text_runs(tex: str) -> list[tuple[bool, str]]:
    r"""``tex`` cut into ``(is_text, content)`` runs at its top-level ``\text{…}`` groups.

    >>> text_runs(r"\text{for } x \text{, done}")
    [(True, 'for '), (False, ' x '), (True, ', done')]
    """
    runs: list[tuple[bool, str]] = []
    pos = 0
    for m in re.finditer(r"\\text\{", tex):
        if m.start() < pos:
            continue
        end = _matching(tex, m.end() - 1, "{", "}")
        if end < 0:
            break
        if tex[pos:m.start()].strip():
            runs.append((False, tex[pos:m.start()]))
        runs.append((True, tex[m.end():end]))
        pos = end + 1
    if tex[pos:].strip():
        runs.append((False, tex[pos:]))
    return runs


def _prose(tex: str) -> str | None:
    runs = text_runs(tex)
    words = sum(len(c) for is_text, c in runs if is_text)
    if words < 40 or words < sum(len(c) for is_text, c in runs if not is_text):
        return None
    return "".join(c if is_text else f"${c.strip()}$" for is_text, c in runs)


def breakable_id(text: str) -> str:
    r"""A ledger id (already escaped) with a line-break opportunity after each ``.`` and ``:``.

    >>> breakable_id("duat:eq11.part2")
    'duat:\\allowbreak{}eq11.\\allowbreak{}part2'
    """
    return re.sub(r"([.:])", r"\1\\allowbreak{}", text)


def display(tex: str, budget: float = LINE_BUDGET_PT) -> str:
    r"""Display math for ``tex``: one ``\[…\]`` line, or ``aligned`` lines that fit the text width.

    A statement that is mostly words (``\text{…}`` groups) is set as a quotation in text mode instead.

    >>> display("a = b")
    '\\[a = b\\]'
    >>> print(display("a + b + c", budget=30))
    \[\begin{aligned}&a + b\\
    &\qquad + c\end{aligned}\]
    """
    prose = _prose(tex)
    if prose is not None:
        return rf"\begin{{quote}}\raggedright {prose}\end{{quote}}"
    lines = split_lines(tex, budget)
    if len(lines) == 1:
        return rf"\[{lines[0]}\]"
    body = "\\\\\n".join(("&" if n == 0 else r"&\qquad ") + line for n, line in enumerate(lines))
    return rf"\[\begin{{aligned}}{body}\end{{aligned}}\]"
