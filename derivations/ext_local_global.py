r"""Beyond the paper: stacks whose layers differ in :math:`H_h` only — symmetric local windows alternating with global
layers (ModernBERT) and NoPE layers among rotary ones (SmolLM3, Llama 4, EXAONE 4) (ids ``ext:symmetric-window.mask``,
``ext:nope.closed-form``).

* *Symmetric local windows*: a bidirectional local layer lets query :math:`n` see key :math:`m` iff
  :math:`|n - m| < w` (ModernBERT: :math:`w = \text{local\_attention}/2 + 1`), a global layer every key
  (:math:`w \ge N`); right padding masks the last :math:`N - r` keys.  The mask is inside :math:`H_h`, whose rows
  still sum to 1: the block is Eq. 10 with the static value bias, as for the causal window
  (``ext:sliding-window.mask``).
* *NoPE layers*: a layer without rotary computes its scores from the unrotated :math:`Q_h, K_h` — its rotary
  operator is the identity.  In a stack that mixes them each layer is its own Eq. 20 box, built from its own
  :math:`H_h^{(l)}` at its own input; the identity shows a NoPE layer as the rotary box with the
  operator of the angles 0 (:math:`R = I`), and the table and its induction (``duat:eq11``, ``ext:*.induction``)
  take the boxes one per layer whatever each :math:`H_h^{(l)}` is.

Evidence: all sizes, symbolic, exact :math:`\mathbb F_p` and float64 with NumPy references written here.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from symuat import Entry, Identity, Status, vec_r
from symuat.algebra.families import col_block, family_member, family_shapes, family_sum, row_block
from symuat.algebra.matrices import identity_matrix, kron, unvec_r
from symuat.evidence.fields import SIGMA, logistic
from symuat.layers.attention import MultiHeadAttention
from symuat.layers.attention_scores import masked_weights, sliding_window_mask, symmetric_window_mask
from symuat.layers.rotary import rotary_operator, rotary_pairs

from ._coq_links import linked
from .ext_attention_variants import window_identity, window_mha

__all__ = ["entries", "symmetric_window_identity", "dropped_value_bias_rhs", "nope_identity", "np_symmetric_band"]

Matrix = sympy.ImmutableMatrix


# --- symmetric local windows ----------------------------------------------------------------------

def np_symmetric_band(N: int, w: int, r: int) -> np.ndarray:
    """Allowed (query, key) pairs of a symmetric window ``w`` over ``r`` real tokens then padding, in NumPy."""
    n, m = np.indices((N, N))
    return np.where(n >= r, n == m, (np.abs(n - m) < w) & (m < r))


@functools.cache
def symmetric_window_identity() -> Identity:
    r"""Symmetric windows, right padding: MHA with value bias = W'_{HVO}x' + 1_N ⊗ (Σ_h W_{O,h}ᵀb_{V,h} + b_O)."""
    return window_identity(
        symmetric_window_mask, lambda d: np_symmetric_band(d["N"], d["w"], d["r"]),
        r"$H_h$ is any matrix supported on the window $|n - m| < w$ (real keys only) with rows summing to 1;"
        r" its free entries are symbols. Windows $w \le 2$ ($w \ge N$: a global layer), up to $N = 3$ with"
        r" $r \le N$ real tokens before $N - r$ padded ones, 2 heads up to $N = 2$.")


def dropped_value_bias_rhs(e, d):
    r"""The closed form with the value bias dropped, as if the keys outside the window took it with them:
    :math:`W'_{HVO}x' + \mathbf 1_N\otimes b_O` (the Coq mutant ``coq/mutants/ext/Mutant_symmetric_dropped.v``).
    False wherever :math:`\sum_h W_{O,h}^Tb_{V,h} \ne 0`: the weights of a row sum to 1."""
    mha = window_mha(e, d, symmetric_window_mask)
    return MultiHeadAttention(mha.H, e["WV"], e["WO"], None, e["bO"]).matrix_vector_form().apply(vec_r(e["X"]))


# --- NoPE layers: the rotary operator is the identity ----------------------------------------------

def _nope_shapes(d):
    M = d["h"] * d["d"]
    return {"X": (d["N"], M), "WQ": (M, M), "WK": (M, M), "WV": (M, M), "WO": (M, M), **family_shapes("z", d["h"],
                                                                                                       d["N"], 1)}


def _weights(e, d, j, Q, K):
    r""":math:`\sigma(q_n\cdot k_m)` times the free normaliser of row :math:`n`, causal."""
    return masked_weights(Q * K.T, sliding_window_mask(d["N"], d["N"]), family_member(e, "z", j), SIGMA)


def _nope_lhs(e, d):
    r"""A NoPE layer as the libraries compute it: no rotation, causal weights, values, output projection."""
    dd, X = d["d"], e["X"]

    def head(j):
        A = _weights(e, d, j, X * col_block(e["WQ"], j, dd), X * col_block(e["WK"], j, dd))
        return A * X * col_block(e["WV"], j, dd) * row_block(e["WO"], j, dd)
    return vec_r(family_sum(head, d["h"]))


def _nope_rhs(e, d):
    r"""The rotary box :math:`\sum_h H_h\otimes(W_{V,h}W_{O,h})^Tx'`, :math:`H_h` from :math:`Rq', Rk'` with the
    operator of the angles 0 (cos 1, sin 0 in every plane of the full width)."""
    N, dd, x = d["N"], d["d"], vec_r(e["X"])
    k = rotary_pairs(dd, dd)
    R = rotary_operator(Matrix(sympy.ones(N, k)), Matrix(sympy.zeros(N, k)), dd)

    def head(j):
        Q, K = (unvec_r(R * (kron(identity_matrix(N), col_block(e[p], j, dd).T) * x), N, dd) for p in ("WQ", "WK"))
        return kron(_weights(e, d, j, Q, K), (col_block(e["WV"], j, dd) * row_block(e["WO"], j, dd)).T)
    return Matrix(family_sum(head, d["h"]) * x)


def _nope_ref(a, d):
    dd, N = d["d"], d["N"]
    causal = np.tril(np.ones((N, N), bool))
    out = np.zeros((N, d["h"] * dd))
    for h in range(d["h"]):
        cols = slice(h * dd, (h + 1) * dd)
        X = a["X"]
        A = np.where(causal, logistic(X @ a["WQ"][:, cols] @ (X @ a["WK"][:, cols]).T), 0.0) * a[f"z{h + 1}"]
        out += A @ X @ a["WV"][:, cols] @ a["WO"][cols, :]
    return out.reshape(-1)


@functools.cache
def nope_identity() -> Identity:
    r"""A NoPE layer = the rotary closed form with the operator of the angles 0 (:math:`R = I`)."""
    return Identity(shapes=_nope_shapes, lhs=_nope_lhs, rhs=_nope_rhs,
                    dims=({"h": 1, "N": 1, "d": 2}, {"h": 1, "N": 2, "d": 2}, {"h": 2, "N": 2, "d": 2}),
                    reference=_nope_ref, random_dims={"h": 2, "N": 3, "d": 2},
                    scope=r"Causal; even head width $d$ (rotary on every plane). The softmax is"
                          r" $\sigma(\mathrm{score})z_{h,n}$ with $\sigma$ uninterpreted (exp) and free normalisers."
                          r" Up to 2 heads, $N = 2$.")


# --- the entries ----------------------------------------------------------------------------------

_WINDOW = (r"\operatorname{vec}_r\,\mathrm{MHA}(\mathbf X) = \mathbf W'_{HVO}\mathbf x' + \mathbf 1_N\otimes\big("
           r"\textstyle\sum_h \mathbf W_{O,h}^T\mathbf b_{V,h} + \mathbf b_O\big),\ {(\mathbf H_h)_{nm} = 0\ "
           r"\text{unless}\ |n - m| < w_i}")
_NOPE = (r"\operatorname{vec}_r\,\mathrm{MHA}_{\mathrm{NoPE}}(\mathbf X) = \textstyle\sum_h \mathbf H_h\otimes"
         r"(\mathbf W_{V,h}\mathbf W_{O,h})^T\,\mathbf x',\ \mathbf H_h = \mathrm{softmax}\big((\mathbf R_0\mathbf"
         r" Q_h)(\mathbf R_0\mathbf K_h)^T + \mathrm{mask}\big),\ \mathbf R_0 = \mathbf R(\theta = 0) = I")


def entries() -> list[Entry]:
    """The two entries, each with its Coq theorem (docs/coq.md)."""
    P = Status.PROVED
    return linked([
        Entry("ext:symmetric-window.mask", "symmetric local windows, local and global layers (ModernBERT)", _WINDOW,
              P, symmetric_window_identity(),
              note=r"ModernBERT's local layers see keys with $|n - m| \le \text{local\_attention}/2$, i.e. $w ="
                   r" \text{local\_attention}/2 + 1$; its global layers are $w \ge N$. The window is a mask per"
                   r" layer inside $H_h$ (the bidirectional counterpart of \texttt{ext:sliding-window.mask}); rows"
                   r" still sum to 1, so the value bias stays static and each layer is the Eq. 20 box of its"
                   r" layout."),
        Entry("ext:nope.closed-form", "NoPE layers among rotary layers (SmolLM3, Llama 4)", _NOPE, P,
              nope_identity(),
              note=r"A NoPE layer's rotary operator is the identity ($\mathbf R = I$): its $H_h$ sees no positions"
                   r" (only the causal mask). Each layer is its own Eq. 20 box with its own $\mathbf W'_l$, so a"
                   r" stack that mixes rotary and NoPE layers keeps the substitution table and its induction"
                   r" unchanged (\texttt{duat:eq11}, every depth in Coq: \texttt{DUAT.duat\_expansion}, whose boxes are"
                   r" any matrices per layer)."),
    ])
