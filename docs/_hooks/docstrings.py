"""griffe extension for the API reference: doctest examples as code blocks, Sphinx roles as inline code.

symuat's docstrings are numpydoc with doctests (run by ``pytest --doctest-modules``) and Sphinx roles
(``:func:`x```, ``:math:`x```); Markdown would read a doctest's output ``['a']`` as a link and a role as text.
"""

from __future__ import annotations

import re

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|math|const|ref):`~?([^`]+)`")
_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")


def markdown_docstring(text: str) -> str:
    """``text`` with each doctest block fenced (``pycon``), after an ``Examples`` header when a numpydoc section
    precedes it, and Sphinx roles as inline code."""
    lines = _ROLE.sub(lambda m: f"`{m.group(1)}`", text).split("\n")
    out: list[str] = []
    in_section = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if _UNDERLINE.match(line) and out and out[-1].strip():
            in_section = out[-1].strip() != "Examples"
        if line.lstrip().startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].strip())
                i += 1
            if in_section:
                out += ["", "Examples", "--------"]
                in_section = False
            out += [f"{indent}```pycon", *[indent + b for b in block], f"{indent}```"]
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


class DoctestBlocks(griffe.Extension):
    """Rewrite every docstring with :func:`markdown_docstring` once it is loaded."""

    def on_object(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)
