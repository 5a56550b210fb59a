r"""The gated FFN (SwiGLU, GeGLU, ReGLU) as a matrix–vector product (beyond the paper).

:math:`\mathrm{FFN}(H) = \big(\sigma(HW_g + \mathbf 1b_g^T)\odot(HW_u + \mathbf 1b_u^T)\big)W_d + \mathbf 1b_d^T`
with feature Linears; on :math:`h' = \operatorname{vec}_r(H)`, with
:math:`z = (I_N\otimes W_g^T)h' + \mathbf 1_N\otimes b_g` and :math:`u = (I_N\otimes W_u^T)h' + \mathbf 1_N\otimes b_u`:

.. math::

    \operatorname{vec}_r\mathrm{FFN}(H) = (I_N\otimes W_d^T)\big(\sigma(z)\odot u\big) + \mathbf 1_N\otimes b_d.

:math:`\sigma` is uninterpreted (silu, gelu, gelu_tanh, relu in practice); biases are optional.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..algebra.matrices import elementwise, identity_matrix, kron, ones
from ..errors import ShapeError

__all__ = ["GatedFFN"]

Matrix = sympy.ImmutableMatrix


def _affine(X, W, b):
    Y = X * W
    return Y if b is None else Y + ones(X.shape[0]) * b.T


@dataclass(frozen=True)
class GatedFFN:
    r"""Gate :math:`W_g`, up :math:`W_u` (:math:`M\times F`), down :math:`W_d` (:math:`F\times M`), optional biases."""

    W_g: Matrix
    W_u: Matrix
    W_d: Matrix
    b_g: Matrix | None = None
    b_u: Matrix | None = None
    b_d: Matrix | None = None

    def __post_init__(self) -> None:
        M, F = self.W_g.shape
        if self.W_u.shape != (M, F) or self.W_d.shape != (F, M):
            raise ShapeError(f"W_g {self.W_g.shape}, W_u {self.W_u.shape}, W_d {self.W_d.shape}: expected "
                             f"({M}, {F}), ({M}, {F}), ({F}, {M})")
        for name, n in (("b_g", F), ("b_u", F), ("b_d", M)):
            b = getattr(self, name)
            if b is not None and b.shape != (n, 1):
                raise ShapeError(f"{name} has shape {b.shape}, expected ({n}, 1)")

    def apply(self, H: sympy.MatrixBase, sigma) -> Matrix:
        r"""Direct row-wise computation with the activation ``sigma`` (a SymPy function)."""
        gate = elementwise(sigma, _affine(H, self.W_g, self.b_g))
        up = _affine(H, self.W_u, self.b_u)
        return Matrix(_affine(Matrix(gate.multiply_elementwise(up)), self.W_d, self.b_d))

    def apply_matrix_vector(self, h_prime: sympy.MatrixBase, N: int, sigma) -> Matrix:
        r""":math:`(I_N\otimes W_d^T)(\sigma(z)\odot u) + \mathbf 1_N\otimes b_d` on :math:`h'`."""
        I_N = identity_matrix(N)
        z = kron(I_N, self.W_g.T) * h_prime
        u = kron(I_N, self.W_u.T) * h_prime
        if self.b_g is not None:
            z = z + kron(ones(N), self.b_g)
        if self.b_u is not None:
            u = u + kron(ones(N), self.b_u)
        y = kron(I_N, self.W_d.T) * Matrix(elementwise(sigma, z).multiply_elementwise(u))
        return Matrix(y if self.b_d is None else y + kron(ones(N), self.b_d))
