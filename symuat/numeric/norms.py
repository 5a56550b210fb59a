r"""RMSNorm, and one interface over both norm kinds (LayerNorm, RMSNorm) as dynamic affine maps.

RMSNorm (Zhang & Sennrich 2019; Llama, Gemma, OLMo-2) is not in the paper.  Row-wise, for one token
:math:`x \in \mathbb{R}^M`,

.. math::

    \mathrm{RMS}(x) = (o + w) \odot \frac{x}{\sqrt{\tfrac1M \lVert x\rVert^2 + \varepsilon}},

(huge finite rows are rescaled before squaring, see :mod:`symuat.numeric.layernorm`) with weight :math:`w`
and offset :math:`o` (:math:`o = 0` for Llama, :math:`o = 1` for Gemma's
``(1 + w)``).  There is no centring and no bias, so on :math:`x' = \operatorname{vec}_r(X)` it is the
*linear* map :math:`(D(X) \otimes \operatorname{diag}(o + w))\,x'` with the dynamic diagonal
:math:`D(X) = \operatorname{diag}(1/\sqrt{\operatorname{ms}_r + \varepsilon})_{r=1..N}`: a LayerNorm with
:math:`C_M` replaced by :math:`I_M` and :math:`\beta = 0`.

:func:`apply_norm` (direct) and :func:`norm_operator` (``(op, bias)`` at an input) accept either
:class:`RMSNormWeights` or :class:`~symuat.numeric.layernorm.LayerNormWeights`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Tuple, Union

import numpy as np

from ..errors import InvalidValueError, ShapeError
from ..validation import as_finite_array, check_positive_dim, check_real_number
from .backend import copy_array, is_numpy, zeros_like_backend
from .layernorm import LayerNormWeights, _big_rows, apply_layer_norm_weights, inverse_rms, layer_norm_operator
from .operators import Diagonal, IdentityOperator, Kron, LinearOperator

__all__ = ["RMSNormWeights", "IdentityNormWeights", "NormWeights", "check_norm", "apply_norm", "norm_operator",
           "rms_norm", "norm_on_constant_rows"]


@dataclass(frozen=True)
class RMSNormWeights:
    r"""RMSNorm parameters: weight :math:`w \in \mathbb{R}^M`, :math:`\varepsilon > 0`, offset :math:`o`.

    The effective gain is :math:`o + w` (``offset=1.0`` for Gemma's ``(1 + w)``).

    >>> RMSNormWeights(np.ones(4), eps=1e-6)
    RMSNormWeights(width=4, eps=1e-06, offset=0.0)
    """

    weight: np.ndarray
    eps: float = 1e-6
    offset: float = 0.0

    def __post_init__(self) -> None:
        w = as_finite_array("weight", self.weight, ndim=1)
        check_positive_dim("len(weight)", w.shape[0])
        w = w.copy()
        w.setflags(write=False)
        object.__setattr__(self, "weight", w)
        object.__setattr__(self, "eps", check_real_number("eps", self.eps, positive=True))
        object.__setattr__(self, "offset", check_real_number("offset", self.offset))

    @property
    def width(self) -> int:
        return self.weight.shape[0]

    @property
    def gain(self) -> np.ndarray:
        """The effective gain :math:`o + w`."""
        return self.offset + self.weight

    def __repr__(self) -> str:
        return f"RMSNormWeights(width={self.width}, eps={self.eps}, offset={self.offset})"


class IdentityNormWeights(RMSNormWeights):
    r"""A norm that is the identity (ModernBERT's first attention norm, an ``nn.Identity``): an RMSNorm of gain 1
    whose diagonal :math:`D` is 1 at every input, so every norm formula holds with :math:`L = I`, :math:`\beta = 0`.

    >>> IdentityNormWeights(3)
    IdentityNormWeights(width=3)
    """

    def __init__(self, width: int) -> None:
        super().__init__(np.ones(check_positive_dim("width", width)))

    def __repr__(self) -> str:
        return f"IdentityNormWeights(width={self.width})"


NormWeights = Union[LayerNormWeights, RMSNormWeights]


def check_norm(name: str, norm: Any, width: int, optional: bool = True) -> None:
    r"""Raise unless ``norm`` is a norm of ``width`` (or ``None`` when ``optional``)."""
    if norm is None:
        if not optional:
            raise InvalidValueError(f"{name} is required, got None")
        return
    if not isinstance(norm, (LayerNormWeights, RMSNormWeights)):
        raise InvalidValueError(f"{name} must be a LayerNormWeights or RMSNormWeights, got {type(norm).__name__}")
    if norm.width != width:
        raise ShapeError(f"{name} has width {norm.width}, expected {width}")


def rms_norm(X: np.ndarray, norm: RMSNormWeights) -> np.ndarray:
    r"""Direct row-wise RMSNorm :math:`(o + w) \odot x / \sqrt{\operatorname{mean}(x^2) + \varepsilon}`."""
    if isinstance(norm, IdentityNormWeights):
        return np.array(X, dtype=np.float64) if is_numpy(X) else copy_array(X)
    if not is_numpy(X):  # another backend (torch): the row rescaling of inverse_rms
        return X * inverse_rms(X, norm.eps)[:, None] * norm.gain
    rows, s = _big_rows(X)
    with np.errstate(over="ignore"):
        ms = np.mean(X * X, axis=-1, keepdims=True)
    out = X / np.sqrt(ms + norm.eps) * norm.gain
    if rows.size:  # huge finite rows: rescale before squaring (symuat.numeric.layernorm)
        Xs = X[rows] / s[:, None]
        out[rows] = Xs / np.sqrt(np.mean(Xs * Xs, axis=-1, keepdims=True) + (norm.eps / s / s)[:, None]) * norm.gain
    return out


def apply_norm(X: np.ndarray, norm: NormWeights) -> np.ndarray:
    r"""Direct row-wise norm of ``X`` (N, M) (LayerNorm or RMSNorm); no validation beyond the type."""
    if isinstance(norm, RMSNormWeights):
        return rms_norm(X, norm)
    if isinstance(norm, LayerNormWeights):
        return apply_layer_norm_weights(X, norm)
    raise InvalidValueError(f"norm must be a LayerNormWeights or RMSNormWeights, got {type(norm).__name__}")


def norm_operator(X: np.ndarray, norm: NormWeights) -> Tuple[LinearOperator, np.ndarray]:
    r"""The norm at input ``X`` as ``(op, bias)``:
    :math:`\operatorname{vec}_r(\mathrm{N}(X)) = \mathrm{op}\,x' + b`.

    LayerNorm: :func:`~symuat.numeric.layernorm.layer_norm_operator`.  RMSNorm:
    :math:`\mathrm{op} = D(X) \otimes \operatorname{diag}(o + w)`, bias :math:`0`; :math:`D` is computed
    as a row-wise dot product, a different code path from :func:`rms_norm`.
    """
    if isinstance(norm, LayerNormWeights):
        return layer_norm_operator(X, norm.gamma, norm.beta, norm.eps)
    if not isinstance(norm, RMSNormWeights):
        raise InvalidValueError(f"norm must be a LayerNormWeights or RMSNormWeights, got {type(norm).__name__}")
    N, M = X.shape
    if isinstance(norm, IdentityNormWeights):
        return IdentityOperator(N * M), zeros_like_backend(X, N * M)
    return Kron(Diagonal(inverse_rms(X, norm.eps)), Diagonal(norm.gain)), zeros_like_backend(X, N * M)


def norm_on_constant_rows(X: np.ndarray, norm: NormWeights, t: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The norm's operator at input ``X`` applied to :math:`\mathbf 1_N\otimes t`, plus its bias, as
    rows :math:`D_n w + c`: returns ``(D, w, c)`` (``D`` per token, :math:`w = g\odot C t` or :math:`g\odot t`,
    :math:`c = \beta` or 0), so that a Linear after it costs :math:`O(MF)` instead of :math:`O(NMF)`."""
    if isinstance(norm, LayerNormWeights):
        Z = X - X.mean(axis=1, keepdims=True)
        return inverse_rms(Z, norm.eps), norm.gamma * (t - t.mean()), norm.beta
    zero = zeros_like_backend(t, t.shape[0])
    if isinstance(norm, IdentityNormWeights):  # D = 1 for every token, w = t
        return zeros_like_backend(X, X.shape[0]) + 1.0, 1.0 * t, zero
    return inverse_rms(X, norm.eps), norm.gain * t, zero
