r"""Worked examples of seed 001 Figures 5–6 and App. A Figure 1, built by the engine.

Two heads, :math:`M=4` (head slices of width 2), :math:`N` tokens (default 2).  Each
function returns named explicit SymPy matrices, ready for the LaTeX printer.
"""

from __future__ import annotations

import sympy

from ..algebra.matrices import symbolic_matrix, vec_r
from .attention import MultiHeadAttention, PaperMultiHeadAttention

__all__ = ["figure5_example", "figure6_example", "appendix_a_figure1_example"]


def _layer(N: int) -> tuple[PaperMultiHeadAttention, sympy.ImmutableMatrix]:
    H = tuple(symbolic_matrix(f"h^{{({i})}}", N, N) for i in (1, 2))
    W_V = tuple(symbolic_matrix(f"v^{{({i})}}", 2, 2) for i in (1, 2))
    return PaperMultiHeadAttention(H, W_V, symbolic_matrix("o", 4, 4)), symbolic_matrix("x", N, 4)


def figure5_example(N: int = 2) -> dict[str, sympy.ImmutableMatrix]:
    r"""Figure 5: :math:`\hat H=\mathrm{Concat}(H_1x_1W_{V1},H_2x_2W_{V2})` and :math:`(W'_{HV})^Tx'=\hat H'`.

    >>> ex = figure5_example()
    >>> ex["W_HV"].shape, (ex["W_HV"] * ex["x'"] - ex["H_hat'"]).expand().is_zero_matrix
    ((8, 8), True)
    """
    paper, X = _layer(N)
    return {"X": X, "x'": vec_r(X), "W_HV": paper.as_standard().W_HV(),
            "H_hat'": vec_r(sympy.ImmutableMatrix.hstack(*paper.heads(X)))}


def figure6_example(N: int = 2) -> dict[str, sympy.ImmutableMatrix]:
    r"""Figure 6: :math:`W'_O=I_N\otimes W_O^T`, :math:`W'_{HVO}=W'_OW'_{HV}=\sum_hH_h\otimes(W_{V,h}W_{O,h})^T`.

    >>> ex = figure6_example()
    >>> (ex["W_HVO"] - ex["W_HVO_closed_form"]).expand().is_zero_matrix
    True
    """
    paper, X = _layer(N)
    std: MultiHeadAttention = paper.as_standard()
    return {"X": X, "x'": vec_r(X), "W_O": paper.W_O, "W_O'": std.W_O_prime(), "W_HV": std.W_HV(),
            "W_HVO": std.W_HVO(), "W_HVO_closed_form": std.W_HVO_closed_form(), "H_ring'": vec_r(paper.apply(X))}


def appendix_a_figure1_example(N: int = 2) -> dict[str, sympy.ImmutableMatrix]:
    r"""App. A Figure 1.d: one head, :math:`H_1[x_1W_{V1}]` and its matrix :math:`H_1\otimes W_{V1}^T`.

    >>> ex = appendix_a_figure1_example()
    >>> (ex["W_HV1"] * ex["x_1'"] - ex["H_hat_1'"]).expand().is_zero_matrix
    True
    """
    paper, X = _layer(N)
    x1 = sympy.ImmutableMatrix(X[:, :2])
    head = MultiHeadAttention(paper.H[:1], paper.W_V[0], sympy.eye(2))
    return {"x_1": x1, "x_1'": vec_r(x1), "H_1": paper.H[0], "W_V1": paper.W_V[0], "W_HV1": head.W_HV(),
            "H_hat_1'": vec_r(paper.heads(X)[0])}
