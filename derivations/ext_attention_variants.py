r"""Beyond the paper, attention of the 2024–2025 families: soft-capping, sliding windows, ALiBi and interleaved
rotary change :math:`H_h` only, so Eq. 10's closed form :math:`W'_{HVO} = \sum_h H_h\otimes(W_{V,h}W_{O,h})^T`
holds with the modified :math:`H_h` (ids ``ext:softcap.*``, ``ext:sliding-window.*``, ``ext:alibi.*``,
``ext:rotary.interleaved*``).

Each left-hand side is the layer as the libraries compute it (scores, modifier, mask, weights, values, output
projection); each right-hand side the closed form on :math:`x'=\operatorname{vec}_r(X)` with :math:`H_h` built
by :mod:`symuat.layers.attention_scores` or :mod:`symuat.layers.rotary_interleaved`.  The softmax numerator is
:math:`\sigma(\cdot)` (σ for exp) times a free normaliser :math:`z_{h,n}`; soft-capping's :math:`\tanh` is written
:math:`\tanh y = 2\sigma(2y) - 1` (exact for the logistic σ of the float level, whose NumPy reference calls
``np.tanh``; at the symbolic and exact levels one uninterpreted σ plays both roles).
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from symuat import Entry, Identity, Prose, Status, vec_r
from symuat.algebra.families import (
    col_block,
    diag_vector,
    family_from,
    family_member,
    family_shapes,
    family_sum,
    row_block,
)
from symuat.algebra.matrices import elementwise, identity_matrix, kron, ones, unvec_r
from symuat.evidence.fields import SIGMA, logistic
from symuat.layers.attention import MultiHeadAttention
from symuat.layers.attention_scores import alibi_bias, masked_weights, sliding_window_mask, softcap
from symuat.layers.grouped_attention import row_stochastic_family
from symuat.layers.rotary import rotary_pairs
from symuat.layers.rotary_interleaved import interleaved_rotary_operator, rotate_every_two_apply

from ._coq_links import linked
from .ext_layers import ROPE_DIMS

__all__ = ["entries", "sigma_tanh", "np_band", "np_masked_mha", "np_interleaved_rope", "softcap_identity",
           "sliding_window_identity", "window_identity", "window_mha", "window_width_rhs", "alibi_identity",
           "alibi_query_rhs", "interleaved_operator_identity", "interleaved_closed_form_identity"]

Matrix = sympy.ImmutableMatrix


def sigma_tanh(y):
    r""":math:`\tanh y = 2\sigma(2y) - 1` (σ the logistic function)."""
    return 2 * SIGMA(2 * y) - 1


def np_band(N: int, w: int, p: int) -> np.ndarray:
    """Allowed (query, key) pairs of a sliding window ``w`` with ``p`` left-padded tokens, built with NumPy."""
    band = np.tril(np.ones((N, N), bool)) & np.triu(np.ones((N, N), bool), -(w - 1))
    band[:, :p] = False
    band[:p, :] = np.eye(N, dtype=bool)[:p]
    return band


# --- shared pieces: per-head scores, values, the closed form --------------------------------------

def _head_shapes(d, extra=()):
    h, N, dd = d["h"], d["N"], d["d"]
    M = h * dd
    out = {"X": (N, M), "WQ": (M, M), "WK": (M, M), "WV": (M, M), "WO": (M, M)}
    out.update(family_shapes("z", h, N, 1))
    out.update(dict(extra))
    return out


def _cols(j, dd):
    return slice(j * dd, (j + 1) * dd)


def _library(e, d, weights):
    r"""Σ_h A_h X W_{V,h} W_{O,h} with A_h = weights(h, Q_h, K_h) from the row-wise projections (a family sum over
    the heads: the explicit loop at concrete sizes, an index sum on symbolic ones)."""
    dd, X = d["d"], e["X"]

    def head(j):
        Q, K = X * col_block(e["WQ"], j, dd), X * col_block(e["WK"], j, dd)
        return weights(j, Q, K) * X * col_block(e["WV"], j, dd) * row_block(e["WO"], j, dd)
    return vec_r(family_sum(head, d["h"]))


def _closed_form(e, d, weights):
    r""":math:`\sum_h H_h\otimes(W_{V,h}W_{O,h})^T x'` with :math:`Q_h, K_h` read off
    :math:`(I_N\otimes W_{Q,h}^T)x'` (:class:`~symuat.layers.attention.MultiHeadAttention`)."""
    N, dd, x = d["N"], d["d"], vec_r(e["X"])

    def proj(W, j):
        return unvec_r(kron(identity_matrix(N), col_block(W, j, dd).T) * x, N, dd)

    def H(j):
        return weights(j, proj(e["WQ"], j), proj(e["WK"], j))
    return MultiHeadAttention(family_from(H, d["h"]), e["WV"], e["WO"]).W_HVO_closed_form() * x


def _np_library(a, d, weights):
    dd, X = d["d"], a["X"]
    out = np.zeros((d["N"], d["h"] * dd))
    for j in range(d["h"]):
        c = _cols(j, dd)
        out += weights(j, X @ a["WQ"][:, c], X @ a["WK"][:, c]) @ X @ a["WV"][:, c] @ a["WO"][c, :]
    return out.reshape(-1)


# --- soft-capping (Gemma 2), on a sliding window --------------------------------------------------

def _softcap_weights(e, d):
    def weights(j, Q, K):
        capped = softcap(Q * K.T, e["c"], sigma_tanh)
        return masked_weights(capped, sliding_window_mask(d["N"], d["w"]), family_member(e, "z", j), SIGMA)
    return weights


def _softcap_ref(a, d):
    band, c = np_band(d["N"], d["w"], 0), float(a["c"])
    return _np_library(a, d, lambda j, Q, K: np.where(band, logistic(c * np.tanh(Q @ K.T / c)), 0.0)
                       * a[f"z{j + 1}"])


@functools.cache
def softcap_identity() -> Identity:
    r"""MHA with scores c·tanh(S/c) (and a sliding window) = Σ_h H_h ⊗ (W_{V,h}W_{O,h})ᵀ x'."""
    return Identity(shapes=lambda d: _head_shapes(d, {"c": ()}),
                    lhs=lambda e, d: _library(e, d, _softcap_weights(e, d)),
                    rhs=lambda e, d: _closed_form(e, d, _softcap_weights(e, d)),
                    dims=({"h": 1, "N": 1, "d": 1, "w": 1}, {"h": 1, "N": 2, "d": 1, "w": 1},
                          {"h": 1, "N": 3, "d": 1, "w": 2}, {"h": 2, "N": 2, "d": 1, "w": 2}),
                    reference=_softcap_ref, random_dims={"h": 2, "N": 4, "d": 2, "w": 2},
                    scope=r"The cap $c$ and the normalisers $z_{h,n}$ are free symbols; the scores are"
                                     r" capped, then masked by a sliding window $w$ ($w \ge N$: a global layer). Up"
                                     r" to 2 heads, $N = 3$.")


# --- sliding windows, left padding, static value bias ---------------------------------------------

WINDOW_DIMS = tuple({"h": h, "N": N, "w": w, "r": r} for h in (1, 2) for N in (1, 2, 3) for w in (1, 2)
                    for r in range(N, 0, -1) if h == 1 or N < 3)


def window_shapes(d):
    M = d["h"]
    out = {"X": (d["N"], M), "WV": (M, M), "WO": (M, M), "bV": (M, 1), "bO": (M, 1)}
    out.update(family_shapes("H", d["h"], d["N"], d["N"]))
    return out


def window_mha(e, d, mask=sliding_window_mask) -> MultiHeadAttention:
    """MHA whose heads are row-stochastic families supported on ``mask(N, w, N - r)`` (``N - r`` padded tokens)."""
    H = row_stochastic_family("H", d["h"], d["N"], mask(d["N"], d["w"], d["N"] - d["r"]))
    return MultiHeadAttention(H, e["WV"], e["WO"], e["bV"], e["bO"])


def np_masked_mha(a, d, band: np.ndarray) -> np.ndarray:
    """The reference of a masked MHA with value bias: each head's free entries kept on ``band`` (the allowed keys),
    the last allowed key of each row taking 1 minus the others; ``vec_r`` of the output."""
    N = d["N"]
    out = np.tile(a["bO"].T, (N, 1))
    for i in range(d["h"]):
        Hh = np.where(band, a[f"H{i + 1}"], 0.0)
        for n in range(N):  # the last allowed key takes 1 - the others
            last = np.flatnonzero(band[n])[-1]
            Hh[n, last] = 1.0 - Hh[n].sum() + Hh[n, last]
        out += Hh @ (a["X"] @ a["WV"][:, i:i + 1] + a["bV"][i]) @ a["WO"][i:i + 1, :]
    return out.reshape(-1)


def window_identity(mask, band, scope: str) -> Identity:
    r"""A masked MHA with value bias = :math:`W'_{HVO}x' + \mathbf 1_N\otimes(\sum_h W_{O,h}^Tb_{V,h} + b_O)`: heads
    supported on ``mask`` (symbolic), the reference on ``band(d)`` (NumPy)."""
    return Identity(
        shapes=window_shapes, lhs=lambda e, d: vec_r(window_mha(e, d, mask).apply(e["X"])),
        rhs=lambda e, d: window_mha(e, d, mask).matrix_vector_form().apply(vec_r(e["X"])),
        dims=WINDOW_DIMS, reference=lambda a, d: np_masked_mha(a, d, band(d)),
        random_dims={"h": 2, "N": 5, "w": 2, "r": 4}, scope=scope)


@functools.cache
def sliding_window_identity() -> Identity:
    r"""Sliding-window and left-padding masks: MHA with value bias = W'_{HVO}x' + 1_N ⊗ (Σ_h W_{O,h}ᵀb_{V,h} + b_O)."""
    return window_identity(
        sliding_window_mask, lambda d: np_band(d["N"], d["w"], d["N"] - d["r"]),
        r"$H_h$ is any matrix supported on the window $n - w < m \le n$ (real keys only) with rows summing to"
        r" 1; its free entries are symbols. Windows $w \le 2$, up to $N = 3$ with $r \le N$ real tokens"
        r" after $N - r$ left-padded ones, 2 heads up to $N = 2$.")


def window_width_rhs(e, d):
    r"""The closed form with the value bias counted once per key of a full window, :math:`w` times:
    :math:`W'_{HVO}x' + \mathbf 1_N\otimes(w\sum_h W_{O,h}^Tb_{V,h} + b_O)` (the Coq mutant
    ``coq/mutants/ext/Mutant_window_width.v``).  False for :math:`w \ge 2`: the weights of a row sum to 1."""
    mha = window_mha(e, d)
    value = sum((mha.W_O_head(h).T * row_block(e["bV"], h, mha.head_dim) for h in range(mha.n_heads)),
                sympy.zeros(e["WO"].shape[1], 1))
    return Matrix(mha.W_HVO_closed_form() * vec_r(e["X"]) + kron(ones(d["N"]), d["w"] * value + e["bO"]))


# --- ALiBi (BLOOM, MPT, Falcon variants) ----------------------------------------------------------

def _alibi_weights(e, d):
    p = d["N"] - d["r"]

    def weights(j, Q, K):
        S = Q * K.T + alibi_bias(d["N"], e["sl"][j], p)
        return masked_weights(S, sliding_window_mask(d["N"], d["N"], p), e[f"z{j + 1}"], SIGMA)
    return weights


def alibi_query_rhs(e, d):
    r"""The closed form with the bias on the query positions, :math:`m_h\mathbf p\mathbf 1^T` (:math:`\mathbf 1
    \mathbf p^T` transposed; the Coq mutant ``coq/mutants/ext/Mutant_alibi_query.v``).  A constant per row, which
    the softmax drops: :math:`H_h` loses ALiBi.  False from :math:`N = 2`."""
    p = d["N"] - d["r"]

    def weights(j, Q, K):
        S = Q * K.T + alibi_bias(d["N"], e["sl"][j], p).T
        return masked_weights(S, sliding_window_mask(d["N"], d["N"], p), e[f"z{j + 1}"], SIGMA)
    return _closed_form(e, d, weights)


def _alibi_library(e, d):
    r"""BLOOM's order: the bias tensor from the cumulative attention mask, added to the scores, then masked."""
    N, p = d["N"], d["N"] - d["r"]
    mask = [0] * p + [1] * d["r"]
    pos = [(sum(mask[:m + 1]) - 1) * mask[m] for m in range(N)]

    def weights(j, Q, K):
        S = Q * K.T
        A = sympy.zeros(N, N)
        for n in range(N):
            for m in range(N):
                visible = (m == n) if n < p else (p <= m <= n)
                if visible:
                    A[n, m] = SIGMA(e["sl"][j] * pos[m] + S[n, m]) * e[f"z{j + 1}"][n]
        return A
    return weights


def _alibi_ref(a, d):
    N, p = d["N"], d["N"] - d["r"]
    mask = np.r_[np.zeros(p), np.ones(d["r"])]
    pos = (np.cumsum(mask) - 1) * mask
    band = np_band(N, N, p)
    return _np_library(a, d, lambda j, Q, K: np.where(band, logistic(Q @ K.T + a["sl"][j, 0] * pos[None, :]), 0.0)
                       * a[f"z{j + 1}"])


@functools.cache
def alibi_identity() -> Identity:
    r"""ALiBi: MHA with scores S_h + m_h 1 pᵀ = Σ_h H_h ⊗ (W_{V,h}W_{O,h})ᵀ x'."""
    return Identity(shapes=lambda d: _head_shapes(d, {"sl": (d["h"], 1)}),
                    lhs=lambda e, d: _library(e, d, _alibi_library(e, d)),
                    rhs=lambda e, d: _closed_form(e, d, _alibi_weights(e, d)),
                    dims=({"h": 1, "N": 1, "d": 1, "r": 1}, {"h": 1, "N": 2, "d": 1, "r": 2},
                          {"h": 1, "N": 3, "d": 1, "r": 2}, {"h": 2, "N": 2, "d": 1, "r": 1}),
                    reference=_alibi_ref, random_dims={"h": 2, "N": 4, "d": 2, "r": 3},
                    scope=r"Slopes $m_h$ and normalisers $z_{h,n}$ are free symbols; causal mask with"
                                     r" $N - r$ left-padded tokens, key positions counted over the real tokens"
                                     r" (BLOOM's cumulative mask). Up to 2 heads, $N = 3$.")


# --- interleaved rotary (GPT-J, Cohere) -----------------------------------------------------------

def np_interleaved_rope(Q, c, s):
    """GPT-J's ``apply_rotary_pos_emb`` in NumPy: ``repeat_interleave`` tables, ``rotate_every_two``."""
    k = c.shape[1]
    r = Q[:, :2 * k]
    rot = np.stack([-r[:, 1::2], r[:, ::2]], axis=-1).reshape(r.shape)
    return np.hstack([r * np.repeat(c, 2, axis=1) + rot * np.repeat(s, 2, axis=1), Q[:, 2 * k:]])


def _tables(d) -> dict:
    """The cos/sin tables, :math:`N\times r/2`, of the interleaved planes :math:`(2i, 2i + 1)`."""
    k = rotary_pairs(d["r"], d["d"], "adjacent")
    return {"c": (d["N"], k), "s": (d["N"], k)}


@functools.cache
def interleaved_operator_identity() -> Identity:
    r"""vec_r(q cos + rotate_every_two(q) sin) = (⊕_n R_nᵀ) q' with R_n the rotations of the planes (2i, 2i+1)."""
    return Identity(
        shapes=lambda d: {"Q": (d["N"], d["d"]), **_tables(d)},
        lhs=lambda e, d: vec_r(rotate_every_two_apply(e["Q"], e["c"], e["s"])),
        rhs=lambda e, d: interleaved_rotary_operator(e["c"], e["s"], d["d"]) * vec_r(e["Q"]),
        dims=ROPE_DIMS, reference=lambda a, d: np_interleaved_rope(a["Q"], a["c"], a["s"]).reshape(-1),
        random_dims={"h": 1, "N": 4, "d": 6, "r": 4},
        scope=r"cos/sin are free symbols $c_{n,i}$, $s_{n,i}$; full ($r = d$) and partial ($r < d$, GPT-J's"
              r" \texttt{rotary\_dim}) rotary, up to $N = 2$.")


def _interleaved_weights(e, d, rows: bool):
    def weights(j, Q, K):
        if rows:
            Q, K = (rotate_every_two_apply(P, e["c"], e["s"]) for P in (Q, K))
        else:
            R = interleaved_rotary_operator(e["c"], e["s"], d["d"])
            Q, K = (unvec_r(R * vec_r(P), d["N"], d["d"]) for P in (Q, K))
        return diag_vector(family_member(e, "z", j)) * elementwise(SIGMA, Q * K.T)
    return weights


def _interleaved_ref(a, d):
    def weights(j, Q, K):
        Qr, Kr = (np_interleaved_rope(P, a["c"], a["s"]) for P in (Q, K))
        return logistic(Qr @ Kr.T) * a[f"z{j + 1}"]
    return _np_library(a, d, weights)


@functools.cache
def interleaved_closed_form_identity() -> Identity:
    r"""Interleaved-rotary MHA = Σ_h H_h ⊗ (W_{V,h}W_{O,h})ᵀ x' with H_h from the operator on q', k'."""
    return Identity(shapes=lambda d: _head_shapes(d, _tables(d)),
                    lhs=lambda e, d: _library(e, d, _interleaved_weights(e, d, True)),
                    rhs=lambda e, d: _closed_form(e, d, _interleaved_weights(e, d, False)),
                    dims=(ROPE_DIMS[0],) + ROPE_DIMS[2:4], reference=_interleaved_ref,
                    random_dims={"h": 1, "N": 3, "d": 3, "r": 2},
                    scope=r"cos/sin and the normalisers $z_{h,n}$ are free symbols; full and partial rotary, up to 2"
                          r" heads, $N = 2$.")


# --- the entries ----------------------------------------------------------------------------------

_CF = (r"\operatorname{vec}_r\,\mathrm{MHA}(\mathbf X) = \textstyle\sum_h \mathbf H_h\otimes(\mathbf W_{V,h}"
       r"\mathbf W_{O,h})^T\,\mathbf x'")
_SOFTCAP = _CF + (r",\ \mathbf H_h = \mathrm{softmax}\big(c\tanh(\mathbf S_h/c) + \mathrm{mask}\big)")
_WINDOW = (r"\operatorname{vec}_r\,\mathrm{MHA}(\mathbf X) = \mathbf W'_{HVO}\mathbf x' + \mathbf 1_N\otimes\big("
           r"\textstyle\sum_h \mathbf W_{O,h}^T\mathbf b_{V,h} + \mathbf b_O\big),\ {(\mathbf H_h)_{nm} = 0\ "
           r"\text{unless}\ n - w_i < m \le n}")
_ALIBI = _CF + r",\ \mathbf H_h = \mathrm{softmax}\big(\mathbf S_h + m_h\mathbf 1\mathbf p^T + \mathrm{mask}\big)"
_INTER_OP = (r"\operatorname{vec}_r\big(\mathrm{RoPE}_{\mathrm{interleaved}}(\mathbf Q)\big) = \Big(\textstyle"
             r"\bigoplus_n \mathbf R_n^T\Big)\mathbf q',\ \mathbf R_n \text{ rotating the planes } (2i, 2i+1)")
_INTER_CF = _CF + r",\ \mathbf H_h = \mathrm{softmax}\big((\mathbf R\mathbf Q_h)(\mathbf R\mathbf K_h)^T\big)"
_FINAL = (r"\mathrm{logits} = c\tanh\big(\mathbf W_U\,x'_{\mathrm{out}}/c\big),\ x'_{\mathrm{out}} = \tilde A_{L+1}x'_0"
          r" + \tilde c_{L+1} + \textstyle\sum_j\tilde U^{(L+1)}_j\sigma(\tilde V_jx'_0 + \tilde\beta_j)")


def entries() -> list[Entry]:
    """The entries, ALiBi's with its Coq theorem (docs/coq.md)."""
    P = Status.PROVED
    return linked([
        Entry("ext:softcap.closed-form", "attention soft-capping (Gemma 2)", _SOFTCAP, P, softcap_identity(),
              note=r"The cap acts on the scores before the softmax: it changes $H_h$ and nothing else, so"
                   r" $W'_{HVO}$ keeps the closed form of Eq. 10."),
        Entry("ext:softcap.final-logits", "final-logit soft-capping (Gemma 2)", _FINAL, Status.PROSE,
              Prose(r"Final-logit soft-capping is an entrywise map applied to the logits after the unembedding,"
                    r" outside the stack: the DUAT form of $x'_{\mathrm{out}}$ (\texttt{ext:input-final.induction})"
                    r" is unchanged, and the logits are $c\tanh(\cdot/c)$ of an affine map of it. Unlike attention"
                    r" soft-capping it is not inside any $H_h$; with it, the logits are no longer affine in"
                    r" $x'_{\mathrm{out}}$, so an attribution that is linear in the logits must be taken before the"
                    r" cap (or through its derivative $1 - \tanh^2$).")),
        Entry("ext:sliding-window.mask", "sliding-window attention, local and global layers", _WINDOW, P,
              sliding_window_identity(),
              note=r"A window is a mask per layer: layer $i$ has its own $w_i$ (Mistral, Qwen2 sliding layers, Gemma"
                   r" 2 alternating, Gemma 3 five local to one global, read from \texttt{layer\_types}); a global"
                   r" layer is $w_i \ge N$. Rows of $H_h$ still sum to 1, so the value bias stays static."),
        Entry("ext:alibi.closed-form", "ALiBi position biases (BLOOM, MPT, Falcon)", _ALIBI, P, alibi_identity(),
              note=r"An additive bias inside the softmax: it changes $H_h$ only. $m_h\mathbf 1\mathbf p^T$ (key"
                   r" positions) and the relative $m_h(p_m - p_n)$ differ by a constant per row, which the softmax"
                   r" ignores. Coq proves it for every $N$, padding $p$, number and width of heads and slopes"
                   r" (\texttt{Alibi.alibi\_closed\_form}): BLOOM's positions $(\mathrm{cumsum}(\mathrm{mask}) - 1)"
                   r"\cdot\mathrm{mask}$ are $\max(m - p, 0)$, $\exp$ any function times the free $z_{h,n}$, the"
                   r" scores $S_h$ given; with the normalised softmax ($e^{a+b} = e^ae^b \ne 0$) $H_h$ is also the"
                   r" softmax of the relative bias (\texttt{Alibi.alibi\_relative\_closed\_form})."),
        Entry("ext:rotary.interleaved", "interleaved rotary embeddings, full and partial (GPT-J, Cohere)",
              _INTER_OP, P, interleaved_operator_identity(),
              note=r"Adjacent planes $(2i, 2i+1)$ instead of $(i, i + r/2)$: the same per-position block rotation up"
                   r" to a fixed permutation of the rotated coordinates."),
        Entry("ext:rotary.interleaved-closed-form", "interleaved rotary inside attention", _INTER_CF, P,
              interleaved_closed_form_identity(),
              note=r"As \texttt{ext:rotary.closed-form}: the rotation changes $H_h$ only."),
    ])
