r"""Linear and FFN layers and their matrix–vector forms (seed 001 Eq. 5–6; docs/conventions.md).

===============================  =====================================================
layer                            matrix–vector form :math:`y' = W'x' + b'`
===============================  =====================================================
token mixing  :math:`Y = WX`     :math:`W' = W\otimes I_M`
feature mixing :math:`Y = XW^T + \mathbf{1}b^T`  :math:`W' = I_N\otimes W,\ b' = \mathbf{1}_N\otimes b`
FFN :math:`W_2\sigma(W_1x+b_1)+b_2`  :math:`W_2'\sigma(W_1'x'+b_1')+b_2'`
===============================  =====================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..algebra.matrices import elementwise, identity_matrix, kron, ones
from ..errors import ShapeError
from ..names import SIGMA

__all__ = ["MatrixVectorForm", "TokenLinear", "FeatureLinear", "FFN"]


@dataclass(frozen=True)
class MatrixVectorForm:
    r"""An affine map :math:`x' \mapsto W'x' + b'` on row-major vectorised activations."""

    W_prime: sympy.ImmutableMatrix
    b_prime: sympy.ImmutableMatrix | None = None

    def apply(self, x_prime: sympy.MatrixBase) -> sympy.ImmutableMatrix:
        if x_prime.shape != (self.W_prime.shape[1], 1):
            raise ShapeError(f"x' has shape {x_prime.shape}, W' needs ({self.W_prime.shape[1]}, 1)")
        y = self.W_prime * x_prime
        return sympy.ImmutableMatrix(y if self.b_prime is None else y + self.b_prime)


def _check_bias(name: str, b: sympy.MatrixBase | None, n: int) -> None:
    if b is not None and b.shape != (n, 1):
        raise ShapeError(f"bias {name} has shape {b.shape}, expected ({n}, 1)")


@dataclass(frozen=True)
class TokenLinear:
    r"""Token mixing :math:`Y = WX + b\mathbf{1}_M^T`, :math:`W\in\mathbb{R}^{P\times N}` (seed 001 Eq. 5).

    Matrix–vector form :math:`W' = W\otimes I_M`, :math:`b' = b\otimes\mathbf{1}_M`.
    """

    W: sympy.ImmutableMatrix
    b: sympy.ImmutableMatrix | None = None

    def __post_init__(self) -> None:
        _check_bias("b", self.b, self.W.shape[0])

    def apply(self, X: sympy.MatrixBase) -> sympy.ImmutableMatrix:
        if X.shape[0] != self.W.shape[1]:
            raise ShapeError(f"X has {X.shape[0]} rows, W is {self.W.shape}: expected {self.W.shape[1]} rows")
        Y = self.W * X
        return sympy.ImmutableMatrix(Y if self.b is None else Y + self.b * ones(X.shape[1]).T)

    def matrix_vector_form(self, M: int) -> MatrixVectorForm:
        b = None if self.b is None else kron(self.b, ones(M))
        return MatrixVectorForm(kron(self.W, identity_matrix(M)), b)


@dataclass(frozen=True)
class FeatureLinear:
    r"""Feature mixing (``nn.Linear``) :math:`Y = XW^T + \mathbf{1}_N b^T`, :math:`W\in\mathbb{R}^{F\times M}`.

    Matrix–vector form :math:`W' = I_N\otimes W`, :math:`b' = \mathbf{1}_N\otimes b`.
    """

    W: sympy.ImmutableMatrix
    b: sympy.ImmutableMatrix | None = None

    def __post_init__(self) -> None:
        _check_bias("b", self.b, self.W.shape[0])

    def apply(self, X: sympy.MatrixBase) -> sympy.ImmutableMatrix:
        if X.shape[1] != self.W.shape[1]:
            raise ShapeError(f"X has {X.shape[1]} columns, W is {self.W.shape}: expected {self.W.shape[1]} columns")
        Y = X * self.W.T
        return sympy.ImmutableMatrix(Y if self.b is None else Y + ones(X.shape[0]) * self.b.T)

    def matrix_vector_form(self, N: int) -> MatrixVectorForm:
        b = None if self.b is None else kron(ones(N), self.b)
        return MatrixVectorForm(kron(identity_matrix(N), self.W), b)


@dataclass(frozen=True)
class FFN:
    r"""Feed-forward network :math:`W_2\sigma(W_1x+b_1)+b_2` (seed 001 Eq. 6), σ elementwise.

    ``first`` and ``second`` are both :class:`TokenLinear` or both :class:`FeatureLinear`.
    """

    first: TokenLinear | FeatureLinear
    second: TokenLinear | FeatureLinear

    def __post_init__(self) -> None:
        if type(self.first) is not type(self.second):
            raise ShapeError("FFN: both linear maps must mix the same axis (token or feature)")

    def apply(self, X: sympy.MatrixBase) -> sympy.ImmutableMatrix:
        return self.second.apply(elementwise(SIGMA, self.first.apply(X)))

    def matrix_vector_form(self, N: int, M: int) -> tuple[MatrixVectorForm, MatrixVectorForm]:
        """The two affine maps :math:`(W_1', b_1')` and :math:`(W_2', b_2')`."""
        size = M if isinstance(self.first, TokenLinear) else N
        return self.first.matrix_vector_form(size), self.second.matrix_vector_form(size)

    def apply_matrix_vector(self, x_prime: sympy.MatrixBase, N: int, M: int) -> sympy.ImmutableMatrix:
        r""":math:`W_2'\sigma(W_1'x'+b_1')+b_2'`."""
        one, two = self.matrix_vector_form(N, M)
        return two.apply(elementwise(SIGMA, one.apply(x_prime)))


