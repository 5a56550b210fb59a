r"""Linear layers and the FFN as matrix–vector products (seed 001 Eq. 3, 5, 6, Fig. 3; seed 004 Eq. 3, 5, 15).

Each identity compares the layer's definition (``lhs``, a SymPy matrix product and
a direct NumPy computation for the float level) with the matrix–vector form
derived by :mod:`symuat.layers.linear` (``rhs``).
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from symuat import Entry, Identity, Readings, Status, dims_grid
from symuat.algebra.diamond import diamond
from symuat.algebra.entrywise import kronecker_delta, pair_matrix
from symuat.algebra.matrices import kron, vec_r
from symuat.evidence.fields import logistic
from symuat.layers.linear import FFN, FeatureLinear, TokenLinear

from ._coq_links import linked

__all__ = ["entries", "diamond_transpose_identity", "ffn_identity", "method_identity", "printed_eq15_identity"]

_NM = dims_grid(N=(1, 2, 3), M=(1, 2, 3))
_SCOPE_NM = ("Every entry is a polynomial identity in the symbols, so the grid covers all index patterns up to N, $M "
             "= 3$.")


@functools.cache
def method_identity() -> Identity:
    r"""T(X) = A X B  ↦  (A ⊗ Bᵀ) vec_r(X): the Matrix–Vector Method for every two-sided linear map."""
    return Identity(
        shapes={"A": ("N", "N"), "X": ("N", "M"), "B": ("M", "M")},
        lhs=lambda A, X, B: vec_r(A * X * B),
        rhs=lambda A, B, X: kron(A, B.T) * vec_r(X),
        dims=_NM,
        reference=lambda A, X, B: (A @ X @ B).reshape(-1),
        random_dims={"N": 4, "M": 5},
        scope=_SCOPE_NM,
    )


def _token_linear() -> Identity:
    return Identity(
        shapes={"W": ("N", "N"), "X": ("N", "M")},
        lhs=lambda W, X: vec_r(TokenLinear(W).apply(X)),
        rhs=lambda W, M, X: TokenLinear(W).matrix_vector_form(M).apply(vec_r(X)),
        dims=_NM,
        reference=lambda W, X: (W @ X).reshape(-1),
        random_dims={"N": 4, "M": 5},
        scope=_SCOPE_NM,
    )


def _printed_linear_matrix(W: sympy.MatrixBase, m: int) -> sympy.ImmutableMatrix:
    r"""The matrix displayed in seed 004 Eq. 15: entry ((k,l),(i,j)) = w_{i,k} δ_{lj}, built from the display."""
    def entry(row, col):
        (k, l), (i, j) = row, col
        return W[i, k] * kronecker_delta(l, j)

    n = W.shape[0]
    return pair_matrix(entry, (n, m), (n, m))


@functools.cache
def printed_eq15_identity() -> Identity:
    return Identity(
        shapes={"W": ("N", "N"), "X": ("N", "M")},
        lhs=lambda W, X: vec_r(W * X),
        rhs=lambda W, M, X: diamond(_printed_linear_matrix(W, M), vec_r(X)),
        dims=_NM,
        reference=lambda W, X: (W @ X).reshape(-1),
        random_dims={"N": 4, "M": 3},
        scope=_SCOPE_NM,
    )


@functools.cache
def diamond_transpose_identity() -> Identity:
    return Identity(
        shapes={"W": ("N*M", "N*M"), "x": ("N*M", 1)},
        lhs=lambda W, x: diamond(W, x),
        rhs=lambda W, x: W.T * x,
        dims=dims_grid(N=(1, 2), M=(1, 2)),
        reference=lambda W, x: W.T @ x,
        random_dims={"N": 2, "M": 3},
    )


def _density() -> Identity:
    def nnz_fraction(W, M):
        Wp = TokenLinear(W).matrix_vector_form(M).W_prime
        nonzero = sum(1 for v in Wp if v != 0)
        return sympy.Matrix([[sympy.Rational(nonzero, len(Wp))]])

    return Identity(
        shapes={"W": ("N", "N")},
        lhs=nnz_fraction,
        rhs=lambda M: sympy.Matrix([[sympy.Rational(1, M)]]),
        dims=_NM,
        reference=lambda W, M, N: np.array([np.count_nonzero(np.kron(W, np.eye(M))) / (N * M) ** 2]),
        random_dims={"N": 5, "M": 4},
        scope="Density counts structurally non-zero entries of $W'$ for a generic (all non-zero) W.",
    )


@functools.cache
def ffn_identity(kind: str) -> Identity:
    """FFN, Eq. 6, with both linear maps mixing ``"token"`` s or ``"feature"`` s (also used for Eq. 29)."""
    if kind == "token":
        shapes = {"X": ("N", "M"), "W1": ("F", "N"), "b1": ("F", 1), "W2": ("N", "F"), "b2": ("N", 1)}
        linear = TokenLinear

        def reference(W2, W1, X, b1, b2):
            return (W2 @ logistic(W1 @ X + b1) + b2).reshape(-1)
    else:
        shapes = {"X": ("N", "M"), "W1": ("F", "M"), "b1": ("F", 1), "W2": ("M", "F"), "b2": ("M", 1)}
        linear = FeatureLinear

        def reference(X, W1, b1, W2, b2):
            return (logistic(X @ W1.T + b1.T) @ W2.T + b2.T).reshape(-1)

    def layer(W1, b1, W2, b2):
        return FFN(linear(W1, b1), linear(W2, b2))

    return Identity(
        shapes=shapes,
        lhs=lambda X, W1, b1, W2, b2: vec_r(layer(W1, b1, W2, b2).apply(X)),
        rhs=lambda X, W1, b1, W2, b2, N, M: layer(W1, b1, W2, b2).apply_matrix_vector(vec_r(X), N, M),
        dims=dims_grid(N=(1, 2), M=(1, 2), F=(1, 2, 3)),
        reference=reference,
        random_dims={"N": 3, "M": 4, "F": 5},
        scope="sigma is an uninterpreted elementwise function; the float level uses the logistic sigmoid.",
    )


_EQ3 = r"\mathbf{y} = T(\mathbf{x}|\mathbf{W}) \mapsto \mathbf{y}' = \mathbf{W}'\mathbf{x}'"
_EQ6 = (r"FFN(\mathbf{x}) = \mathbf{W}_2 \sigma(\mathbf{W}_1 \mathbf{x} + \mathbf{b}_1) + \mathbf{b}_2"
        r" \mapsto \mathbf{W}_2' \sigma(\mathbf{W}_1' \mathbf{x}' + \mathbf{b}_1') + \mathbf{b}_2'")


def _entries() -> list[Entry]:
    method_note = ("Checked for every linear T(X) = A X B (token- and feature-mixing Linear layers are the cases $B "
                   r"= I$ and $A = I$); $W' = A \otimes B^{T}$ under row-major $\operatorname{vec}_r$. MHA is Eq. 9.")
    return [
        Entry("duat:eq3", "Eq. 3", _EQ3, Status.PROVED, method_identity(), note=method_note),
        Entry("uat-arxiv:eq3", "Eq. 3",
              r"\mathbf{y}=T(\mathbf{x}|\mathbf{W})\rightarrow\mathbf{y}^{\prime}=\mathbf{W}^{\prime}\mathbf{x}^{\prime}",
              Status.PROVED, method_identity(), note=method_note),
        Entry("duat:eq5", "Eq. 5",
              r"\mathbf{x}_{i+1} = \mathbf{W}_i \mathbf{x}_i \mapsto \mathbf{x}'_{i+1} = \mathbf{W}'_i \mathbf{x}'_i",
              Status.PROVED, _token_linear(),
              note=r"$W_i \in R^{N\times N}$ mixes tokens; $W'_i = W_i \otimes I_M$ (the paper's renaming of "
                   "$(W'_i)^{T}$ to $W'_i$ is a convention, not a new matrix)."),
        Entry("uat-arxiv:eq5.step1", "Eq. 5, first arrow",
              r"\mathbf{x}_{i+1}=\mathbf{W}_{i}\mathbf{x}^{i}\rightarrow\mathbf{x}_{i+1}^{\prime}"
              r"=\mathbf{W}_{i}^{\prime}\diamond\mathbf{x}_{i}^{\prime}",
              Status.PROVED, printed_eq15_identity(),
              note=r"$W'_i$ is the matrix displayed in App. B.1 Eq. 15 ($W_i^{T} \otimes I_M$); the superscript in "
                   "$x^i$ is read as $x_i$."),
        Entry("uat-arxiv:eq5.step2", "Eq. 5, second equality",
              r"\mathbf{W}_{i}^{\prime}\diamond\mathbf{x}_{i}^{\prime}=(\mathbf{W}_{i}^{\prime})^{T}\mathbf{x}_{i}^{\prime}",
              Status.PROVED, diamond_transpose_identity()),
        Entry("uat-arxiv:eq15", "App. B.1, Eq. 15",
              r"\mathbf{W}\mathbf{x}=\mathbf{y}\rightarrow\left(\begin{array}{ccc}w_{1,1}&0&\cdots\\0&w_{1,1}&\cdots\\"
              r"\vdots&\vdots&\cdots\\w_{1,2}&0&\cdots\\\vdots&\vdots&\cdots\\w_{1,n}&0&\cdots\end{array}\right)"
              r"\diamond\mathbf{x}'=\mathbf{y}'",
              Status.PROVED, printed_eq15_identity(),
              note=r"The displayed matrix has entry ((k,l),(i,j)) = $w_{i,k} \delta _{lj}$; it is rebuilt from that "
                   "pattern, not from a Kronecker product."),
        Entry("duat:fig3", "Figure 3 (Linear as matrix-vector product)",
              r"\mathbf{W}' = \mathbf{W}\otimes\mathbf{I}_M \text{ has density } 1/M",
              Status.PROVED, _density(),
              note="Figure 3 is an image (not in the text extraction); the density 1/M of the drawn $W'$ is the "
                   "paper's 'sparsity'. Transcribed from the table of matrix–vector forms (docs/conventions.md)."),
        Entry("duat:eq6", "Eq. 6", _EQ6, Status.PROVED,
              Readings("which axis W_1, W_2 mix (Eq. 5 mixes tokens; a Transformer FFN mixes features)",
                       {"token-mixing": ffn_identity("token"), "feature-mixing": ffn_identity("feature")}),
              note=r"Holds under both readings: $W' = W \otimes I_M$, $b' = b \otimes 1_M$ (tokens) or $W' = I_N "
                   r"\otimes W$, $b' = 1_N \otimes b$ (features)."),
    ]


def entries() -> list[Entry]:
    """The entries of this derivation, each with its Coq theorem where one states it (docs/coq.md)."""
    return linked(_entries())
