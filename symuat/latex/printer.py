r"""A SymPy LaTeX printer for the paper's notation (seed 001).

* matrices and vectors bold, primes for matrix–vector forms:
  ``W'_{i,1}`` → :math:`\mathbf{W}'_{i,1}`, ``x'_{0}`` → :math:`\mathbf{x}'_{0}`;
* the table's quantities with tildes: :math:`\tilde{\mathbf{A}}_i`,
  :math:`\tilde{\mathbf{U}}^{(i)}_j`, :math:`\tilde{\boldsymbol\beta}_i`;
* entries of explicit matrices in lowercase, as the paper prints them
  (``W_{1,2}`` → :math:`w_{1,2}`);
* :math:`\sigma(\cdot)` for the activation.

Use :func:`paper_latex`; :func:`latex_lines` breaks a long sum over lines.
"""

from __future__ import annotations

import sympy
from sympy.printing.latex import LatexPrinter

from ..names import structure

__all__ = ["PaperLatexPrinter", "paper_latex", "latex_lines"]


def _bold(head: str) -> str:
    return rf"\boldsymbol{{{head}}}" if head.startswith("\\") else rf"\mathbf{{{head}}}"


class PaperLatexPrinter(LatexPrinter):
    """LaTeX printer with the paper's conventions for symuat's symbol names."""

    printmethod = "_latex"

    def _print_Symbol(self, expr, style="plain"):
        name = expr.name
        found = structure(expr)
        typeset = found.latex(commutative=bool(expr.is_commutative)) if found is not None else None
        if typeset is not None:
            return typeset
        if "{" in name or "\\" in name:
            return name
        return super()._print_Symbol(expr, style=style)

    def _print_MatrixSymbol(self, expr):
        name = expr.name
        return _bold(name) if len(name) == 1 or name.startswith("\\") else name

    def _print_OneMatrix(self, expr):
        return r"\mathbf{1}_{%s}" % self._print(expr.shape[0])

    def _print_Identity(self, expr):
        return r"\mathbf{I}_{%s}" % self._print(expr.shape[0])

    def _print_Function(self, expr, exp=None):
        if expr.func.__name__ == "sigma":
            inner = self._print(expr.args[0])
            out = rf"\sigma\left({inner}\right)"
            return f"{out}^{{{exp}}}" if exp else out
        return super()._print_Function(expr, exp=exp)


def paper_latex(expr: sympy.Basic, **settings) -> str:
    r"""LaTeX of ``expr`` in the paper's notation.

    >>> W, x = sympy.Symbol("W'_{1,1}", commutative=False), sympy.Symbol("x'_{0}", commutative=False)
    >>> paper_latex(sympy.Function("sigma")(W * x))
    "\\sigma\\left(\\mathbf{W}'_{1,1} \\mathbf{x}'_{0}\\right)"
    """
    settings.setdefault("order", "none")
    return PaperLatexPrinter(settings).doprint(expr)


def latex_lines(expr: sympy.Basic, per_line: int = 3) -> list[str]:
    """The terms of a sum, ``per_line`` at a time, printed and joined with ``+`` (for ``aligned``)."""
    terms = list(sympy.Add.make_args(expr))
    chunks = [terms[i:i + per_line] for i in range(0, len(terms), per_line)]
    lines = []
    for n, chunk in enumerate(chunks):
        text = " + ".join(paper_latex(t) for t in chunk)
        lines.append(text if n == 0 else "+ " + text)
    return [line.replace("+ -", "- ") for line in lines]
