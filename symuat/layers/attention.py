r"""Multi-head attention as a matrix–vector product (seed 001 Eq. 7–10, Figures 5–6, App. A, Eq. 35).

The attention matrices :math:`H_h` are treated as *parameter* matrices of
symbols, so every identity about the value/output path stays polynomial (docs/conventions.md):

.. math::

    \operatorname{vec}_r\big(\mathrm{Concat}(H_1XW_{V,1},\dots,H_hXW_{V,h})\big) = W'_{HV}x',
    \qquad W'_{HV} = \sum_h H_h\otimes (P_h W_V^T) \quad\text{(Figure 5)},

.. math::

    \operatorname{vec}_r(\hat H W_O) = W'_O\hat H', \quad W'_O = I_N\otimes W_O^T \quad\text{(Figure 6)},
    \qquad W'_{HVO} = W'_O W'_{HV} = \sum_h H_h\otimes (W_{V,h}W_{O,h})^T,

where :math:`P_h` keeps the rows of head :math:`h`.  A value bias becomes the
static bias :math:`\mathbf 1_N\otimes\sum_h W_{O,h}^T b_{V,h}` only because every
row of :math:`H_h` sums to one (:func:`row_stochastic_matrix`).

The paper's variant (Eq. 7–8: :math:`X` split by columns, head :math:`i` sees only
:math:`x_i`) is :class:`PaperMultiHeadAttention`; :meth:`~PaperMultiHeadAttention.as_standard`
is the reduction to a standard MHA with block-diagonal :math:`W_V`.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..algebra.families import (
    as_family,
    basis_vector,
    block_size,
    col_block,
    family_block_diagonal,
    family_hstack,
    family_size,
    family_sum,
    member_shape,
    row_block,
)
from ..algebra.matrices import check_dim, identity_matrix, kron, ones, symbolic_matrix, traceable
from ..errors import ShapeError
from .linear import MatrixVectorForm

__all__ = [
    "MultiHeadAttention",
    "PaperMultiHeadAttention",
    "split_columns",
    "row_stochastic_matrix",
    "softmax",
    "attention_matrix",
    "block_diagonal",
]

Matrix = sympy.ImmutableMatrix


def split_columns(X: sympy.MatrixBase, n_heads: int) -> tuple[Matrix, ...]:
    r"""Split :math:`X\in\mathbb{R}^{N\times M}` by columns into :math:`x_1,\dots,x_h` (seed 001 Eq. 7–8).

    >>> split_columns(sympy.Matrix([[1, 2, 3, 4]]), 2)
    (Matrix([[1, 2]]), Matrix([[3, 4]]))
    """
    h = check_dim("n_heads", n_heads)
    M = X.shape[1]
    if M % h:
        raise ShapeError(f"n_heads={h} must divide the width M={M} of X")
    m = M // h
    return tuple(Matrix(X[:, i * m:(i + 1) * m]) for i in range(h))


def row_stochastic_matrix(name: str, n: int) -> Matrix:
    r"""Symbols ``name_{i,j}`` whose last column is :math:`1-\sum_{j<n}` so every row sums to 1.

    This is the only property of :math:`H_h=\operatorname{softmax}(\cdot)` the static value bias needs.

    >>> row_stochastic_matrix("h", 2)
    Matrix([
    [h_{1,1}, 1 - h_{1,1}],
    [h_{2,1}, 1 - h_{2,1}]])
    """
    free = symbolic_matrix(name, n, n)
    return Matrix(n, n, lambda i, j: free[i, j] if j < n - 1
                  else 1 - sum((free[i, k] for k in range(n - 1)), sympy.S.Zero))


@traceable
def softmax(S: sympy.MatrixBase) -> Matrix:
    r"""Row-wise softmax :math:`\operatorname{softmax}(S)_{ij}=e^{S_{ij}}/\sum_k e^{S_{ik}}` (Eq. 8, 35).

    >>> softmax(sympy.Matrix([[0, 0]]))
    Matrix([[1/2, 1/2]])
    """
    rows = []
    for i in range(S.shape[0]):
        e = [sympy.exp(S[i, j]) for j in range(S.shape[1])]
        total = sympy.Add(*e)
        rows.append([v / total for v in e])
    return Matrix(rows)


def attention_matrix(X: sympy.MatrixBase, W_Q: sympy.MatrixBase, W_K: sympy.MatrixBase,
                     scale: sympy.Expr) -> Matrix:
    r""":math:`H = \operatorname{softmax}\big(s\,(XW_Q)(XW_K)^T\big)`, seed 001 Eq. 35 with :math:`s=1/\sqrt{M}`.

    >>> attention_matrix(sympy.Matrix([[1]]), sympy.Matrix([[2]]), sympy.Matrix([[3]]), 1)
    Matrix([[1]])
    """
    if W_Q.shape != W_K.shape or W_Q.shape[0] != X.shape[1]:
        raise ShapeError(f"W_Q {W_Q.shape} and W_K {W_K.shape} must both be ({X.shape[1]}, d) for X {X.shape}")
    return softmax(scale * (X * W_Q) * (X * W_K).T)


def _check_heads(H: tuple) -> int:
    if not isinstance(H, tuple):  # a declared family: one shape for every member
        N, cols = member_shape(H)
        if cols != N:
            raise ShapeError(f"the attention matrices are {N} x {cols}, not square")
        return N
    if not H:
        raise ShapeError("n_heads=0: at least one attention matrix H_h is needed")
    N = H[0].shape[0]
    for k, Hh in enumerate(H):
        if Hh.shape != (N, N):
            raise ShapeError(f"H[{k}] has shape {Hh.shape}, expected ({N}, {N}) like H[0]")
    return N


def _check_bias(name: str, b: sympy.MatrixBase | None, n: int) -> None:
    if b is not None and b.shape != (n, 1):
        raise ShapeError(f"bias {name} has shape {b.shape}, expected ({n}, 1)")


@dataclass(frozen=True)
class MultiHeadAttention:
    r"""Standard MHA :math:`\sum_h H_h(XW_{V,h}+\mathbf 1b_{V,h}^T)W_{O,h}+\mathbf 1b_O^T`.

    Parameters
    ----------
    H
        Attention matrices :math:`H_1,\dots,H_h` (:math:`N\times N`), parameters here.
    W_V
        :math:`M\times D`; head :math:`h` uses columns ``h*d:(h+1)*d``, :math:`d=D/n_{heads}`.
    W_O
        :math:`D\times P`; head :math:`h` uses rows ``h*d:(h+1)*d``.
    b_V, b_O
        Optional column biases (:math:`D\times1`, :math:`P\times1`).
    """

    H: tuple[Matrix, ...]
    W_V: Matrix
    W_O: Matrix
    b_V: Matrix | None = None
    b_O: Matrix | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "H", as_family(self.H))
        _check_heads(self.H)
        D = self.W_V.shape[1]
        if isinstance(D, int) and D % self.n_heads:
            raise ShapeError(f"n_heads={self.n_heads} must divide the value width D={D} of W_V")
        if self.W_O.shape[0] != D:
            raise ShapeError(f"W_O has {self.W_O.shape[0]} rows, expected D={D} (the columns of W_V)")
        _check_bias("b_V", self.b_V, D)
        _check_bias("b_O", self.b_O, self.W_O.shape[1])

    @property
    def n_heads(self) -> int:
        return family_size(self.H)

    @property
    def N(self) -> int:
        return member_shape(self.H)[0]

    @property
    def head_dim(self) -> int:
        return block_size(self.W_V.shape[1], self.n_heads)

    def _cols(self, h: int) -> slice:
        return slice(h * self.head_dim, (h + 1) * self.head_dim)

    def W_V_head(self, h: int) -> Matrix:
        r""":math:`W_{V,h}`: the columns of head ``h`` (0-based)."""
        return col_block(self.W_V, h, self.head_dim)

    def W_O_head(self, h: int) -> Matrix:
        r""":math:`W_{O,h}`: the rows of head ``h`` (0-based)."""
        return row_block(self.W_O, h, self.head_dim)

    def apply(self, X: sympy.MatrixBase) -> Matrix:
        r"""Direct computation: values, per-head mixing, concatenation, output projection (Eq. 7)."""
        if X.shape != (self.N, self.W_V.shape[0]):
            raise ShapeError(f"X has shape {X.shape}, expected ({self.N}, {self.W_V.shape[0]})")
        V = X * self.W_V
        if self.b_V is not None:
            V = V + ones(self.N) * self.b_V.T
        concat = family_hstack(lambda h: self.H[h] * col_block(V, h, self.head_dim), self.n_heads)
        Y = concat * self.W_O
        return Matrix(Y if self.b_O is None else Y + ones(self.N) * self.b_O.T)

    def W_HV(self) -> Matrix:
        r""":math:`W'_{HV}=\sum_h H_h\otimes(P_hW_V^T)`, so :math:`W'_{HV}x'=\hat H'` (Figure 5)."""
        Wt = self.W_V.T

        def head(h):  # P_h W_V^T: the rows of head h kept in place, the others zero
            return kron(self.H[h], kron(basis_vector(h, self.n_heads), row_block(Wt, h, self.head_dim)))
        return family_sum(head, self.n_heads)

    def W_O_prime(self) -> Matrix:
        r""":math:`W'_O=I_N\otimes W_O^T`, so :math:`W'_O\hat H'=\mathring H'` (Figure 6)."""
        return kron(identity_matrix(self.N), self.W_O.T)

    def W_HVO(self) -> Matrix:
        r""":math:`W'_{HVO}=W'_O W'_{HV}` (seed 001 §3.2, in the convention :math:`y'=W'x'`)."""
        return Matrix(self.W_O_prime() * self.W_HV())

    def W_HVO_closed_form(self) -> Matrix:
        r""":math:`\sum_h H_h\otimes(W_{V,h}W_{O,h})^T` — the product the paper leaves uncomputed."""
        return family_sum(lambda h: kron(self.H[h], (self.W_V_head(h) * self.W_O_head(h)).T), self.n_heads)

    def b_prime(self) -> Matrix:
        r"""Static bias :math:`\mathbf 1_N\otimes(\sum_h W_{O,h}^Tb_{V,h}+b_O)`.

        Valid when the rows of :math:`H_h` sum to 1.
        """
        c = sympy.zeros(self.W_O.shape[1], 1)
        if self.b_V is not None:  # a family sum over the heads: an index sum on sizes of symbolic value
            c = c + family_sum(lambda h: self.W_O_head(h).T * row_block(self.b_V, h, self.head_dim), self.n_heads)
        if self.b_O is not None:
            c = c + self.b_O
        return kron(ones(self.N), c)

    def matrix_vector_form(self) -> MatrixVectorForm:
        r""":math:`x'\mapsto W'_{HVO}x'+b'` with the closed-form :math:`W'_{HVO}`."""
        return MatrixVectorForm(self.W_HVO_closed_form(), self.b_prime())


def block_diagonal(*blocks: sympy.MatrixBase) -> Matrix:
    r"""Block-diagonal matrix :math:`\operatorname{diag}(B_1,\dots,B_h)`.

    >>> block_diagonal(sympy.Matrix([[1]]), sympy.Matrix([[2]]))
    Matrix([
    [1, 0],
    [0, 2]])
    """
    return Matrix(sympy.diag(*blocks))


@dataclass(frozen=True)
class PaperMultiHeadAttention:
    r"""The paper's MHA (seed 001 Eq. 7–8): :math:`\mathrm{Concat}(H_1x_1W_{V1},\dots,H_hx_hW_{Vh})W_O`.

    :math:`X` is split by columns into :math:`x_1,\dots,x_h` (:func:`split_columns`);
    :math:`W_{Vi}\in\mathbb{R}^{m\times d}` with :math:`m=M/h`.
    """

    H: tuple[Matrix, ...]
    W_V: tuple[Matrix, ...]
    W_O: Matrix

    def __post_init__(self) -> None:
        object.__setattr__(self, "H", as_family(self.H))
        object.__setattr__(self, "W_V", as_family(self.W_V))
        _check_heads(self.H)
        if family_size(self.W_V) != family_size(self.H):
            raise ShapeError(f"n_heads={family_size(self.H)} attention matrices but {family_size(self.W_V)} value "
                             "matrices W_Vi")
        if isinstance(self.W_V, tuple) and any(W.shape != self.W_V[0].shape for W in self.W_V):
            raise ShapeError(f"every W_Vi must have the shape {self.W_V[0].shape} of W_V1")
        shape = member_shape(self.W_V)
        if self.W_O.shape[0] != family_size(self.H) * shape[1]:
            raise ShapeError(f"W_O has {self.W_O.shape[0]} rows, expected n_heads*d={family_size(self.H) * shape[1]}")

    @property
    def n_heads(self) -> int:
        return family_size(self.H)

    def head(self, X: sympy.MatrixBase, i: int) -> Matrix:
        r""":math:`\hat H_i=H_i[x_iW_{Vi}]` (Eq. 8), ``i`` 0-based; :math:`x_i` the i-th column block of X."""
        m = block_size(X.shape[1], self.n_heads)
        if m != member_shape(self.W_V)[0]:
            raise ShapeError(f"x_i has {m} columns, W_Vi has {member_shape(self.W_V)[0]} rows")
        return Matrix(self.H[i] * (col_block(X, i, m) * self.W_V[i]))

    def heads(self, X: sympy.MatrixBase) -> tuple[Matrix, ...]:
        r""":math:`\hat H_1,\dots,\hat H_h` (Eq. 8)."""
        split_columns(X, self.n_heads)  # the width check
        return tuple(self.head(X, i) for i in range(self.n_heads))

    def concat(self, X: sympy.MatrixBase) -> Matrix:
        r""":math:`\hat H=\mathrm{Concat}(\hat H_1,\dots,\hat H_h)` (Eq. 7)."""
        if isinstance(self.H, tuple):
            split_columns(X, self.n_heads)  # the width check
        return family_hstack(lambda i: self.head(X, i), self.n_heads)

    def apply(self, X: sympy.MatrixBase) -> Matrix:
        r""":math:`\mathring H=\mathrm{Concat}(\hat H_1,\dots,\hat H_h)W_O` (Eq. 7)."""
        return Matrix(self.concat(X) * self.W_O)

    def as_standard(self) -> MultiHeadAttention:
        r"""The same layer as a standard MHA with :math:`W_V=\operatorname{diag}(W_{V1},\dots,W_{Vh})`."""
        return MultiHeadAttention(self.H, family_block_diagonal(self.W_V), self.W_O)
