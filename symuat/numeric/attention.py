r"""Direct multi-head attention and its matrix–vector form.

Two independent computations of the same layer:

* :func:`multi_head_attention` — the ordinary way, seed 001 Eq. 7–8 with standard
  (column-sliced) heads:

  .. math::

      \mathrm{MHA}(X) = \sum_{h=1}^{n_h} H_h\,(X W_{V,h} + \mathbf 1 b_{V,h}^{\mathsf T})\,W_{O,h}
      + \mathbf 1 b_O^{\mathsf T},
      \qquad
      H_h = \operatorname{softmax}_{\text{rows}}\!\big(s\,(X W_{Q,h} + \mathbf 1 b_{Q,h}^{\mathsf T})
      (X W_{K,h} + \mathbf 1 b_{K,h}^{\mathsf T})^{\mathsf T} + \text{mask}\big),

  where :math:`W_{Q,h}, W_{K,h}, W_{V,h}` are the column slices
  ``[:, h*d:(h+1)*d]`` (:math:`d = M/n_h`) and :math:`W_{O,h}` the row slice
  ``W_O[h*d:(h+1)*d, :]``.

* :func:`mha_operator` — the paper's matrix–vector form (seed 001, Eq. 9–10, App. A):

  .. math::

      \operatorname{vec}_r(\mathrm{MHA}(X)) = W'_{HVO}\,\operatorname{vec}_r(X) + b',\qquad
      W'_{HVO} = \sum_h H_h \otimes (W_{V,h} W_{O,h})^{\mathsf T},\quad
      b' = \mathbf 1_N \otimes \Big(\sum_h W_{O,h}^{\mathsf T} b_{V,h} + b_O\Big).

  :math:`W'_{HVO}` is *dynamic* (the :math:`H_h` depend on :math:`X`); :math:`b'` is
  *static*, because every row of :math:`H_h` sums to one so
  :math:`H_h \mathbf 1 b_{V,h}^{\mathsf T} = \mathbf 1 b_{V,h}^{\mathsf T}`.

Generalisations (not in the paper; see ``docs/``): grouped-/multi-query attention (head :math:`h`
uses key/value group :math:`\lfloor hG/H\rfloor` of :math:`G` groups), an explicit head dimension,
optional biases, rotary embeddings and q/k norms applied to :math:`Q` and :math:`K` inside
:math:`H_h` only, a causal flag and an additive key-padding mask given at call time.
:math:`W'_{HVO} = \sum_h H_h \otimes (W_{V,g(h)} W_{O,h})^{\mathsf T}` keeps its closed form.

Scale :math:`s`: ``"head"`` gives :math:`1/\sqrt d` (PyTorch / Vaswani et al.),
``"paper"`` gives :math:`1/\sqrt M` as printed in seed 001 Eq. 8 and Eq. 35, and a
positive float is used as :math:`s` itself (the multiplier of the scores).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, List, Optional, Union

import numpy as np

from ..errors import InvalidValueError, ShapeError
from ..validation import as_finite_array, check_positive_dim, check_real_number, check_shape
from ._arrays import frozen
from .backend import (
    as_backend_array,
    check_same_backend,
    device_of,
    is_array,
    is_numpy,
    namespace,
    to_numpy,
)
from .latent import LatentQK, latent_scores
from .norms import NormWeights, apply_norm, check_norm
from .rotary import Rotary, apply_rotary

__all__ = [
    "AttentionWeights",
    "HeadPlan",
    "softmax_rows",
    "resolve_scale",
    "attention_weights",
    "head_attention_weights",
    "multi_head_attention",
    "check_attention_mask",
]

ScaleLike = Union[str, float]


def softmax_rows(S: Any) -> np.ndarray:
    r"""Row-wise softmax :math:`\operatorname{softmax}(S)_{ij} = e^{S_{ij}-m_i}/\sum_k e^{S_{ik}-m_i}`.

    :math:`m_i=\max_k S_{ik}`.

    ``-inf`` entries (masked positions) are allowed and get weight 0; NaN, ``+inf``
    and rows that are entirely ``-inf`` raise :class:`InvalidValueError`.
    """
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 2:
        raise ShapeError(f"S must be 2-D, got {S.ndim}-D array of shape {S.shape}")
    if np.isnan(S).any() or np.isposinf(S).any():
        raise InvalidValueError(f"S must not contain NaN or +inf (shape {S.shape})")
    m = S.max(axis=1, keepdims=True)
    if np.isneginf(m).any():
        rows = np.flatnonzero(np.isneginf(m[:, 0]))
        raise InvalidValueError(f"S has rows that are entirely -inf (fully masked): rows {rows.tolist()}")
    E = np.exp(S - m)
    return E / E.sum(axis=1, keepdims=True)


def resolve_scale(scale: ScaleLike, head_dim: int, width: int) -> float:
    r"""Return the score multiplier :math:`s` for ``scale`` in {``"head"``, ``"paper"``, float > 0}."""
    if isinstance(scale, str):
        if scale == "head":
            return 1.0 / math.sqrt(head_dim)
        if scale == "paper":
            return 1.0 / math.sqrt(width)
        raise InvalidValueError(f"scale must be 'head', 'paper' or a positive float, got {scale!r}")
    return check_real_number("scale", scale, positive=True)


def attention_weights(
    X: Any,
    W_Q: Any,
    W_K: Any,
    b_Q: Any = None,
    b_K: Any = None,
    scale: ScaleLike = "head",
    causal: bool = False,
) -> np.ndarray:
    r"""Attention matrix of one head (seed 001, Eq. 8 and Eq. 35).

    .. math::

        H = \operatorname{softmax}_{\text{rows}}\big(s\,Q K^{\mathsf T} + \text{mask}\big),\quad
        Q = X W_Q + \mathbf 1 b_Q^{\mathsf T},\ K = X W_K + \mathbf 1 b_K^{\mathsf T},

    with mask :math:`-\infty` above the diagonal when ``causal``.

    Parameters
    ----------
    X : (N, M) array
    W_Q, W_K : (M, d) arrays
    b_Q, b_K : (d,) arrays, optional
    scale : ``"head"`` (:math:`1/\sqrt d`), ``"paper"`` (:math:`1/\sqrt M`) or float > 0
    causal : bool

    Returns
    -------
    numpy.ndarray, shape (N, N)
        Row-stochastic; lower triangular when ``causal``.
    """
    X = as_finite_array("X", X, ndim=2)
    N, M = X.shape
    check_positive_dim("X.shape[0]", N)
    check_positive_dim("X.shape[1]", M)
    W_Q = as_finite_array("W_Q", W_Q, ndim=2)
    check_shape("W_Q", W_Q, (M, None))
    d = check_positive_dim("W_Q.shape[1]", W_Q.shape[1])
    W_K = as_finite_array("W_K", W_K, ndim=2)
    check_shape("W_K", W_K, (M, d))
    if not isinstance(causal, (bool, np.bool_)):
        raise InvalidValueError(f"causal must be a bool, got {type(causal).__name__} {causal!r}")
    s = resolve_scale(scale, d, M)
    Q = X @ W_Q
    K = X @ W_K
    if b_Q is not None:
        b_Q = as_finite_array("b_Q", b_Q, ndim=1)
        check_shape("b_Q", b_Q, (d,))
        Q = Q + b_Q
    if b_K is not None:
        b_K = as_finite_array("b_K", b_K, ndim=1)
        check_shape("b_K", b_K, (d,))
        K = K + b_K
    S = s * (Q @ K.T)
    if causal:
        S = np.where(np.tri(N, dtype=bool), S, -np.inf)
    return softmax_rows(S)



@dataclass(frozen=True)
class AttentionWeights:
    r"""Weights of one multi-head attention layer (feature-Linear orientation :math:`Y = XW`).

    Attributes
    ----------
    W_Q : (M, H*d) array
        Head :math:`h` uses columns ``h*d:(h+1)*d``.
    W_K, W_V : (M, G*d) arrays
        Key/value group :math:`g` uses columns ``g*d:(g+1)*d``; head :math:`h` uses group
        :math:`\lfloor hG/H\rfloor`.
    W_O : (H*d, M) array
        Head :math:`h` uses rows ``h*d:(h+1)*d``.
    b_Q, b_K, b_V, b_O : arrays of matching length, or None
    n_heads : int
        :math:`H`; must divide ``W_Q.shape[1]`` (the width :math:`M` when ``W_Q`` is square).
    scale : ``"head"``, ``"paper"`` or float > 0 (see :func:`resolve_scale`)
    causal : bool
    n_kv_heads : int, optional
        :math:`G` (default :math:`H`); must divide :math:`H` (1 = multi-query attention).
    head_dim : int, optional
        :math:`d`; checked against ``W_Q.shape[1] / n_heads`` when given.
    rotary : Rotary, optional
        Applied to every head's queries and keys (``rotary.dim <= d``).
    q_norm, k_norm : LayerNormWeights or RMSNormWeights, optional
        Applied to the queries / keys (after their biases, before rotary): per head when the
        norm's width is :math:`d` (Qwen3), over all heads when it is :math:`Hd` / :math:`Gd` (OLMo-2).
    sliding_window : int, optional
        :math:`w`: token :math:`i` attends to keys :math:`j > i - w` only (Mistral, Qwen2, Starcoder2, Gemma-2's
        local layers; a mask of this layer, inside :math:`H_h`).
    softcap : float, optional
        :math:`c`: the scores become :math:`c\tanh(S/c)` before the mask and the softmax (Gemma-2 attention
        soft-capping; changes :math:`H_h` only).
    alibi : (H, P) array, optional
        ALiBi: row :math:`h` is added to head :math:`h`'s scaled scores by key position :math:`j < P`
        (:math:`m_h j` up to the library's rounding; an additive bias inside :math:`H_h`).
    position_bias : (H, 2P - 1) array, optional
        A relative position bias (T5): entry :math:`[h, j - i + P - 1]` is added to head :math:`h`'s scaled score of
        query :math:`i` and key :math:`j` (:math:`N \le P`; an additive bias inside :math:`H_h`).
    window : int, optional
        :math:`w`: a symmetric local window, token :math:`i` attends to keys :math:`|i - j| \le w` only
        (ModernBERT's local layers, ``local_attention // 2``; a mask inside :math:`H_h`).
    sinks : (H,) array, optional
        Attention sinks (GPT-OSS): head :math:`h` has one extra logit :math:`z_h` in every row's softmax, which takes
        probability mass and is then dropped, so the rows of :math:`H_h` sum to :math:`1 - \pi_{h,n} < 1`
        (``ext:attention-sink.mv-form``: the value bias :math:`H_h\mathbf 1 b_V^{\mathsf T}` becomes dynamic).
    latent : LatentQK, optional
        Multi-head latent attention (:mod:`symuat.numeric.latent`): queries and keys come from it (``W_Q``, ``W_K``
        are ``None``; no ``rotary``/``q_norm``/``k_norm``/``n_kv_heads``), ``W_V``/``b_V`` are the static value maps
        through the latent, and the heads are :math:`\tilde H_h = H_h D(X)` (``ext:mla.mv-form``).
    """

    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    b_Q: Optional[np.ndarray] = None
    b_K: Optional[np.ndarray] = None
    b_V: Optional[np.ndarray] = None
    b_O: Optional[np.ndarray] = None
    n_heads: int = 1
    scale: ScaleLike = "head"
    causal: bool = False
    n_kv_heads: Optional[int] = None
    head_dim: Optional[int] = None
    rotary: Optional[Rotary] = None
    q_norm: Optional[NormWeights] = None
    k_norm: Optional[NormWeights] = None
    sliding_window: Optional[int] = None
    softcap: Optional[float] = None
    alibi: Optional[np.ndarray] = None
    sinks: Optional[np.ndarray] = None
    latent: Optional[LatentQK] = None
    window: Optional[int] = None
    position_bias: Optional[np.ndarray] = None

    def __post_init__(self) -> None:
        if self.latent is not None:
            return self._latent_post_init()
        W_Q = as_finite_array("W_Q", self.W_Q, ndim=2)
        M = check_positive_dim("W_Q.shape[0]", W_Q.shape[0])
        HD = check_positive_dim("W_Q.shape[1]", W_Q.shape[1])
        H = check_positive_dim("n_heads", self.n_heads)
        if HD % H != 0:
            what = f"the width M={M}" if HD == M else f"W_Q.shape[1]={HD}"
            raise ShapeError(f"n_heads={H} must divide {what}")
        d = HD // H
        if self.head_dim is not None and check_positive_dim("head_dim", self.head_dim) != d:
            raise ShapeError(f"head_dim={self.head_dim} does not match W_Q.shape[1]/n_heads = {HD}/{H} = {d}")
        G = H if self.n_kv_heads is None else check_positive_dim("n_kv_heads", self.n_kv_heads)
        if H % G != 0:
            raise ShapeError(f"n_kv_heads={G} must divide n_heads={H}")
        object.__setattr__(self, "n_heads", H)
        object.__setattr__(self, "n_kv_heads", G)
        object.__setattr__(self, "head_dim", d)
        shapes = {"W_Q": (M, H * d), "W_K": (M, G * d), "W_V": (M, G * d), "W_O": (H * d, M),
                  "b_Q": (H * d,), "b_K": (G * d,), "b_V": (G * d,), "b_O": (M,)}
        for name, shape in shapes.items():
            if getattr(self, name) is not None or name.startswith("W"):
                object.__setattr__(self, name, frozen(name, getattr(self, name), shape))
        resolve_scale(self.scale, d, M)
        if not isinstance(self.causal, (bool, np.bool_)):
            raise InvalidValueError(f"causal must be a bool, got {type(self.causal).__name__} {self.causal!r}")
        object.__setattr__(self, "causal", bool(self.causal))
        if self.rotary is not None:
            if not isinstance(self.rotary, Rotary):
                raise InvalidValueError(f"rotary must be a Rotary or None, got {type(self.rotary).__name__}")
            if self.rotary.dim > d:
                raise ShapeError(f"rotary dim {self.rotary.dim} exceeds head_dim {d}")
        for name, full in (("q_norm", H * d), ("k_norm", G * d)):
            nrm = getattr(self, name)
            if nrm is not None:
                check_norm(name, nrm, nrm.width)
                if nrm.width not in (d, full):
                    raise ShapeError(f"{name} has width {nrm.width}; expected head_dim {d} or {full}")
        if self.sliding_window is not None:
            object.__setattr__(self, "sliding_window", check_positive_dim("sliding_window", self.sliding_window))
        if self.softcap is not None:
            object.__setattr__(self, "softcap", check_real_number("softcap", self.softcap, positive=True))
        if self.alibi is not None:
            object.__setattr__(self, "alibi", frozen("alibi", self.alibi, (H, None)))
        if self.sinks is not None:
            object.__setattr__(self, "sinks", frozen("sinks", self.sinks, (H,)))
        if self.window is not None:
            w = self.window
            if isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 0:
                raise InvalidValueError(f"window must be an int >= 0 (keys |i - j| <= window), got {w!r}")
            object.__setattr__(self, "window", int(w))
        if self.position_bias is not None:
            table = frozen("position_bias", self.position_bias, (H, None))
            if table.shape[1] % 2 == 0:
                raise ShapeError(f"position_bias must have 2P - 1 columns (relative positions -(P-1)..P-1), got "
                                 f"{table.shape[1]}")
            object.__setattr__(self, "position_bias", table)

    def _latent_post_init(self) -> None:
        lat = self.latent
        if not isinstance(lat, LatentQK):
            raise InvalidValueError(f"latent must be a LatentQK, got {type(lat).__name__}")
        busy = [k for k in ("W_Q", "W_K", "rotary", "q_norm", "k_norm", "alibi", "softcap")
                if getattr(self, k) is not None]
        if busy:
            raise InvalidValueError(f"latent attention computes its own queries and keys: {', '.join(busy)} must be "
                                    "None")
        H = check_positive_dim("n_heads", self.n_heads)
        if H != lat.n_heads or self.n_kv_heads not in (None, H):
            raise ShapeError(f"latent attention has {lat.n_heads} heads, each with its own values: n_heads={H}, "
                             f"n_kv_heads={self.n_kv_heads!r}")
        M = lat.width
        W_O = frozen("W_O", self.W_O, (None, M))
        if W_O.shape[0] % H:
            raise ShapeError(f"W_O has {W_O.shape[0]} rows, not a multiple of n_heads={H}")
        d = W_O.shape[0] // H
        if self.head_dim is not None and self.head_dim != d:
            raise ShapeError(f"head_dim={self.head_dim} does not match W_O.shape[0]/n_heads = {d}")
        for k, v in (("n_heads", H), ("n_kv_heads", H), ("head_dim", d), ("W_O", W_O),
                     ("W_V", frozen("W_V", self.W_V, (M, H * d))),
                     ("b_V", frozen("b_V", self.b_V, (H * d,), optional=True)),
                     ("b_O", frozen("b_O", self.b_O, (M,), optional=True))):
            object.__setattr__(self, k, v)
        if self.b_Q is not None or self.b_K is not None:
            raise InvalidValueError("latent attention: b_Q and b_K must be None (its biases live in the LatentQK)")
        resolve_scale(self.scale, d, M)
        if not isinstance(self.scale, (int, float)) or isinstance(self.scale, bool):
            raise InvalidValueError(f"latent attention needs its score multiplier as a number, got {self.scale!r}")
        object.__setattr__(self, "causal", bool(self.causal))
        if self.sliding_window is not None:
            object.__setattr__(self, "sliding_window", check_positive_dim("sliding_window", self.sliding_window))
        if self.sinks is not None:
            object.__setattr__(self, "sinks", frozen("sinks", self.sinks, (H,)))

    @property
    def stochastic_rows(self) -> bool:
        r"""Whether every row of every :math:`H_h` sums to one (not with sinks, not for latent attention's
        :math:`\tilde H_h`): then the value bias is static (Eq. 10's :math:`b'`)."""
        return self.sinks is None and self.latent is None

    def __repr__(self) -> str:
        extra = "".join(f", {k}" for k in ("rotary", "q_norm", "k_norm", "sinks", "latent")
                        if getattr(self, k) is not None)
        extra += "".join(f", {k}={getattr(self, k)!r}" for k in ("sliding_window", "window", "softcap")
                         if getattr(self, k) is not None)
        return (f"AttentionWeights(width={self.width}, n_heads={self.n_heads}, n_kv_heads={self.n_kv_heads}, "
                f"head_dim={self.head_dim}, causal={self.causal}{extra})")

    @property
    def width(self) -> int:
        """Model width :math:`M`."""
        return self.W_O.shape[1]

    def head_slice(self, h: int) -> slice:
        """Columns of ``W_Q`` / rows of ``W_O`` belonging to head ``h``."""
        d = self.head_dim
        return slice(h * d, (h + 1) * d)

    def kv_slice(self, h: int) -> slice:
        r"""Columns of ``W_K``, ``W_V`` used by head ``h`` (group :math:`\lfloor hG/H\rfloor`)."""
        g = h * self.n_kv_heads // self.n_heads
        d = self.head_dim
        return slice(g * d, (g + 1) * d)

    def scale_value(self) -> float:
        """The score multiplier :math:`s`."""
        return resolve_scale(self.scale, self.head_dim, self.width)


def _check_attn(attn: Any) -> AttentionWeights:
    if not isinstance(attn, AttentionWeights):
        raise InvalidValueError(f"attn must be an AttentionWeights, got {type(attn).__name__}")
    return attn


def _check_X(X: Any, M: int) -> np.ndarray:
    X = as_backend_array("X", X, 2)
    check_positive_dim("X.shape[0]", X.shape[0])
    check_shape("X", X, (None, M))
    return X


def check_attention_mask(attention_mask: Any, N: int) -> Optional[np.ndarray]:
    r"""Validate a key-padding mask: ``None`` or a length-``N`` vector of 0/1 (1 = attend to this token); returned as a
    NumPy bool array on every backend (a torch mask is read on the host)."""
    if attention_mask is None:
        return None
    if is_array(attention_mask) and not is_numpy(attention_mask):  # a torch mask: N values, read on the host
        attention_mask = to_numpy(attention_mask)
    m = as_finite_array("attention_mask", attention_mask, ndim=1)
    check_shape("attention_mask", m, (N,))
    if not np.all((m == 0) | (m == 1)):
        raise InvalidValueError(f"attention_mask must hold only 0 and 1, got values {sorted(set(m.tolist()))[:5]}")
    return m.astype(bool)


def _project(X: np.ndarray, W: np.ndarray, b: Optional[np.ndarray], nrm: Optional[NormWeights], d: int) -> np.ndarray:
    Z = X @ W
    if b is not None:
        Z = Z + b
    if nrm is not None:
        if nrm.width == Z.shape[1]:
            Z = apply_norm(Z, nrm)
        else:  # per head
            Z = apply_norm(Z.reshape(-1, d), nrm).reshape(Z.shape)
    return Z


class HeadPlan:
    r"""What the attention matrices :math:`H_h` at one input are computed from (queries, rotated keys, the mask, or
    latent attention's scores), so that each :math:`H_h` can be computed when it is needed and dropped after use
    (issue 30: at long N one layer's :math:`HN^2` numbers need not be held).  ``X`` and ``mask`` are already
    validated; a fully masked row is refused here, an overflowing score when its head is computed (the message names
    the layer and head)."""

    def __init__(self, X: np.ndarray, attn: AttentionWeights, mask: Optional[np.ndarray], where: str = ""):
        N = X.shape[0]
        self.attn, self.N, self.where = attn, N, where
        d = attn.head_dim
        self.latent = self.D = self.Q = self.K = None
        if attn.latent is not None:
            angles = attn.latent.rotary.angles(N)  # on the host; moved to the device on torch
            if not is_numpy(X):
                angles = tuple(namespace(X).asarray(a, device=device_of(X)) for a in angles)
            self.latent, self.D = latent_scores(X, attn.latent, attn.scale_value(), angles)
        else:
            self.Q = _project(X, attn.W_Q, attn.b_Q, attn.q_norm, d)
            self.K = _project(X, attn.W_K, attn.b_K, attn.k_norm, d)
        self.angles = None if attn.rotary is None else attn.rotary.angles(N)
        keep = np.ones((N, N), dtype=bool)
        if attn.causal:
            keep &= np.tri(N, dtype=bool)
        if attn.sliding_window is not None:
            keep &= ~np.tri(N, k=-attn.sliding_window, dtype=bool)
        if attn.window is not None:  # symmetric local window |i - j| <= w
            pos = np.arange(N)
            keep &= np.abs(pos[:, None] - pos[None, :]) <= attn.window
        if mask is not None:
            keep &= mask[None, :]
        empty = ~keep.any(axis=1)
        if empty.any():
            raise InvalidValueError(f"attention{where}: rows {np.flatnonzero(empty).tolist()} are fully masked "
                                    "(no key to attend to); fix attention_mask")
        if attn.alibi is not None and attn.alibi.shape[1] < N:
            raise ShapeError(f"the ALiBi table covers {attn.alibi.shape[1]} positions, the input has {N}")
        self.relative = None
        if attn.position_bias is not None:
            P = (attn.position_bias.shape[1] + 1) // 2
            if N > P:
                raise ShapeError(f"the relative position bias covers {P} positions, the input has {N}")
            self.relative = np.arange(N)[None, :] - np.arange(N)[:, None] + P - 1
        self.drop = None if bool(np.all(keep)) else ~keep
        self._rotated_k: dict = {}

    def _qk(self, h: int):
        """Head ``h``'s rotated queries and keys (the keys of its group computed once)."""
        attn = self.attn
        Qh, ks = self.Q[:, attn.head_slice(h)], attn.kv_slice(h)
        Kh = self._rotated_k.get(ks.start)
        if Kh is None:
            Kh = self.K[:, ks] if self.angles is None else apply_rotary(self.K[:, ks], attn.rotary, self.angles)
            self._rotated_k[ks.start] = Kh
        if self.angles is not None:
            Qh = apply_rotary(Qh, attn.rotary, self.angles)
        return Qh, Kh

    def head(self, h: int, out: Optional[np.ndarray] = None) -> np.ndarray:
        r""":math:`H_h` (N×N), written into ``out`` when given."""
        attn, N = self.attn, self.N
        S = np.empty((N, N)) if out is None else out
        if self.latent is not None:
            S[...] = self.latent[h]
            Qh = Kh = S  # the overflow message below names the scores
        else:
            Qh, Kh = self._qk(h)
        with np.errstate(over="ignore", invalid="ignore"):
            if self.latent is None:
                np.matmul(Qh, Kh.T, out=S)
                S *= attn.scale_value()
            if attn.alibi is not None:
                S += attn.alibi[h, :N]
            if attn.position_bias is not None:
                S += attn.position_bias[h][self.relative]
            if attn.softcap is not None:
                S /= attn.softcap
                np.tanh(S, out=S)
                S *= attn.softcap
        if not np.all(np.isfinite(S)):
            raise InvalidValueError(f"attention{self.where} head {h}: the scores s*Q_h K_h^T overflow float64 "
                                    f"(max |Q_h| = {np.max(np.abs(Qh)):.3g}, max |K_h| = {np.max(np.abs(Kh)):.3g})")
        if self.drop is not None:
            S[self.drop] = -np.inf
        if attn.sinks is None:
            S -= S.max(axis=1, keepdims=True)
            np.exp(S, out=S)
            S /= S.sum(axis=1, keepdims=True)
        else:  # the sink's logit z_h joins every row's softmax and is dropped: rows sum to 1 - pi
            z = attn.sinks[h]
            m = np.maximum(S.max(axis=1, keepdims=True), z)
            S -= m
            np.exp(S, out=S)
            S /= S.sum(axis=1, keepdims=True) + np.exp(z - m)
        if self.D is not None:  # latent attention: the latent norm's diagonal joins the head, H_h D(X)
            S *= self.D[None, :]
        return S

    def heads(self) -> List[np.ndarray]:
        """Every :math:`H_h`, as views of one ``(H, N, N)`` block (no second copy in ``MHAOperator``)."""
        out = np.empty((self.attn.n_heads, self.N, self.N))
        for h in range(self.attn.n_heads):
            self.head(h, out[h])
        return list(out)


def _heads(X: np.ndarray, attn: AttentionWeights, mask: Optional[np.ndarray], where: str = "") -> List[np.ndarray]:
    """Per-head attention matrices; ``X`` and ``mask`` already validated."""
    if is_numpy(X):
        return HeadPlan(X, attn, mask, where).heads()
    return _heads_xp(HeadPlan(X, attn, mask, where), where)


def _heads_xp(plan: HeadPlan, where: str) -> List[Any]:
    """The per-head loop of :func:`_heads` on an array-API backend (torch): the same operations, out of place."""
    attn = plan.attn
    Q = plan.Q if plan.latent is None else plan.latent  # the backend's arrays: queries, or latent scores
    xp = namespace(Q)
    N, s = plan.N, attn.scale_value()
    drop = None if plan.drop is None else xp.asarray(plan.drop, device=Q.device)
    out = xp.empty((attn.n_heads, N, N), dtype=Q.dtype, device=Q.device)  # one block, the heads are its views
    if plan.angles is not None:  # computed on the host (Rotary.angles)
        plan.angles = tuple(xp.asarray(a, device=Q.device) for a in plan.angles)
    relative = None if plan.relative is None else xp.asarray(plan.relative, device=Q.device)
    for h in range(attn.n_heads):
        if plan.latent is not None:  # latent attention: the scaled scores of every head, computed at once
            S = Qh = Kh = plan.latent[h]
        else:
            Qh, Kh = plan._qk(h)
            S = (Qh @ Kh.T) * s
        if attn.alibi is not None:
            S = S + attn.alibi[h, :N]
        if relative is not None:  # T5's bias of every relative position j - i, gathered on the device
            S = S + attn.position_bias[h][relative]
        if attn.softcap is not None:
            S = xp.tanh(S / attn.softcap) * attn.softcap
        if not bool(xp.all(xp.isfinite(S))):
            raise InvalidValueError(f"attention{where} head {h}: the scores s*Q_h K_h^T overflow float64 "
                                    f"(max |Q_h| = {float(xp.max(xp.abs(Qh))):.3g}, "
                                    f"max |K_h| = {float(xp.max(xp.abs(Kh))):.3g})")
        if drop is not None:
            S = xp.where(drop, -xp.inf, S)
        if attn.sinks is None:
            S = xp.exp(S - xp.max(S, axis=1, keepdims=True))
            out[h, ...] = S / xp.sum(S, axis=1, keepdims=True)
        else:  # the sink's logit z_h joins every row's softmax and is dropped: rows sum to 1 - pi
            z = attn.sinks[h]
            m = xp.maximum(xp.max(S, axis=1, keepdims=True), z)
            S = xp.exp(S - m)
            out[h, ...] = S / (xp.sum(S, axis=1, keepdims=True) + xp.exp(z - m))
        if plan.D is not None:  # latent attention: the latent norm's diagonal joins the head, H_h D(X)
            out[h, ...] = out[h, ...] * plan.D[None, :]
    return [out[h, ...] for h in range(attn.n_heads)]


def head_attention_weights(X: Any, attn: AttentionWeights, attention_mask: Any = None) -> List[np.ndarray]:
    r"""The list :math:`[H_1, \dots, H_{n_h}]` of per-head attention matrices at input ``X``."""
    attn = _check_attn(attn)
    X = _check_X(X, attn.width)
    check_same_backend("X", X, attn.W_O)
    return _heads(X, attn, check_attention_mask(attention_mask, X.shape[0]))


def _mha(X: np.ndarray, attn: AttentionWeights, Hs: List[np.ndarray]) -> np.ndarray:
    V = X @ attn.W_V
    if attn.b_V is not None:
        V = V + attn.b_V
    if not is_numpy(X):
        concat = namespace(X).concat([H @ V[:, attn.kv_slice(h)] for h, H in enumerate(Hs)], axis=1)
        Y = concat @ attn.W_O
        return Y if attn.b_O is None else Y + attn.b_O
    concat = np.empty((X.shape[0], attn.n_heads * attn.head_dim))
    for h, H in enumerate(Hs):
        concat[:, attn.head_slice(h)] = H @ np.ascontiguousarray(V[:, attn.kv_slice(h)])
    Y = concat @ attn.W_O
    if attn.b_O is not None:
        Y = Y + attn.b_O
    return Y


def multi_head_attention(X: Any, attn: AttentionWeights, attention_mask: Any = None) -> np.ndarray:
    r"""Direct multi-head attention (seed 001, Eq. 7–8).

    :math:`\mathrm{Concat}(\hat H_1,\dots,\hat H_{n_h}) W_O + \mathbf 1 b_O^{\mathsf T}`.

    :math:`\hat H_h = H_h (X W_{V,g(h)} + \mathbf 1 b_{V,g(h)}^{\mathsf T})`, computed the ordinary way
    (values first, concatenation, one output projection).

    Parameters
    ----------
    X : (N, M) array
    attn : AttentionWeights
    attention_mask : (N,) array of 0/1, optional
        Key-padding mask (0 = this token is never attended to).

    Returns
    -------
    numpy.ndarray, shape (N, M)
    """
    attn = _check_attn(attn)
    X = _check_X(X, attn.width)
    check_same_backend("X", X, attn.W_O)
    return _mha(X, attn, _heads(X, attn, check_attention_mask(attention_mask, X.shape[0])))

