r"""The matrix–vector form of multi-head attention (seed 001, Eq. 9–10, App. A), structured.

.. math::

    W'_{HVO} = \sum_h H_h \otimes (W_{V,g(h)} W_{O,h})^{\mathsf T},\qquad
    b' = \mathbf 1_N \otimes \Big(\sum_h W_{O,h}^{\mathsf T} b_{V,g(h)} + b_O\Big),

so that :math:`\operatorname{vec}_r(\mathrm{MHA}(X)) = W'_{HVO}\operatorname{vec}_r(X) + b'`; :math:`W'_{HVO}` is
dynamic (the :math:`H_h` depend on :math:`X`), :math:`b'` static (rows of :math:`H_h` sum to one).  With attention
sinks (``AttentionWeights.sinks``) row :math:`n` of :math:`H_h` sums to :math:`1-\pi_{h,n}` and the value bias is
dynamic, :math:`b'_n = \sum_h (1-\pi_{h,n}) W_{O,h}^{\mathsf T} b_{V,g(h)} + b_O` (``ext:attention-sink.mv-form``).

At long N (when one layer's :math:`HN^2` numbers exceed :data:`~symuat.numeric.memory.HEADS_BUDGET`) the operator is
:class:`LazyMHAOperator`: it holds the queries and keys (:class:`~symuat.numeric.attention.HeadPlan`) and computes
each :math:`H_h` inside every application, one head at a time, so it never holds more than one :math:`N\times N`
matrix; its terms are computed on demand.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

from ..errors import ShapeError
from ..validation import check_shape
from .attention import AttentionWeights, HeadPlan, _check_attn, _check_X, _heads, check_attention_mask
from .backend import as_backend_array, check_same_backend, is_numpy, namespace, tile, zeros_like_backend
from .memory import lazy_heads
from .operators import Kron, KronSum

__all__ = ["MHAOperator", "LazyMHAOperator", "hvo_bias_image", "mha_operator", "head_source"]


class MHAOperator(KronSum):
    r""":math:`W'_{HVO} = \sum_h H_h \otimes (W_{V,g(h)} W_{O,h})^{\mathsf T}` applied head-fused:
    :math:`\operatorname{vec}_r^{-1}(v) \mapsto \mathrm{Concat}_h(H_h V_{g(h)})\,W_O` with :math:`V = XW_V`
    (one projection per side instead of one per head; the terms stay available as :attr:`terms`)."""

    def __init__(self, terms, attn: AttentionWeights, heads: List[np.ndarray]):
        super().__init__(terms)
        self._attn = attn
        self._H = _stacked(heads)  # (H, N, N)
        self._group = np.arange(attn.n_heads) * attn.n_kv_heads // attn.n_heads
        if not is_numpy(self._H):  # the gather index on the heads' backend and device
            self._group = namespace(self._H).asarray(self._group, device=self._H.device)

    def _matvec(self, v):
        a = self._attn
        N, d = self._H.shape[1], a.head_dim
        if not is_numpy(v):
            return _matvecs_xp(self._H, self._group, a, v[None, :])[0]
        V = (v.reshape(N, a.width) @ a.W_V).reshape(N, a.n_kv_heads, d).transpose(1, 0, 2)[self._group]
        Y = np.matmul(self._H, V)  # (H, N, d)
        return (Y.transpose(1, 0, 2).reshape(N, a.n_heads * d) @ a.W_O).reshape(-1)

    def _matvecs(self, Vs):
        a = self._attn
        if not is_numpy(Vs):
            return _matvecs_xp(self._H, self._group, a, Vs)
        B, (N, d), G = Vs.shape[0], (self._H.shape[1], a.head_dim), a.n_kv_heads
        V = (Vs.reshape(B * N, a.width) @ a.W_V).reshape(B, N, G, d).transpose(2, 1, 0, 3).reshape(G, N, B * d)
        concat = np.empty((B, N, a.n_heads, d))
        for h in range(a.n_heads):  # one GEMM per head for all B vectors
            concat[:, :, h, :] = (self._H[h] @ V[self._group[h]]).reshape(N, B, d).transpose(1, 0, 2)
        return (concat.reshape(B * N, a.n_heads * d) @ a.W_O).reshape(B, -1)


def _matvecs_xp(Hs, group, a: AttentionWeights, Vs):
    """:meth:`MHAOperator._matvecs` on an array-API backend (torch): the same products, batched over heads."""
    xp = namespace(Vs)
    B, (N, d) = Vs.shape[0], (Hs.shape[1], a.head_dim)
    V = xp.reshape(Vs, (B * N, a.width)) @ a.W_V  # (B N, G d)
    V = xp.permute_dims(xp.reshape(V, (B, N, a.n_kv_heads, d)), (2, 0, 1, 3))[group]  # (H, B, N, d)
    Y = Hs[:, None, :, :] @ V  # (H, B, N, d)
    concat = xp.reshape(xp.permute_dims(Y, (1, 2, 0, 3)), (B * N, a.n_heads * d))
    return xp.reshape(concat @ a.W_O, (B, N * a.width))


class LazyMHAOperator(MHAOperator):
    r""":math:`W'_{HVO}` whose :math:`H_h` are computed inside each application from a
    :class:`~symuat.numeric.attention.HeadPlan`, one head at a time (module docstring); same values as
    :class:`MHAOperator`.  :attr:`terms` (and ``to_dense``) compute every head on demand."""

    def __init__(self, attn: AttentionWeights, plan: HeadPlan):
        self._attn, self._plan = attn, plan
        self._group = np.arange(attn.n_heads) * attn.n_kv_heads // attn.n_heads
        self.shape = (plan.N * attn.width, plan.N * attn.width)

    @property
    def ops(self):
        return tuple(_terms(self._attn, self._plan.heads()))

    def _each_head(self, V: np.ndarray, B: int) -> np.ndarray:
        a, N, d = self._attn, self._plan.N, self._attn.head_dim
        concat = np.empty((B, N, a.n_heads, d))
        H = np.empty((N, N))
        for h in range(a.n_heads):  # H_h computed into one buffer, applied to all B vectors, dropped
            self._plan.head(h, H)
            concat[:, :, h, :] = (H @ V[self._group[h]]).reshape(N, B, d).transpose(1, 0, 2)
        return (concat.reshape(B * N, a.n_heads * d) @ a.W_O).reshape(B, -1)

    def _matvec(self, v):
        return self._matvecs(v[None])[0]

    def _matvecs(self, Vs):
        a = self._attn
        B, N, d, G = Vs.shape[0], self._plan.N, a.head_dim, a.n_kv_heads
        V = (Vs.reshape(B * N, a.width) @ a.W_V).reshape(B, N, G, d).transpose(2, 1, 0, 3).reshape(G, N, B * d)
        return self._each_head(V, B)


def head_source(X: np.ndarray, attn: AttentionWeights, mask: Optional[np.ndarray], where: str = ""):
    r"""The heads of ``attn`` at ``X``: their list, or a :class:`~symuat.numeric.attention.HeadPlan` when one
    layer's :math:`HN^2` numbers exceed the budget (:func:`~symuat.numeric.memory.lazy_heads`; NumPy only: on
    another backend the heads are always computed at once)."""
    if not is_numpy(X):
        return _heads(X, attn, mask, where)
    plan = HeadPlan(X, attn, mask, where)
    return plan if lazy_heads(attn.n_heads, X.shape[0]) else plan.heads()


def _stacked(heads: List[np.ndarray]) -> np.ndarray:
    """The (H, N, N) block of the heads: their common base when they are its consecutive views (``_heads`` returns
    them so), else a stacked copy."""
    base = getattr(heads[0], "base", None)
    if isinstance(base, np.ndarray) and base.shape == (len(heads),) + heads[0].shape and all(
            h.base is base and h.ctypes.data == base[i].ctypes.data for i, h in enumerate(heads)):
        return base
    if is_numpy(heads[0]):
        return np.stack(heads)
    base = getattr(heads[0], "_base", None)  # torch: the views of one (H, N, N) block (attention._heads_xp)
    if base is not None and tuple(base.shape) == (len(heads),) + tuple(heads[0].shape) and all(
            getattr(h, "_base", None) is base and h.data_ptr() == base[i].data_ptr() for i, h in enumerate(heads)):
        return base
    return namespace(heads[0]).stack(heads)


def hvo_bias_image(attn: AttentionWeights, beta: np.ndarray) -> np.ndarray:
    r""":math:`W'_{HVO}(\mathbf 1_N\otimes\beta) = \mathbf 1_N\otimes\sum_h (W_{V,g(h)}W_{O,h})^{\mathsf T}\beta`
    (one row of it, length :math:`M`): every row of every :math:`H_h` sums to one, also with masks (not with
    sinks: :func:`_mha_operator` gives their dynamic bias)."""
    c = beta @ attn.W_V
    parts = [c[attn.kv_slice(h)] for h in range(attn.n_heads)]
    return (np.concatenate(parts) if is_numpy(c) else namespace(c).concat(parts)) @ attn.W_O


def _terms(attn: AttentionWeights, heads: List[np.ndarray]) -> List[Kron]:
    return [Kron(heads[h], (attn.W_O[attn.head_slice(h), :].T, attn.W_V[:, attn.kv_slice(h)].T))
            for h in range(attn.n_heads)]


def _mha_operator(N: int, attn: AttentionWeights, heads) -> Tuple[KronSum, np.ndarray]:
    """The operator and its bias; ``heads`` is a list of :math:`H_h` or a ``HeadPlan`` (lazy)."""
    lazy = isinstance(heads, HeadPlan)
    sinks = not attn.stochastic_rows  # sinks, latent attention: row sums vary
    c = zeros_like_backend(attn.W_O, (N, attn.width) if sinks else attn.width)
    for h in range(attn.n_heads):
        if attn.b_V is not None:
            image = attn.W_O[attn.head_slice(h), :].T @ attn.b_V[attn.kv_slice(h)]
            if sinks:  # row n of H_h sums to 1 - pi_{h,n}: the outer product (row sums) image^T
                c = c + (heads.head(h) if lazy else heads[h]).sum(axis=1)[:, None] * image[None, :]
            else:
                c = c + image
    if attn.b_O is not None:
        c = c + attn.b_O
    op = LazyMHAOperator(attn, heads) if lazy else MHAOperator(_terms(attn, heads), attn, heads)
    return op, (c.reshape(-1) if sinks else tile(c, N))


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
    check_same_backend("X", X, attn.W_O)
    N = X.shape[0]
    if heads is None:
        heads = _heads(X, attn, check_attention_mask(attention_mask, N))
    elif len(heads) != attn.n_heads:
        raise ShapeError(f"heads must hold n_heads={attn.n_heads} matrices, got {len(heads)}")
    else:
        heads = [as_backend_array(f"heads[{h}]", H, 2) for h, H in enumerate(heads)]
        for h, H in enumerate(heads):
            check_shape(f"heads[{h}]", H, (N, N))
    return _mha_operator(N, attn, heads)
