r"""Print a substitution table for ``symuat derive``: plain text, or a complete LaTeX ``align*`` environment.

Both formats list the same rows in the same order: the terms of every sum are
sorted naturally by their plain-text form (:math:`\tilde U_{10}` after
:math:`\tilde U_9`, not after :math:`\tilde U_1`), the residual term is called
:math:`\mathrm{UAT}^R_i` as in the paper (seed 001 Eq. 11), and
:math:`\tilde A_0` is the identity :math:`I`.  The LaTeX needs only ``amsmath``
and the project's macros (``latex/symuat-macros.tex``).
"""

from __future__ import annotations

import re

import sympy
from sympy.printing.str import StrPrinter

from .expansion.table import A_name, SubstitutionTable
from .latex.printer import PaperLatexPrinter

__all__ = ["natural_key", "table_text", "table_latex"]

#: Terms per line of a long sum in the LaTeX output.
_PER_LINE = 3


def natural_key(text: str) -> tuple:
    r"""Sort key that compares runs of digits as numbers.

    >>> sorted(["U_{10}", "U_{9}", "U_{1}"], key=natural_key)
    ['U_{1}', 'U_{9}', 'U_{10}']
    """
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text) if part)


def _join(printed: list[str]) -> str:
    out = printed[0]
    for term in printed[1:]:
        out += f" - {term[1:].lstrip()}" if term.startswith("-") else f" + {term}"
    return out


class _TextPrinter(StrPrinter):
    def _print_Symbol(self, expr):
        return "UAT^R" + expr.name[1:] if expr.name.startswith("R_{") else expr.name

    def _print_Add(self, expr, order=None):
        return _join(sorted((self._print(t) for t in expr.args), key=natural_key))


class _LatexPrinter(PaperLatexPrinter):
    def _print_Add(self, expr, order=None):
        return _join([self._print(t) for t in _ordered_terms(expr)])


def _text(expr: sympy.Basic) -> str:
    return _TextPrinter().doprint(expr)


def _ordered_terms(expr: sympy.Basic) -> list[sympy.Expr]:
    """The terms of a sum in the order of their plain-text form (one order for every format)."""
    return sorted(sympy.Add.make_args(expr), key=lambda t: natural_key(_text(t)))


def _is_identity_row(name: str, definition: sympy.Expr) -> bool:
    return name == A_name(0) and definition == 1


def table_text(table: SubstitutionTable) -> str:
    r"""One box per layer, ``name = definition`` per row, then the DUAT form (plain text)."""
    lines = []
    for i in range(table.depth + 1):
        lines.append(f"[layer {i}]")
        for row in table.box(i):
            value = "I" if _is_identity_row(row.name, row.definition) else _text(row.definition)
            lines.append(f"  {_text(row.symbol)} = {value}")
    lines.append(f"x'_{{{table.depth}}} = {_text(table.form())}")
    return "\n".join(lines)


def _latex_sum(expr: sympy.Expr) -> list[str]:
    printer = _LatexPrinter({"order": "none"})
    terms = _ordered_terms(expr)
    chunks = [terms[k:k + _PER_LINE] for k in range(0, len(terms), _PER_LINE)]
    return [_join([printer.doprint(t) for t in chunk]) for chunk in chunks]


def _latex_row(lhs: str, expr: sympy.Expr) -> list[str]:
    first, *rest = _latex_sum(expr)
    lines = [f"{lhs} &= {first}"]
    lines += [f"&\\quad {'' if part.startswith('-') else '+ '}{part}" for part in rest]
    return lines


def table_latex(table: SubstitutionTable) -> str:
    r"""The table and the DUAT form as one ``align*`` environment, a comment line before each box."""
    printer = _LatexPrinter({"order": "none"})
    lines = [f"% symuat derive --depth {table.depth}: substitution table (one box per layer) and the DUAT form",
             r"\begin{align*}"]
    for i in range(table.depth + 1):
        lines.append(f"% box {i}")
        for row in table.box(i):
            lhs = printer.doprint(row.symbol)
            if _is_identity_row(row.name, row.definition):
                lines.append(rf"{lhs} &= \mathbf{{I}}")
            else:
                lines.extend(_latex_row(lhs, row.definition))
    lines.extend(_latex_row(f"\\mathbf{{x}}'_{{{table.depth}}}", table.form()))
    body = lines[2:]
    ended = [line if line.startswith("%") or k == len(body) - 1 else line + r" \\" for k, line in enumerate(body)]
    return "\n".join(lines[:2] + ended + [r"\end{align*}"])
