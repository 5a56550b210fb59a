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

Huge finite rows: :math:`\lVert x\rVert^2` overflows for :math:`|x| \gtrsim 10^{154}`, and the norm would
silently return :math:`\beta`.  A row with :math:`\max|x| > 2^{400}` is divided by a power of two
:math:`s \ge \max|x|` before squaring (exact), using
:math:`\mathrm{LN}(x) = \gamma\odot (z/s)/\sqrt{\operatorname{var}(z/s) + \varepsilon/s^2} + \beta`; other
rows take the plain formula, so their results are unchanged bit for bit (:func:`inverse_rms`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from ..errors import InvalidValueError
from ..validation import as_finite_array, check_positive_dim, check_real_number, check_shape
from .backend import is_numpy, namespace, tile
from .operators import Centering, Compose, Diagonal, IdentityOperator, Kron

__all__ = ["LayerNormWeights", "layer_norm", "layer_norm_operator", "apply_layer_norm_weights", "inverse_rms",
           "BIG_ROW"]

#: Rows with a larger entry are rescaled by a power of two before squaring (module docstring).
BIG_ROW = 2.0 ** 400


def _big_rows(Z: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(rows, s)``: indices of rows with max|z| > :data:`BIG_ROW` and a power of two s >= max|z| for each."""
    peak = np.max(np.abs(Z), axis=1) if Z.size else np.zeros(Z.shape[0])
    rows = np.flatnonzero(peak > BIG_ROW)
    return rows, np.ldexp(1.0, np.frexp(peak[rows])[1])


def inverse_rms(Z: np.ndarray, eps: float) -> np.ndarray:
    r""":math:`1/\sqrt{\tfrac1M\lVert z_r\rVert^2 + \varepsilon}` for every row :math:`z_r` of ``Z`` (N, M), finite
    for every finite row (rows above :data:`BIG_ROW` are rescaled first)."""
    M = Z.shape[1]
    if not is_numpy(Z):
        return _inverse_rms_xp(Z, eps)
    rows, s = _big_rows(Z)
    if rows.size == 0:
        return 1.0 / np.sqrt(np.einsum("ij,ij->i", Z, Z) / M + eps)
    out = np.empty(Z.shape[0])
    keep = np.ones(Z.shape[0], bool)
    keep[rows] = False
    Zk = Z[keep]
    out[keep] = 1.0 / np.sqrt(np.einsum("ij,ij->i", Zk, Zk) / M + eps)
    Zs = Z[rows] / s[:, None]
    out[rows] = (1.0 / s) / np.sqrt(np.einsum("ij,ij->i", Zs, Zs) / M + eps / s / s)
    return out


def _inverse_rms_xp(Z: Any, eps: float) -> Any:
    """:func:`inverse_rms` on an array-API backend (torch): every row divided by its power of two ``s`` (1 for the
    rows up to :data:`BIG_ROW`, which leaves them unchanged) before squaring."""
    xp = namespace(Z)
    M = Z.shape[1]
    peak = xp.max(xp.abs(Z), axis=1)
    big = peak > BIG_ROW
    if not bool(xp.any(big)):
        return 1.0 / xp.sqrt(xp.sum(Z * Z, axis=1) / M + eps)
    s = xp.where(big, xp.ldexp(xp.ones_like(peak), xp.frexp(peak)[1]), xp.ones_like(peak))
    Zs = Z / s[:, None]
    return (1.0 / s) / xp.sqrt(xp.sum(Zs * Zs, axis=1) / M + eps / s / s)


@dataclass(frozen=True)
class LayerNormWeights:
    r"""LayerNorm parameters :math:`\gamma, \beta \in \mathbb{R}^M` and :math:`\varepsilon > 0`.

    ``beta=None`` is a LayerNorm without bias (stored as zeros; :attr:`has_bias` remembers it).
    """

    gamma: np.ndarray
    beta: Optional[np.ndarray] = None
    eps: float = 1e-5

    def __post_init__(self) -> None:
        g = as_finite_array("gamma", self.gamma, ndim=1)
        M = check_positive_dim("len(gamma)", g.shape[0])
        object.__setattr__(self, "_has_bias", self.beta is not None)
        b = np.zeros(M) if self.beta is None else as_finite_array("beta", self.beta, ndim=1)
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

    @property
    def has_bias(self) -> bool:
        """Whether a bias :math:`\\beta` was given (``False``: LayerNorm without bias)."""
        return self._has_bias  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"LayerNormWeights(width={self.width}, eps={self.eps}, bias={self.has_bias})"


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
    if is_numpy(X) or not hasattr(X, "device"):
        X, gamma, beta, eps = _args(X, gamma, beta, eps)
    else:  # another backend (torch): arguments from a validated stack; the row rescaling of inverse_rms
        Z = X - X.mean(axis=1, keepdims=True)
        return Z * inverse_rms(Z, eps)[:, None] * gamma + beta
    mu = X.mean(axis=1, keepdims=True)
    Z = X - mu
    rows, s = _big_rows(Z)
    with np.errstate(over="ignore"):
        var = (Z * Z).mean(axis=1, keepdims=True)
    out = Z / np.sqrt(var + eps) * gamma + beta
    if rows.size:  # huge finite rows: rescale before squaring (module docstring)
        Zs = Z[rows] / s[:, None]
        var_s = (Zs * Zs).mean(axis=1, keepdims=True)
        out[rows] = Zs / np.sqrt(var_s + (eps / s / s)[:, None]) * gamma + beta
    return out


def layer_norm_operator(X: Any, gamma: Any, beta: Any, eps: float = 1e-5) -> Tuple[Compose, np.ndarray]:
    r"""Matrix–vector form of LayerNorm at input ``X``.

    Returns ``(op, bias)`` with
    :math:`\mathrm{op} = (D(X) \otimes \operatorname{diag}\gamma)(I_N \otimes C_M)` (dynamic) and
    :math:`\mathrm{bias} = \mathbf 1_N \otimes \beta` (static), so that
    :math:`\operatorname{vec}_r(\mathrm{LN}(X)) = \mathrm{op}\,\operatorname{vec}_r(X) + \mathrm{bias}`.
    """
    if is_numpy(X) or not hasattr(X, "device"):
        X, gamma, beta, eps = _args(X, gamma, beta, eps)
    N, M = X.shape
    # variance via the centring operator C_M and a row-wise dot product (a different code path from layer_norm)
    C = Centering(M)
    centre = Kron(IdentityOperator(N), C)
    Z = centre._matvec(X.reshape(-1)).reshape(N, M)
    D = inverse_rms(Z, eps)
    op = Compose([Kron(Diagonal(D), Diagonal(gamma)), centre])
    return op, tile(beta, N)


def apply_layer_norm_weights(X: Any, ln: LayerNormWeights) -> np.ndarray:
    """Direct LayerNorm with a :class:`LayerNormWeights` bundle."""
    if not isinstance(ln, LayerNormWeights):
        raise InvalidValueError(f"ln must be a LayerNormWeights, got {type(ln).__name__}")
    return layer_norm(X, ln.gamma, ln.beta, ln.eps)
