r"""LayerNorm, directly and as a dynamic matrix–vector map.

LayerNorm is not in the paper; it is needed for pre-LN / post-LN blocks
(docs/conventions.md).  Row-wise, for :math:`x \in \mathbb{R}^M` (one token),

.. math::

    \mathrm{LN}(x) = \gamma \odot \frac{x - \mu(x)\mathbf 1}{\sqrt{\operatorname{var}(x) + \varepsilon}} + \beta,
    \qquad \mu = \tfrac1M \mathbf 1^{\mathsf T} x,\quad
    \operatorname{var} = \tfrac1M \lVert x - \mu\mathbf 1 \rVert^2 \ \text{(biased, as in PyTorch)}.

On :math:`x' = \operatorname{vec}_r(X)` this is the affine map

.. math::

    \operatorname{vec}_r(\mathrm{LN}(X))
    = \underbrace{(D(X) \otimes \operatorname{diag}\gamma)(I_N \otimes C_M)}_{W'(X)}\,x'
    + \mathbf 1_N \otimes \beta,
    \quad C_M = I_M - \tfrac1M \mathbf 1\mathbf 1^{\mathsf T},\quad
    D(X) = \operatorname{diag}\big(1/\sqrt{\operatorname{var}_r + \varepsilon}\big)_{r=1..N}.

:math:`W'(X)` is **dynamic** (through :math:`D(X)`); the bias is **static**.
The identity holds exactly only at the input ``X`` the operator was built from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Tuple

import numpy as np

from symuat.errors import InvalidValueError
from symuat.numeric.operators import Compose, Diagonal, IdentityOperator, Kron
from symuat.validation import as_finite_array, check_positive_dim, check_real_number, check_shape

__all__ = ["LayerNormWeights", "layer_norm", "layer_norm_operator", "apply_layer_norm_weights"]


@dataclass(frozen=True)
class LayerNormWeights:
    r"""LayerNorm parameters :math:`\gamma, \beta \in \mathbb{R}^M` and :math:`\varepsilon > 0`."""

    gamma: np.ndarray
    beta: np.ndarray
    eps: float = 1e-5

    def __post_init__(self) -> None:
        g = as_finite_array("gamma", self.gamma, ndim=1)
        M = check_positive_dim("len(gamma)", g.shape[0])
        b = as_finite_array("beta", self.beta, ndim=1)
        check_shape("beta", b, (M,))
        eps = check_real_number("eps", self.eps, positive=True)
        g, b = g.copy(), b.copy()
        g.setflags(write=False)
        b.setflags(write=False)
        object.__setattr__(self, "gamma", g)
        object.__setattr__(self, "beta", b)
        object.__setattr__(self, "eps", eps)

    @property
    def width(self) -> int:
        return self.gamma.shape[0]


def _args(X: Any, gamma: Any, beta: Any, eps: float):
    X = as_finite_array("X", X, ndim=2)
    check_positive_dim("X.shape[0]", X.shape[0])
    M = check_positive_dim("X.shape[1]", X.shape[1])
    gamma = as_finite_array("gamma", gamma, ndim=1)
    check_shape("gamma", gamma, (M,))
    beta = as_finite_array("beta", beta, ndim=1)
    check_shape("beta", beta, (M,))
    eps = check_real_number("eps", eps, positive=True)
    return X, gamma, beta, eps


def layer_norm(X: Any, gamma: Any, beta: Any, eps: float = 1e-5) -> np.ndarray:
    r"""Direct row-wise LayerNorm :math:`\gamma \odot (x-\mu)/\sqrt{\operatorname{var}+\varepsilon} + \beta`.

    Parameters
    ----------
    X : (N, M) array
    gamma, beta : (M,) arrays
    eps : float > 0

    Returns
    -------
    numpy.ndarray, shape (N, M)
    """
    X, gamma, beta, eps = _args(X, gamma, beta, eps)
    mu = X.mean(axis=1, keepdims=True)
    Z = X - mu
    var = (Z * Z).mean(axis=1, keepdims=True)
    return Z / np.sqrt(var + eps) * gamma + beta


def layer_norm_operator(X: Any, gamma: Any, beta: Any, eps: float = 1e-5) -> Tuple[Compose, np.ndarray]:
    r"""Matrix–vector form of LayerNorm at input ``X``.

    Returns ``(op, bias)`` with
    :math:`\mathrm{op} = (D(X) \otimes \operatorname{diag}\gamma)(I_N \otimes C_M)` (dynamic) and
    :math:`\mathrm{bias} = \mathbf 1_N \otimes \beta` (static), so that
    :math:`\operatorname{vec}_r(\mathrm{LN}(X)) = \mathrm{op}\,\operatorname{vec}_r(X) + \mathrm{bias}`.
    """
    X, gamma, beta, eps = _args(X, gamma, beta, eps)
    N, M = X.shape
    # variance via the centring matrix C_M (a different code path from layer_norm)
    C = np.eye(M) - np.full((M, M), 1.0 / M)
    Z = X @ C
    var = np.einsum("ij,ij->i", Z, Z) / M
    D = 1.0 / np.sqrt(var + eps)
    op = Compose([Kron(Diagonal(D), Diagonal(gamma)), Kron(IdentityOperator(N), C)])
    return op, np.tile(beta, N)


def apply_layer_norm_weights(X: Any, ln: LayerNormWeights) -> np.ndarray:
    """Direct LayerNorm with a :class:`LayerNormWeights` bundle."""
    if not isinstance(ln, LayerNormWeights):
        raise InvalidValueError(f"ln must be a LayerNormWeights, got {type(ln).__name__}")
    return layer_norm(X, ln.gamma, ln.beta, ln.eps)
