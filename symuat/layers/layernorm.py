r"""LayerNorm as a matrix–vector product with a dynamic diagonal (docs/conventions.md; not in the paper).

Row-wise, :math:`\mathrm{LN}(x)=\gamma\odot(x-\mu\mathbf 1)\,d+\beta` with
:math:`d=1/\sqrt{\operatorname{var}(x)+\varepsilon}`.  On :math:`x'=\operatorname{vec}_r(X)`:

.. math::

    \operatorname{vec}_r(\mathrm{LN}(X)) = \underbrace{(D\otimes\operatorname{diag}\gamma)(I_N\otimes C_M)}_{W'(X)}\,x'
    + \mathbf 1_N\otimes\beta,\qquad C_M = I_M-\tfrac1M\mathbf 1\mathbf 1^T,\quad D=\operatorname{diag}(d_1,\dots,d_N).

To keep the identity polynomial, :math:`D` is a diagonal of symbols :math:`d_r`
subject to the (documented, not enforced) constraint
:math:`d_r = 1/\sqrt{\operatorname{var}_r(X)+\varepsilon}`; :func:`inverse_std`
gives the actual values.  :math:`W'` is *dynamic* (through :math:`D`), :math:`b'` *static*.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..algebra.families import diag_vector
from ..algebra.matrices import check_dim, identity_matrix, kron, ones, traceable
from ..errors import ShapeError
from .linear import MatrixVectorForm

__all__ = ["LayerNorm", "centring_matrix", "inverse_std"]

Matrix = sympy.ImmutableMatrix


@traceable
def centring_matrix(M: int) -> Matrix:
    r""":math:`C_M = I_M - \tfrac1M\mathbf 1\mathbf 1^T`.

    >>> centring_matrix(2)
    Matrix([
    [ 1/2, -1/2],
    [-1/2,  1/2]])
    """
    M = check_dim("M", M)
    return Matrix(identity_matrix(M) - ones(M) * ones(M).T / M)


def inverse_std(X: sympy.MatrixBase, eps: sympy.Expr) -> Matrix:
    r"""The dynamic diagonal :math:`d_r = 1/\sqrt{\operatorname{var}_r+\varepsilon}` as an :math:`N\times1` vector.

    The variance is the biased one (divided by :math:`M`).
    """
    M = X.shape[1]
    Z = X * centring_matrix(M)
    return Matrix(X.shape[0], 1, lambda r, _: 1 / sympy.sqrt(sum(Z[r, k] ** 2 for k in range(M)) / M + eps))


@dataclass(frozen=True)
class LayerNorm:
    r"""Row-wise LayerNorm with gain :math:`\gamma` and shift :math:`\beta` (both :math:`M\times1`)."""

    gamma: Matrix
    beta: Matrix

    def __post_init__(self) -> None:
        if self.gamma.shape[1] != 1 or self.beta.shape != self.gamma.shape:
            raise ShapeError(f"gamma {self.gamma.shape} and beta {self.beta.shape} must both be (M, 1)")

    @property
    def M(self) -> int:
        return self.gamma.shape[0]

    def _check(self, X: sympy.MatrixBase, d: sympy.MatrixBase) -> None:
        if X.shape[1] != self.M:
            raise ShapeError(f"X has {X.shape[1]} columns, gamma has M={self.M} entries")
        if d.shape != (X.shape[0], 1):
            raise ShapeError(f"d has shape {d.shape}, expected ({X.shape[0]}, 1): one inverse std per token")

    def apply(self, X: sympy.MatrixBase, d: sympy.MatrixBase) -> Matrix:
        r"""Direct row-wise :math:`\gamma\odot(x_r-\mu_r)d_r+\beta` given the inverse stds ``d``."""
        self._check(X, d)
        M = self.M
        centred = X - X * ones(M) * ones(M).T / M
        return Matrix(diag_vector(d) * centred * diag_vector(self.gamma) + ones(X.shape[0]) * self.beta.T)

    def matrix_vector_form(self, d: sympy.MatrixBase) -> MatrixVectorForm:
        r""":math:`W'=(D\otimes\operatorname{diag}\gamma)(I_N\otimes C_M)`, :math:`b'=\mathbf 1_N\otimes\beta`."""
        if d.shape[1] != 1:
            raise ShapeError(f"d has shape {d.shape}, expected (N, 1)")
        N = d.shape[0]
        scale = kron(diag_vector(d), diag_vector(self.gamma))
        W = scale * kron(identity_matrix(N), centring_matrix(self.M))
        return MatrixVectorForm(Matrix(W), kron(ones(N), self.beta))
