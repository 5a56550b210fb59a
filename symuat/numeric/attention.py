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

Scale :math:`s`: ``"head"`` gives :math:`1/\sqrt d` (PyTorch / Vaswani et al.),
``"paper"`` gives :math:`1/\sqrt M` as printed in seed 001 Eq. 8 and Eq. 35, and a
positive float is used as :math:`s` itself (the multiplier of the scores).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple, Union

import numpy as np

from symuat.errors import InvalidValueError, ShapeError
from symuat.numeric.operators import Kron, KronSum
from symuat.validation import as_finite_array, check_positive_dim, check_real_number, check_shape

__all__ = [
    "AttentionWeights",
    "softmax_rows",
    "resolve_scale",
    "attention_weights",
    "head_attention_weights",
    "multi_head_attention",
    "mha_operator",
]

ScaleLike = Union[str, float]


def softmax_rows(S: Any) -> np.ndarray:
    r"""Row-wise softmax :math:`\operatorname{softmax}(S)_{ij} = e^{S_{ij}-m_i}/\sum_k e^{S_{ik}-m_i}`.

    Here :math:`m_i=\max_k S_{ik}`.

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


def _frozen_array(name: str, a: Any, shape: Tuple[int, ...]) -> np.ndarray:
    arr = as_finite_array(name, a, ndim=len(shape))
    check_shape(name, arr, shape)
    arr = arr.copy()
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class AttentionWeights:
    r"""Weights of one multi-head attention layer (feature-Linear orientation :math:`Y = XW`).

    Attributes
    ----------
    W_Q, W_K, W_V, W_O : (M, M) arrays
        Head :math:`h` uses columns ``h*d:(h+1)*d`` of :math:`W_Q, W_K, W_V` and rows
        ``h*d:(h+1)*d`` of :math:`W_O`, :math:`d = M / n_{heads}`.
    b_Q, b_K, b_V, b_O : (M,) arrays or None
    n_heads : int, must divide M
    scale : ``"head"``, ``"paper"`` or float > 0 (see :func:`resolve_scale`)
    causal : bool
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

    def __post_init__(self) -> None:
        W_Q = as_finite_array("W_Q", self.W_Q, ndim=2)
        M = check_positive_dim("W_Q.shape[0]", W_Q.shape[0])
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            object.__setattr__(self, name, _frozen_array(name, getattr(self, name), (M, M)))
        for name in ("b_Q", "b_K", "b_V", "b_O"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, _frozen_array(name, getattr(self, name), (M,)))
        h = check_positive_dim("n_heads", self.n_heads)
        if M % h != 0:
            raise ShapeError(f"n_heads={h} must divide the width M={M}")
        resolve_scale(self.scale, M // h, M)
        if not isinstance(self.causal, (bool, np.bool_)):
            raise InvalidValueError(f"causal must be a bool, got {type(self.causal).__name__} {self.causal!r}")

    @property
    def width(self) -> int:
        """Model width :math:`M`."""
        return self.W_Q.shape[0]

    @property
    def head_dim(self) -> int:
        """Head width :math:`d = M / n_{heads}`."""
        return self.width // self.n_heads

    def head_slice(self, h: int) -> slice:
        """Columns (of W_Q, W_K, W_V) / rows (of W_O) belonging to head ``h``."""
        d = self.head_dim
        return slice(h * d, (h + 1) * d)

    def scale_value(self) -> float:
        """The score multiplier :math:`s`."""
        return resolve_scale(self.scale, self.head_dim, self.width)


def _check_attn(attn: Any) -> AttentionWeights:
    if not isinstance(attn, AttentionWeights):
        raise InvalidValueError(f"attn must be an AttentionWeights, got {type(attn).__name__}")
    return attn


def _check_X(X: Any, M: int) -> np.ndarray:
    X = as_finite_array("X", X, ndim=2)
    check_positive_dim("X.shape[0]", X.shape[0])
    check_shape("X", X, (None, M))
    return X


def head_attention_weights(X: Any, attn: AttentionWeights) -> List[np.ndarray]:
    r"""The list :math:`[H_1, \dots, H_{n_h}]` of per-head attention matrices at input ``X``."""
    attn = _check_attn(attn)
    X = _check_X(X, attn.width)
    s = attn.scale_value()
    out = []
    for h in range(attn.n_heads):
        sl = attn.head_slice(h)
        out.append(
            attention_weights(
                X,
                attn.W_Q[:, sl],
                attn.W_K[:, sl],
                None if attn.b_Q is None else attn.b_Q[sl],
                None if attn.b_K is None else attn.b_K[sl],
                scale=s,
                causal=bool(attn.causal),
            )
        )
    return out


def multi_head_attention(X: Any, attn: AttentionWeights) -> np.ndarray:
    r"""Direct multi-head attention (seed 001, Eq. 7–8).

    :math:`\mathrm{Concat}(\hat H_1,\dots,\hat H_{n_h}) W_O + \mathbf 1 b_O^{\mathsf T}`.

    :math:`\hat H_h = H_h (X W_{V,h} + \mathbf 1 b_{V,h}^{\mathsf T})`, computed the ordinary way
    (values first, concatenation, one output projection).

    Parameters
    ----------
    X : (N, M) array
    attn : AttentionWeights

    Returns
    -------
    numpy.ndarray, shape (N, M)
    """
    attn = _check_attn(attn)
    X = _check_X(X, attn.width)
    V = X @ attn.W_V
    if attn.b_V is not None:
        V = V + attn.b_V
    Hs = head_attention_weights(X, attn)
    concat = np.concatenate([H @ V[:, attn.head_slice(h)] for h, H in enumerate(Hs)], axis=1)
    Y = concat @ attn.W_O
    if attn.b_O is not None:
        Y = Y + attn.b_O
    return Y


def mha_operator(X: Any, attn: AttentionWeights,
                 heads: Optional[List[np.ndarray]] = None) -> Tuple[KronSum, np.ndarray]:
    r"""Matrix–vector form of MHA at input ``X`` (seed 001, Eq. 9–10, App. A).

    .. math::

        W'_{HVO} = \sum_h H_h \otimes (W_{V,h} W_{O,h})^{\mathsf T},\qquad
        b' = \mathbf 1_N \otimes \Big(\sum_h W_{O,h}^{\mathsf T} b_{V,h} + b_O\Big),

    so that :math:`\operatorname{vec}_r(\mathrm{MHA}(X)) = W'_{HVO}\operatorname{vec}_r(X) + b'`.
    :math:`(W_{V,h}W_{O,h})^{\mathsf T}` is kept factored as
    :math:`W_{O,h}^{\mathsf T} W_{V,h}^{\mathsf T}` (rank :math:`\le d`).

    Parameters
    ----------
    X : (N, M) array
        Input at which the dynamic :math:`H_h` are evaluated.
    attn : AttentionWeights
    heads : list of (N, N) arrays, optional
        Precomputed :math:`H_h` (e.g. from :func:`head_attention_weights`).

    Returns
    -------
    (KronSum, numpy.ndarray)
        The dynamic operator :math:`W'_{HVO}` (shape :math:`(NM, NM)`) and the static bias (length :math:`NM`).
    """
    attn = _check_attn(attn)
    X = _check_X(X, attn.width)
    N, M = X.shape
    if heads is None:
        heads = head_attention_weights(X, attn)
    elif len(heads) != attn.n_heads:
        raise ShapeError(f"heads must hold n_heads={attn.n_heads} matrices, got {len(heads)}")
    terms = []
    c = np.zeros(M)
    for h in range(attn.n_heads):
        sl = attn.head_slice(h)
        H = as_finite_array(f"heads[{h}]", heads[h], ndim=2)
        check_shape(f"heads[{h}]", H, (N, N))
        W_Vh, W_Oh = attn.W_V[:, sl], attn.W_O[sl, :]
        terms.append(Kron(H, (W_Oh.T, W_Vh.T)))
        if attn.b_V is not None:
            c = c + W_Oh.T @ attn.b_V[sl]
    if attn.b_O is not None:
        c = c + attn.b_O
    return KronSum(terms), np.tile(c, N)
