r"""The matrix–vector form of multi-head attention (seed 001, Eq. 9–10, App. A), structured.

.. math::

    W'_{HVO} = \sum_h H_h \otimes (W_{V,g(h)} W_{O,h})^{\mathsf T},\qquad
    b' = \mathbf 1_N \otimes \Big(\sum_h W_{O,h}^{\mathsf T} b_{V,g(h)} + b_O\Big),

so that :math:`\operatorname{vec}_r(\mathrm{MHA}(X)) = W'_{HVO}\operatorname{vec}_r(X) + b'`; :math:`W'_{HVO}` is
dynamic (the :math:`H_h` depend on :math:`X`), :math:`b'` static (rows of :math:`H_h` sum to one).  With attention
sinks (``AttentionWeights.sinks``) row :math:`n` of :math:`H_h` sums to :math:`1-\pi_{h,n}` and the value bias is
dynamic, :math:`b'_n = \sum_h (1-\pi_{h,n}) W_{O,h}^{\mathsf T} b_{V,g(h)} + b_O` (``ext:attention-sink.mv-form``).
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

from ..errors import ShapeError
from ..validation import as_finite_array, check_shape
from .attention import AttentionWeights, _check_attn, _check_X, _heads, check_attention_mask
from .operators import Kron, KronSum

__all__ = ["MHAOperator", "hvo_bias_image", "mha_operator"]


class MHAOperator(KronSum):
    r""":math:`W'_{HVO} = \sum_h H_h \otimes (W_{V,g(h)} W_{O,h})^{\mathsf T}` applied head-fused:
    :math:`\operatorname{vec}_r^{-1}(v) \mapsto \mathrm{Concat}_h(H_h V_{g(h)})\,W_O` with :math:`V = XW_V`
    (one projection per side instead of one per head; the terms stay available as :attr:`terms`)."""

    def __init__(self, terms, attn: AttentionWeights, heads: List[np.ndarray]):
        super().__init__(terms)
        self._attn = attn
        self._H = _stacked(heads)  # (H, N, N)
        self._group = np.arange(attn.n_heads) * attn.n_kv_heads // attn.n_heads

    def _matvec(self, v):
        a = self._attn
        N, d = self._H.shape[1], a.head_dim
        V = (v.reshape(N, a.width) @ a.W_V).reshape(N, a.n_kv_heads, d).transpose(1, 0, 2)[self._group]
        Y = np.matmul(self._H, V)  # (H, N, d)
        return (Y.transpose(1, 0, 2).reshape(N, a.n_heads * d) @ a.W_O).reshape(-1)

    def _matvecs(self, Vs):
        a = self._attn
        B, (N, d), G = Vs.shape[0], (self._H.shape[1], a.head_dim), a.n_kv_heads
        V = (Vs.reshape(B * N, a.width) @ a.W_V).reshape(B, N, G, d).transpose(2, 1, 0, 3).reshape(G, N, B * d)
        concat = np.empty((B, N, a.n_heads, d))
        for h in range(a.n_heads):  # one GEMM per head for all B vectors
            concat[:, :, h, :] = (self._H[h] @ V[self._group[h]]).reshape(N, B, d).transpose(1, 0, 2)
        return (concat.reshape(B * N, a.n_heads * d) @ a.W_O).reshape(B, -1)


def _stacked(heads: List[np.ndarray]) -> np.ndarray:
    """The (H, N, N) block of the heads: their common base when they are its consecutive views (``_heads`` returns
    them so), else a stacked copy."""
    base = getattr(heads[0], "base", None)
    if isinstance(base, np.ndarray) and base.shape == (len(heads),) + heads[0].shape and all(
            h.base is base and h.ctypes.data == base[i].ctypes.data for i, h in enumerate(heads)):
        return base
    return np.stack(heads)


def hvo_bias_image(attn: AttentionWeights, beta: np.ndarray) -> np.ndarray:
    r""":math:`W'_{HVO}(\mathbf 1_N\otimes\beta) = \mathbf 1_N\otimes\sum_h (W_{V,g(h)}W_{O,h})^{\mathsf T}\beta`
    (one row of it, length :math:`M`): every row of every :math:`H_h` sums to one, also with masks (not with
    sinks: :func:`_mha_operator` gives their dynamic bias)."""
    c = beta @ attn.W_V
    return np.concatenate([c[attn.kv_slice(h)] for h in range(attn.n_heads)]) @ attn.W_O


def _mha_operator(N: int, attn: AttentionWeights, heads: List[np.ndarray]) -> Tuple[KronSum, np.ndarray]:
    terms = []
    sinks = not attn.stochastic_rows  # sinks, latent attention: row sums vary
    c = np.zeros((N, attn.width) if sinks else attn.width)
    for h in range(attn.n_heads):
        sl, ks = attn.head_slice(h), attn.kv_slice(h)
        W_Vh, W_Oh = attn.W_V[:, ks], attn.W_O[sl, :]
        terms.append(Kron(heads[h], (W_Oh.T, W_Vh.T)))
        if attn.b_V is not None:
            image = W_Oh.T @ attn.b_V[ks]
            c = c + (np.outer(heads[h].sum(axis=1), image) if sinks else image)
    if attn.b_O is not None:
        c = c + attn.b_O
    return MHAOperator(terms, attn, heads), (c.reshape(-1) if sinks else np.tile(c, N))


def mha_operator(X: Any, attn: AttentionWeights, heads: Optional[List[np.ndarray]] = None,
                 attention_mask: Any = None) -> Tuple[KronSum, np.ndarray]:
    r"""Matrix–vector form of MHA at input ``X`` (seed 001, Eq. 9–10, App. A).

    .. math::

        W'_{HVO} = \sum_h H_h \otimes (W_{V,g(h)} W_{O,h})^{\mathsf T},\qquad
        b' = \mathbf 1_N \otimes \Big(\sum_h W_{O,h}^{\mathsf T} b_{V,g(h)} + b_O\Big),

    so that :math:`\operatorname{vec}_r(\mathrm{MHA}(X)) = W'_{HVO}\operatorname{vec}_r(X) + b'`.
    :math:`(W_{V,g(h)}W_{O,h})^{\mathsf T}` is kept factored (rank :math:`\le d`).

    Parameters
    ----------
    X : (N, M) array
        Input at which the dynamic :math:`H_h` are evaluated.
    attn : AttentionWeights
    heads : list of (N, N) arrays, optional
        Precomputed :math:`H_h` (e.g. from :func:`head_attention_weights`).
    attention_mask : (N,) array of 0/1, optional

    Returns
    -------
    (KronSum, numpy.ndarray)
        The dynamic operator :math:`W'_{HVO}` (shape :math:`(NM, NM)`) and the static bias (length :math:`NM`).
    """
    attn = _check_attn(attn)
    X = _check_X(X, attn.width)
    N = X.shape[0]
    if heads is None:
        heads = _heads(X, attn, check_attention_mask(attention_mask, N))
    elif len(heads) != attn.n_heads:
        raise ShapeError(f"heads must hold n_heads={attn.n_heads} matrices, got {len(heads)}")
    else:
        heads = [as_finite_array(f"heads[{h}]", H, ndim=2) for h, H in enumerate(heads)]
        for h, H in enumerate(heads):
            check_shape(f"heads[{h}]", H, (N, N))
    return _mha_operator(N, attn, heads)
