r"""Multi-head latent attention (DeepSeek-V2/V3, MLA) as an Eq. 10 box (``ext:mla.mv-form``).

Keys and values come from one low-rank latent :math:`C = \mathrm{RMSNorm}_{kv}(XW_{DKV} + \mathbf 1 b^{\mathsf T})
= D(X)\,(XW_{DKV} + \mathbf 1 b^{\mathsf T})\,\Gamma` (:math:`D(X)` the per-token inverse RMS, :math:`\Gamma` the
gain), up-projected per head: :math:`K^{C}_h = C\,W_{UK,h}`, :math:`V_h = C\,W_{UV,h}`.  A decoupled rotary key
:math:`K^R = \mathrm{RoPE}(XW_{KR} + \mathbf 1 b_R^{\mathsf T})` is shared by every head; the query is
:math:`Q_h = [Q^C_h, \mathrm{RoPE}(Q^R_h)]` with :math:`Q = XW_Q` or :math:`\mathrm{RMSNorm}_q(XW_{DQ} + \mathbf 1
b_{DQ}^{\mathsf T})\,W_{UQ}` (query compression).  Scores :math:`s\,(Q^C_h K^{C\,\mathsf T}_h + Q^R_h K^{R\,\mathsf
T})`.  Since :math:`H_h V_h = H_h D(X)\,(XW_{DKV}\Gamma W_{UV,h} + \mathbf 1 (b\Gamma W_{UV,h})^{\mathsf T})`, the
box is Eq. 10 with

.. math::

    \tilde H_h = H_h\,D(X),\qquad W_{V,h} = W_{DKV}\,\Gamma\,W_{UV,h},\qquad b_{V,h} = \Gamma W_{UV,h}^{\mathsf T}b:

the latent norm's diagonal joins the attention matrix (rows of :math:`\tilde H_h` no longer sum to one, so the
value bias is dynamic as with sinks), and the value map is a static low-rank product.  :class:`LatentQK` holds the
query/key side; :class:`~symuat.numeric.AttentionWeights` with ``latent`` holds :math:`W_V, b_V, W_O` and returns
:math:`\tilde H_h` from its heads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ..errors import InvalidValueError, ShapeError
from ..validation import check_positive_dim, check_real_number
from ._arrays import frozen
from .backend import is_numpy, stack
from .layernorm import inverse_rms
from .norms import RMSNormWeights, rms_norm
from .rotary import Rotary, apply_rotary

__all__ = ["LatentQK", "latent_scores"]


@dataclass(frozen=True)
class LatentQK:
    r"""The query/key side of multi-head latent attention (module docstring), feature-Linear orientation.

    Attributes
    ----------
    W_q : (M, H(d_c + d_r)) array or None
        Uncompressed query projection (``q_lora_rank`` None); else ``W_dq``, ``q_norm`` and ``W_uq``.
    W_dq, b_dq, q_norm, W_uq : (M, r_q), (r_q,), RMSNormWeights, (r_q, H(d_c + d_r))
    W_dkv, b_dkv : (M, r), (r,)
        The latent projection (and its bias) shared by keys and values.
    kv_norm : RMSNormWeights
        Over the :math:`r` latent features; its gain is folded into the values' :math:`W_V` by the caller.
    W_uk : (r, H d_c) array
    W_kr, b_kr : (M, d_r), (d_r,)
        The shared rotary key.
    rotary : Rotary
        Over the :math:`d_r` rotary coordinates of each query head and of the shared key.
    n_heads : int
    """

    W_dkv: np.ndarray
    kv_norm: RMSNormWeights
    W_uk: np.ndarray
    W_kr: np.ndarray
    rotary: Rotary
    n_heads: int
    W_q: Optional[np.ndarray] = None
    W_dq: Optional[np.ndarray] = None
    q_norm: Optional[RMSNormWeights] = None
    W_uq: Optional[np.ndarray] = None
    b_dq: Optional[np.ndarray] = None
    b_dkv: Optional[np.ndarray] = None
    b_kr: Optional[np.ndarray] = None

    def __post_init__(self) -> None:
        W = frozen("W_dkv", self.W_dkv, (None, None))
        M, r = W.shape
        H = check_positive_dim("n_heads", self.n_heads)
        object.__setattr__(self, "W_dkv", W)
        if not isinstance(self.kv_norm, RMSNormWeights) or self.kv_norm.width != r:
            raise InvalidValueError(f"kv_norm must be an RMSNormWeights over the {r} latent features")
        Wk = frozen("W_uk", self.W_uk, (r, None))
        if Wk.shape[1] % H:
            raise ShapeError(f"W_uk has {Wk.shape[1]} columns, not a multiple of n_heads={H}")
        object.__setattr__(self, "W_uk", Wk)
        dc = Wk.shape[1] // H
        Wr = frozen("W_kr", self.W_kr, (M, None))
        object.__setattr__(self, "W_kr", Wr)
        dr = Wr.shape[1]
        if not isinstance(self.rotary, Rotary) or self.rotary.dim != dr:
            raise InvalidValueError(f"rotary must be a Rotary over the {dr} rotary key coordinates")
        dq = H * (dc + dr)
        if (self.W_q is None) == (self.W_dq is None):
            raise InvalidValueError("give either W_q (no query compression) or W_dq, q_norm and W_uq")
        if self.W_q is not None:
            object.__setattr__(self, "W_q", frozen("W_q", self.W_q, (M, dq)))
        else:
            Wd = frozen("W_dq", self.W_dq, (M, None))
            object.__setattr__(self, "W_dq", Wd)
            if not isinstance(self.q_norm, RMSNormWeights) or self.q_norm.width != Wd.shape[1]:
                raise InvalidValueError(f"q_norm must be an RMSNormWeights over the {Wd.shape[1]} query latents")
            object.__setattr__(self, "W_uq", frozen("W_uq", self.W_uq, (Wd.shape[1], dq)))
            object.__setattr__(self, "b_dq", frozen("b_dq", self.b_dq, (Wd.shape[1],), optional=True))
        object.__setattr__(self, "b_dkv", frozen("b_dkv", self.b_dkv, (r,), optional=True))
        object.__setattr__(self, "b_kr", frozen("b_kr", self.b_kr, (dr,), optional=True))

    @property
    def width(self) -> int:
        return self.W_dkv.shape[0]

    @property
    def dims(self) -> Tuple[int, int, int]:
        r""":math:`(r, d_c, d_r)`: latent rank, per-head content and rotary dimensions."""
        return self.W_dkv.shape[1], self.W_uk.shape[1] // self.n_heads, self.W_kr.shape[1]

    def __repr__(self) -> str:
        r, dc, dr = self.dims
        return f"LatentQK(width={self.width}, n_heads={self.n_heads}, rank={r}, content={dc}, rotary={dr})"


def _lin(X: np.ndarray, W: np.ndarray, b: Optional[np.ndarray]) -> np.ndarray:
    return X @ W if b is None else X @ W + b


def latent_scores(X: np.ndarray, lat: LatentQK, scale: float, angles) -> Tuple[np.ndarray, np.ndarray]:
    r"""``(S, d)``: the scaled scores :math:`s\,Q_hK_h^{\mathsf T}` of every head, shape ``(H, N, N)``, and the
    latent norm's inverse RMS :math:`D(X)` per token (module docstring)."""
    check_real_number("scale", scale, positive=True)
    H, (_, dc, dr) = lat.n_heads, lat.dims
    N = X.shape[0]
    Z = _lin(X, lat.W_dkv, lat.b_dkv)
    d = inverse_rms(Z, lat.kv_norm.eps)
    KC = (rms_norm(Z, lat.kv_norm) @ lat.W_uk).reshape(N, H, dc)
    KR = apply_rotary(_lin(X, lat.W_kr, lat.b_kr), lat.rotary, angles)
    if lat.W_q is not None:
        Q = X @ lat.W_q
    else:
        Q = rms_norm(_lin(X, lat.W_dq, lat.b_dq), lat.q_norm) @ lat.W_uq
    Q = Q.reshape(N, H, dc + dr)
    if not is_numpy(X):  # torch: the same scores, out of place (the angles moved to the device by the caller)
        return stack([(Q[:, h, :dc] @ KC[:, h, :].T + apply_rotary(Q[:, h, dc:], lat.rotary, angles) @ KR.T)
                      * scale for h in range(H)]), d
    S = np.empty((H, N, N))
    for h in range(H):
        QR = apply_rotary(np.ascontiguousarray(Q[:, h, dc:]), lat.rotary, angles)
        S[h] = Q[:, h, :dc] @ KC[:, h, :].T + QR @ KR.T
    S *= scale
    return S, d
