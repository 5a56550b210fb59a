r"""RMSNorm as a matrix–vector product with a dynamic diagonal and no centring (beyond the paper).

Row-wise, :math:`\mathrm{RMS}(x) = (o + g)\odot x\,r` with :math:`r = (\tfrac1M\sum_m x_m^2+\varepsilon)^{-1/2}`
and offset :math:`o = 0` (Llama, Qwen, Mistral) or :math:`o = 1` (Gemma's :math:`1 + w`).  On
:math:`x' = \operatorname{vec}_r(X)`:

.. math::

    \operatorname{vec}_r(\mathrm{RMS}(X))
    = \big(\operatorname{diag}(r)\otimes\operatorname{diag}(o\mathbf 1 + g)\big)\,x',

LayerNorm's form with :math:`C_M = I_M` and no shift.  As in :mod:`symuat.layers.layernorm`, the
dynamic diagonal :math:`r` is a vector of symbols (constraint documented, not enforced);
:func:`inverse_rms` gives its value.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..algebra.families import diag_vector
from ..algebra.matrices import kron, ones
from ..errors import ShapeError
from .linear import MatrixVectorForm

__all__ = ["RMSNorm", "inverse_rms"]

Matrix = sympy.ImmutableMatrix


def inverse_rms(X: sympy.MatrixBase, eps: sympy.Expr) -> Matrix:
    r"""The dynamic diagonal :math:`r_n = (\tfrac1M\sum_m X_{nm}^2+\varepsilon)^{-1/2}` as an :math:`N\times1` vector.

    >>> inverse_rms(sympy.Matrix([[3, 4]]), 0)
    Matrix([[sqrt(2)/5]])
    """
    M = X.shape[1]
    return Matrix(X.shape[0], 1, lambda n, _: 1 / sympy.sqrt(sum(X[n, k] ** 2 for k in range(M)) / M + eps))


@dataclass(frozen=True)
class RMSNorm:
    r"""Row-wise RMSNorm with gain :math:`g` (:math:`M\times1`) and gain offset ``offset`` (0, or 1 for Gemma)."""

    gain: Matrix
    offset: int = 0

    def __post_init__(self) -> None:
        if self.gain.shape[1] != 1:
            raise ShapeError(f"gain has shape {self.gain.shape}, expected (M, 1)")

    @property
    def M(self) -> int:
        return self.gain.shape[0]

    def _check(self, X: sympy.MatrixBase, r: sympy.MatrixBase) -> None:
        if X.shape[1] != self.M:
            raise ShapeError(f"X has {X.shape[1]} columns, gain has M={self.M} entries")
        if r.shape != (X.shape[0], 1):
            raise ShapeError(f"r has shape {r.shape}, expected ({X.shape[0]}, 1): one inverse RMS per token")

    def apply(self, X: sympy.MatrixBase, r: sympy.MatrixBase) -> Matrix:
        r"""Direct row-wise :math:`(o + g_m)\,X_{nm}\,r_n` given the inverse RMS values ``r``."""
        self._check(X, r)
        return Matrix(diag_vector(r) * X * diag_vector(self._scale()))

    def _scale(self) -> Matrix:
        r""":math:`o\mathbf 1 + g`."""
        return Matrix(self.gain if self.offset == 0 else ones(self.M) * self.offset + self.gain)

    def matrix_vector_form(self, r: sympy.MatrixBase) -> MatrixVectorForm:
        r""":math:`W' = \operatorname{diag}(r)\otimes\operatorname{diag}(o\mathbf 1+g)`, no bias."""
        if r.shape[1] != 1:
            raise ShapeError(f"r has shape {r.shape}, expected (N, 1)")
        return MatrixVectorForm(kron(diag_vector(r), diag_vector(self._scale())))
