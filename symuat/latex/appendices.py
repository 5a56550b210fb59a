r"""Build the already-printed content of the LaTeX appendices.

Every function here returns plain data (strings of LaTeX printed by
:func:`~symuat.latex.printer.paper_latex`, ledger ids, statuses); the jinja2
templates only arrange it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import sympy

from ..algebra.matrices import symbolic_matrix, symbolic_vector, vec_r
from ..expansion import closed_forms, induction_proof, substitution_table, verify_depth
from ..layers.attention_figures import figure5_example, figure6_example
from ..layers.linear import FeatureLinear, TokenLinear
from ..ledger.audit import AuditRecord
from .display import split_lines
from .printer import paper_latex
from .sparsity import density, nonzero_pattern

__all__ = ["Equation", "Example", "Box", "matrix_vector_examples", "duat_boxes", "duat_proof", "chains"]


@dataclass(frozen=True)
class Equation:
    """A displayed equation: its label, the ledger id it names (may be empty) and printed lines."""

    label: str
    ledger_id: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Example:
    """A worked small example: caption, the explicit matrix–vector form and its non-zero pattern.

    ``figure`` names the sparsity figure (a file stem); ``pattern`` is the matrix's structurally
    non-zero entries, ``block`` the size of one Kronecker block (the figure's grid lines).
    """

    title: str
    ledger_id: str
    equation: str
    figure: str
    pattern: tuple[tuple[bool, ...], ...]
    block: tuple[int, int]
    density: str


@dataclass(frozen=True)
class Box:
    """One dashed box of seed 001 Figure 2: layer ``layer`` of the depth-``depth`` table."""

    depth: int
    layer: int
    rows: tuple[tuple[str, str], ...]


def _example(title: str, ledger_id: str, figure: str, block: tuple[int, int], equation: str,
             W: sympy.MatrixBase) -> Example:
    return Example(title, ledger_id, equation, figure, nonzero_pattern(W), block, sympy.latex(density(W)))


def _product(lhs: str, W: sympy.MatrixBase, x: sympy.MatrixBase, b: sympy.MatrixBase | None = None) -> str:
    return f"{lhs} = {paper_latex(W)} {paper_latex(x)}" + (f" + {paper_latex(b)}" if b is not None else "")


def layer_equations() -> tuple[Equation, ...]:
    r"""The matrix–vector form of every layer, printed from SymPy matrix expressions (symbolic sizes)."""
    N, M, F = sympy.symbols("N M F", positive=True, integer=True)
    W, Wf = sympy.MatrixSymbol("W", N, N), sympy.MatrixSymbol("W", F, M)
    X = sympy.MatrixSymbol("X", N, M)
    b = sympy.MatrixSymbol("b", F, 1)
    ones = sympy.OneMatrix(N, 1)
    kp = sympy.kronecker_product
    vec = sympy.Function(r"\operatorname{vec}_r")
    return (
        Equation("token-linear", "duat:eq5", (
            rf"{vec.__name__}\left({paper_latex(W * X)}\right) = "
            rf"\left({paper_latex(kp(W, sympy.Identity(M)))}\right) {vec.__name__}\left({paper_latex(X)}\right)",)),
        Equation("feature-linear", "duat:eq6", (
            rf"{vec.__name__}\left({paper_latex(X * Wf.T + ones * b.T)}\right) = "
            rf"\left({paper_latex(kp(sympy.Identity(N), Wf))}\right) {vec.__name__}\left({paper_latex(X)}\right)"
            rf" + {paper_latex(kp(ones, b))}",)),
    )


def matrix_vector_examples(extra: Iterable[Example] = ()) -> tuple[Example, ...]:
    """Small explicit examples of Linear layers (seed 001 Fig. 3 style), then any ``extra`` ones."""
    W = symbolic_matrix("W", 2, 2)
    x = symbolic_matrix("X", 2, 3)
    token = TokenLinear(W).matrix_vector_form(3)
    Wf, bf = symbolic_matrix("W", 2, 3), symbolic_vector("b", 2)
    feature = FeatureLinear(Wf, bf).matrix_vector_form(2)
    return (
        _example(r"Token-mixing Linear $\mathbf{Y}=\mathbf{W}\mathbf{X}$, $N=2$, $M=3$: "
                 r"$\mathbf{W}'=\mathbf{W}\otimes\mathbf{I}_3$", "duat:eq5", "fig-token-linear", (3, 3),
                 _product(r"\mathbf{y}'", token.W_prime, vec_r(x)), token.W_prime),
        _example(r"Feature-mixing Linear $\mathbf{Y}=\mathbf{X}\mathbf{W}^T+\mathbf{1}\mathbf{b}^T$, $N=2$, "
                 r"$M=3\to2$: $\mathbf{W}'=\mathbf{I}_2\otimes\mathbf{W}$", "duat:eq6", "fig-feature-linear",
                 (2, 3), _product(r"\mathbf{y}'", feature.W_prime, vec_r(x), feature.b_prime), feature.W_prime),
        *extra,
    )


def attention_examples() -> tuple[Example, ...]:
    r"""Seed 001 Figures 5–6 (two heads, :math:`N=2`, :math:`M=4`), explicit matrices from the engine."""
    f5, f6 = figure5_example(), figure6_example()
    W_HVO = f6["W_HVO"].applyfunc(sympy.expand)
    W_O = f6["W_O'"]
    closed = (r"\mathbf{W}'_{HVO}=\mathbf{W}'_{O}\mathbf{W}'_{HV}="
              r"\sum_{h=1}^{2}\mathbf{H}_h\otimes(\mathbf{W}_{V,h}\mathbf{W}_{O,h})^T")
    return (
        _example(r"Paper Fig.~5: $\hat{\mathbf{H}}=\mathrm{Concat}(\mathbf{H}_1\mathbf{x}_1\mathbf{W}_{V1},"
                 r"\mathbf{H}_2\mathbf{x}_2\mathbf{W}_{V2})$, two heads, $N=2$, $M=4$", "duat:fig5", "fig-paper-fig5",
                 (4, 4), rf"\hat{{\mathbf{{H}}}}' = {paper_latex(f5['W_HV'])}\,\mathbf{{x}}'", f5["W_HV"]),
        _example(r"Paper Fig.~6: $\mathbf{W}'_{O}=\mathbf{I}_N\otimes\mathbf{W}_O^T$", "duat:fig6",
                 "fig-paper-fig6", (4, 4), rf"\mathbf{{W}}'_O = {paper_latex(W_O)}", W_O),
        _example(r"$\mathbf{W}'_{HVO}$ (dense: every output entry mixes every token)", "duat:eq10", "fig-w-hvo",
                 (4, 4), closed, W_HVO),
    )


def duat_boxes(depth: int) -> tuple[tuple[Box, ...], tuple[str, ...], bool]:
    """Figure-2 boxes of the depth-``depth`` table, the form's printed lines, and the local verification."""
    table = substitution_table(depth)
    boxes = tuple(
        Box(depth, i, tuple((paper_latex(r.symbol), paper_latex(r.definition)) for r in table.box(i)))
        for i in range(1, depth + 1)
    )
    return boxes, tuple(split_lines(paper_latex(table.form()), 330)), verify_depth(depth, table).holds


def duat_closed_forms(depth: int) -> tuple[tuple[str, str, bool], ...]:
    """Closed forms of the DUAT expansion (docs/conventions.md) at ``depth``: (name, product, proved)."""
    return tuple((paper_latex(sympy.Symbol(c.name, commutative=False)), paper_latex(c.expected), c.holds)
                 for c in closed_forms(depth))


def duat_proof() -> dict[str, object]:
    """The induction proof: base case, step sides (expanded), verdict."""
    proof = induction_proof()
    return {
        "holds": proof.holds,
        "detail": proof.detail,
        "base": (paper_latex(proof.base.lhs), paper_latex(proof.base.rhs), proof.base.holds),
        "step_lhs": tuple(split_lines(paper_latex(proof.step.lhs))),
        "step_rhs": tuple(split_lines(paper_latex(proof.step.rhs))),
        "step_holds": proof.step.holds,
    }


#: Equations of seed 001 that belong to the DUAT derivation (Eq. 11-12, App. B Eq. 19-34).
DUAT_EQUATIONS = frozenset({11, 12, *range(19, 35)})


def _in_duat_derivation(entry_id: str) -> bool:
    version, place = entry_id.split(":", 1)
    if version != "duat":
        return False
    head = place.split(".")[0]
    return place.startswith("appB") or (head.startswith("eq") and int(head[2:]) in DUAT_EQUATIONS)


def chains(records: Sequence[AuditRecord]) -> tuple[tuple[str, tuple[AuditRecord, ...]], ...]:
    """Ledger records of the DUAT derivation grouped by printed equation (``duat:eq22.step3`` → ``duat:eq22``)."""
    groups: dict[str, list[AuditRecord]] = {}
    for r in records:
        if _in_duat_derivation(r.entry.id):
            groups.setdefault(r.entry.id.split(".")[0], []).append(r)
    return tuple((k, tuple(v)) for k, v in groups.items())
