r"""Linear layers and the FFN as matrix–vector products (seed 001 Eq. 3, 5, 6, Fig. 3; seed 004 Eq. 3, 5, 15).

Each identity compares the layer's definition (``lhs``, a SymPy matrix product and
a direct NumPy computation for the float level) with the matrix–vector form
derived by :mod:`symuat.layers.linear` (``rhs``).
"""

from __future__ import annotations

import numpy as np
import sympy

from symuat import Entry, Identity, Readings, Status, dims_grid
from symuat.algebra.diamond import diamond
from symuat.algebra.matrices import kron, vec_r
from symuat.evidence.fields import logistic
from symuat.layers.linear import FFN, FeatureLinear, TokenLinear

_NM = dims_grid(N=(1, 2, 3), M=(1, 2, 3))
_SCOPE_NM = "Every entry is a polynomial identity in the symbols, so the grid covers all index patterns up to N, M = 3."


def method_identity() -> Identity:
    r"""T(X) = A X B  ↦  (A ⊗ Bᵀ) vec_r(X): the Matrix–Vector Method for every two-sided linear map."""
    return Identity(
        shapes=lambda d: {"A": (d["N"], d["N"]), "X": (d["N"], d["M"]), "B": (d["M"], d["M"])},
        lhs=lambda e, d: vec_r(e["A"] * e["X"] * e["B"]),
        rhs=lambda e, d: kron(e["A"], e["B"].T) * vec_r(e["X"]),
        dims=_NM,
        reference=lambda a, d: (a["A"] @ a["X"] @ a["B"]).reshape(-1),
        random_dims={"N": 4, "M": 5},
        scope=_SCOPE_NM,
    )


def _token_linear() -> Identity:
    return Identity(
        shapes=lambda d: {"W": (d["N"], d["N"]), "X": (d["N"], d["M"])},
        lhs=lambda e, d: vec_r(TokenLinear(e["W"]).apply(e["X"])),
        rhs=lambda e, d: TokenLinear(e["W"]).matrix_vector_form(d["M"]).apply(vec_r(e["X"])),
        dims=_NM,
        reference=lambda a, d: (a["W"] @ a["X"]).reshape(-1),
        random_dims={"N": 4, "M": 5},
        scope=_SCOPE_NM,
    )


def _printed_linear_matrix(W: sympy.MatrixBase, m: int) -> sympy.ImmutableMatrix:
    r"""The matrix displayed in seed 004 Eq. 15: entry ((k,l),(i,j)) = w_{i,k} δ_{lj}, built from the display."""
    n = W.shape[0]
    return sympy.ImmutableMatrix(
        n * m, n * m, lambda r, c: W[c // m, r // m] if r % m == c % m else sympy.S.Zero
    )


def printed_eq15_identity() -> Identity:
    return Identity(
        shapes=lambda d: {"W": (d["N"], d["N"]), "X": (d["N"], d["M"])},
        lhs=lambda e, d: vec_r(e["W"] * e["X"]),
        rhs=lambda e, d: diamond(_printed_linear_matrix(e["W"], d["M"]), vec_r(e["X"])),
        dims=_NM,
        reference=lambda a, d: (a["W"] @ a["X"]).reshape(-1),
        random_dims={"N": 4, "M": 3},
        scope=_SCOPE_NM,
    )


def diamond_transpose_identity() -> Identity:
    return Identity(
        shapes=lambda d: {"W": (d["N"] * d["M"], d["N"] * d["M"]), "x": (d["N"] * d["M"], 1)},
        lhs=lambda e, d: diamond(e["W"], e["x"]),
        rhs=lambda e, d: e["W"].T * e["x"],
        dims=dims_grid(N=(1, 2), M=(1, 2)),
        reference=lambda a, d: a["W"].T @ a["x"],
        random_dims={"N": 2, "M": 3},
    )


def _density() -> Identity:
    def nnz_fraction(e, d):
        Wp = TokenLinear(e["W"]).matrix_vector_form(d["M"]).W_prime
        nonzero = sum(1 for v in Wp if v != 0)
        return sympy.Matrix([[sympy.Rational(nonzero, len(Wp))]])

    return Identity(
        shapes=lambda d: {"W": (d["N"], d["N"])},
        lhs=nnz_fraction,
        rhs=lambda e, d: sympy.Matrix([[sympy.Rational(1, d["M"])]]),
        dims=_NM,
        reference=lambda a, d: np.array([np.count_nonzero(np.kron(a["W"], np.eye(d["M"]))) / (d["N"] * d["M"]) ** 2]),
        random_dims={"N": 5, "M": 4},
        scope="Density counts structurally non-zero entries of W' for a generic (all non-zero) W.",
    )


def ffn_identity(kind: str) -> Identity:
    """FFN, Eq. 6, with both linear maps mixing ``"token"`` s or ``"feature"`` s (also used for Eq. 29)."""
    if kind == "token":
        shapes = lambda d: {"X": (d["N"], d["M"]), "W1": (d["F"], d["N"]), "b1": (d["F"], 1),  # noqa: E731
                            "W2": (d["N"], d["F"]), "b2": (d["N"], 1)}
        layer = lambda e: FFN(TokenLinear(e["W1"], e["b1"]), TokenLinear(e["W2"], e["b2"]))  # noqa: E731
        reference = lambda a, d: (a["W2"] @ logistic(a["W1"] @ a["X"] + a["b1"]) + a["b2"]).reshape(-1)  # noqa: E731
    else:
        shapes = lambda d: {"X": (d["N"], d["M"]), "W1": (d["F"], d["M"]), "b1": (d["F"], 1),  # noqa: E731
                            "W2": (d["M"], d["F"]), "b2": (d["M"], 1)}
        layer = lambda e: FFN(FeatureLinear(e["W1"], e["b1"]), FeatureLinear(e["W2"], e["b2"]))  # noqa: E731
        reference = lambda a, d: (logistic(a["X"] @ a["W1"].T + a["b1"].T) @ a["W2"].T + a["b2"].T).reshape(-1)  # noqa: E731
    return Identity(
        shapes=shapes,
        lhs=lambda e, d: vec_r(layer(e).apply(e["X"])),
        rhs=lambda e, d: layer(e).apply_matrix_vector(vec_r(e["X"]), d["N"], d["M"]),
        dims=dims_grid(N=(1, 2), M=(1, 2), F=(1, 2, 3)),
        reference=reference,
        random_dims={"N": 3, "M": 4, "F": 5},
        scope="sigma is an uninterpreted elementwise function; the float level uses the logistic sigmoid.",
    )


_EQ3 = r"\mathbf{y} = T(\mathbf{x}|\mathbf{W}) \mapsto \mathbf{y}' = \mathbf{W}'\mathbf{x}'"
_EQ6 = (r"FFN(\mathbf{x}) = \mathbf{W}_2 \sigma(\mathbf{W}_1 \mathbf{x} + \mathbf{b}_1) + \mathbf{b}_2"
        r" \mapsto \mathbf{W}_2' \sigma(\mathbf{W}_1' \mathbf{x}' + \mathbf{b}_1') + \mathbf{b}_2'")


def entries() -> list[Entry]:
    method_note = ("Checked for every linear T(X) = A X B (token- and feature-mixing Linear layers are the cases "
                   "B = I and A = I); W' = A ⊗ Bᵀ under row-major vec_r. MHA is Eq. 9.")
    return [
        Entry("duat:eq3", "Eq. 3", _EQ3, Status.PROVED, method_identity(), note=method_note),
        Entry("uat-arxiv:eq3", "Eq. 3",
              r"\mathbf{y}=T(\mathbf{x}|\mathbf{W})\rightarrow\mathbf{y}^{\prime}=\mathbf{W}^{\prime}\mathbf{x}^{\prime}",
              Status.PROVED, method_identity(), note=method_note),
        Entry("duat:eq5", "Eq. 5",
              r"\mathbf{x}_{i+1} = \mathbf{W}_i \mathbf{x}_i \mapsto \mathbf{x}'_{i+1} = \mathbf{W}'_i \mathbf{x}'_i",
              Status.PROVED, _token_linear(),
              note="W_i ∈ R^{N×N} mixes tokens; W'_i = W_i ⊗ I_M (the paper's renaming of (W'_i)ᵀ to W'_i "
                   "is a convention, not a new matrix)."),
        Entry("uat-arxiv:eq5.step1", "Eq. 5, first arrow",
              r"\mathbf{x}_{i+1}=\mathbf{W}_{i}\mathbf{x}^{i}\rightarrow\mathbf{x}_{i+1}^{\prime}"
              r"=\mathbf{W}_{i}^{\prime}\diamond\mathbf{x}_{i}^{\prime}",
              Status.PROVED, printed_eq15_identity(),
              note="W'_i is the matrix displayed in App. B.1 Eq. 15 (W_iᵀ ⊗ I_M); the superscript in x^i is read as x_i."),
        Entry("uat-arxiv:eq5.step2", "Eq. 5, second equality",
              r"\mathbf{W}_{i}^{\prime}\diamond\mathbf{x}_{i}^{\prime}=(\mathbf{W}_{i}^{\prime})^{T}\mathbf{x}_{i}^{\prime}",
              Status.PROVED, diamond_transpose_identity()),
        Entry("uat-arxiv:eq15", "App. B.1, Eq. 15",
              r"\mathbf{W}\mathbf{x}=\mathbf{y}\rightarrow\left(\begin{array}{ccc}w_{1,1}&0&\cdots\\0&w_{1,1}&\cdots\\"
              r"\vdots&\vdots&\cdots\\w_{1,2}&0&\cdots\\\vdots&\vdots&\cdots\\w_{1,n}&0&\cdots\end{array}\right)"
              r"\diamond\mathbf{x}'=\mathbf{y}'",
              Status.PROVED, printed_eq15_identity(),
              note="The displayed matrix has entry ((k,l),(i,j)) = w_{i,k} δ_{lj}; it is rebuilt from that pattern, "
                   "not from a Kronecker product."),
        Entry("duat:fig3", "Figure 3 (Linear as matrix-vector product)",
              r"\mathbf{W}' = \mathbf{W}\otimes\mathbf{I}_M \text{ has density } 1/M",
              Status.PROVED, _density(),
              note="Figure 3 is an image (not in the text extraction); the density 1/M of the drawn W' is the "
                   "paper's 'sparsity'. Transcribed from the SPEC §3 table."),
        Entry("duat:eq6", "Eq. 6", _EQ6, Status.PROVED,
              Readings("which axis W_1, W_2 mix (Eq. 5 mixes tokens; a Transformer FFN mixes features)",
                       {"token-mixing": ffn_identity("token"), "feature-mixing": ffn_identity("feature")}),
              note="Holds under both readings: W' = W ⊗ I_M, b' = b ⊗ 1_M (tokens) or W' = I_N ⊗ W, "
                   "b' = 1_N ⊗ b (features)."),
    ]
