r"""Beyond the paper, attention: rotary embeddings, q/k norms, grouped-query attention and masks leave
Eq. 10's closed form :math:`W'_{HVO} = \sum_h H_h\otimes(W_{V,h}W_{O,h})^T` intact (ids ``ext:<layer>.<claim>``).

Each left-hand side is the attention layer as the libraries compute it (a NumPy copy for the float level);
each right-hand side the closed form, with :math:`H_h` built from the derived operators.  Softmax
normalisers and attention matrices are free symbols, so the identities are polynomial in the symbols
and :math:`\sigma` (which stands for :math:`\exp`) and are checked at all three levels.
"""

from __future__ import annotations

import numpy as np
import sympy

from symuat import Entry, Identity, Status, vec_r
from symuat.algebra.families import (
    col_block,
    diag_vector,
    family_hstack,
    family_member,
    family_of,
    family_shapes,
    family_sum,
    row_block,
)
from symuat.algebra.matrices import elementwise, identity_matrix, kron, ones, unvec_r
from symuat.evidence.fields import SIGMA, logistic
from symuat.layers.attention import MultiHeadAttention
from symuat.layers.grouped_attention import causal_padding_mask, grouped_closed_form, repeat_kv, row_stochastic_family
from symuat.layers.rmsnorm import RMSNorm
from symuat.layers.rotary import rotary_operator, rotary_pairs, rotate_half_apply

from ._coq_links import linked
from .ext_layers import ROPE_DIMS, ROPE_SCOPE, np_rope

__all__ = ["entries", "rotary_closed_form_identity", "qk_norm_identity", "gqa_identity", "mask_identity",
           "mask_counts_rhs"]

Matrix = sympy.ImmutableMatrix


# --- rotary ---------------------------------------------------------------------------------------

def _rope_shapes(d):
    h, N, dd, k = d["h"], d["N"], d["d"], rotary_pairs(d["r"], d["d"])
    M = h * dd
    return {"X": (N, M), "WQ": (M, M), "WK": (M, M), "WV": (M, M), "WO": (M, M), "c": (N, k), "s": (N, k),
            **family_shapes("z", h, N, 1)}


def _rope_lhs(e, d):
    r"""Rotary MHA as the libraries compute it: rotate Q_h, K_h, then weights σ(q_n·k_m) z_{h,n}, then values (a sum
    over the heads: the loop at concrete sizes, an index sum on symbolic ones)."""
    dd, X = d["d"], e["X"]

    def head(j):
        Q = rotate_half_apply(X * col_block(e["WQ"], j, dd), e["c"], e["s"])
        K = rotate_half_apply(X * col_block(e["WK"], j, dd), e["c"], e["s"])
        return _weights(e, j, Q * K.T) * X * col_block(e["WV"], j, dd) * row_block(e["WO"], j, dd)
    return vec_r(family_sum(head, d["h"]))


def _rope_rhs(e, d):
    r"""Σ_h H_h ⊗ (W_{V,h} W_{O,h})ᵀ x' with H_h built from the rotary operator on q' and k'."""
    N, dd, x = d["N"], d["d"], vec_r(e["X"])
    R = rotary_operator(e["c"], e["s"], dd)

    def head(j):
        Q = unvec_r(R * (kron(identity_matrix(N), col_block(e["WQ"], j, dd).T) * x), N, dd)
        K = unvec_r(R * (kron(identity_matrix(N), col_block(e["WK"], j, dd).T) * x), N, dd)
        return kron(_weights(e, j, Q * K.T), (col_block(e["WV"], j, dd) * row_block(e["WO"], j, dd)).T)
    return Matrix(family_sum(head, d["h"]) * x)


def _rope_ref(a, d):
    dd, X = d["d"], a["X"]
    out = np.zeros((d["N"], d["h"] * dd))
    for h in range(d["h"]):
        cols = slice(h * dd, (h + 1) * dd)
        Q = np_rope(X @ a["WQ"][:, cols], a["c"], a["s"])
        K = np_rope(X @ a["WK"][:, cols], a["c"], a["s"])
        A = logistic(Q @ K.T) * a[f"z{h + 1}"]
        out += A @ X @ a["WV"][:, cols] @ a["WO"][cols, :]
    return out.reshape(-1)


def rotary_closed_form_identity() -> Identity:
    r"""Rotary MHA = (Σ_h H_h ⊗ (W_{V,h}W_{O,h})ᵀ) x': the rotation enters H_h only (Eq. 10 keeps its closed form)."""
    return Identity(shapes=_rope_shapes, lhs=_rope_lhs, rhs=_rope_rhs, dims=ROPE_DIMS[:4], reference=_rope_ref,
                    random_dims={"h": 2, "N": 3, "d": 4, "r": 2},
                    scope=ROPE_SCOPE + r" The softmax is $\sigma(\mathrm{score})\,z_{h,n}$ with $\sigma$ uninterpreted"
                                        r" (exp) and $z_{h,n}$ a free normaliser, so the check covers every choice"
                                        " of both.")


# --- q/k norms (Qwen3 per head, OLMo-2 full width) ------------------------------------------------

_QK_DIMS = ({"h": 1, "N": 1, "d": 1}, {"h": 1, "N": 2, "d": 2}, {"h": 2, "N": 2, "d": 1}, {"h": 2, "N": 2, "d": 2})


def _qk_shapes(d):
    h, N, dd = d["h"], d["N"], d["d"]
    M = h * dd
    return {"X": (N, M), "WQ": (M, M), "WK": (M, M), "WV": (M, M), "WO": (M, M), "gq": (dd, 1), "gk": (dd, 1),
            **family_shapes("r", h, N, 1), **family_shapes("s", h, N, 1), **family_shapes("z", h, N, 1)}


def _weights(e, j, S):
    r"""The σ-weights :math:`\sigma(S_{nm})\,z_{h,n}` of head ``j``."""
    return diag_vector(family_member(e, "z", j)) * elementwise(SIGMA, S)


def _qk_lhs(e, d):
    r"""Per-head RMSNorm of queries and keys as the libraries apply it, then σ-weights, values, output."""
    dd, X = d["d"], e["X"]

    def head(j):
        Q = RMSNorm(e["gq"]).apply(X * col_block(e["WQ"], j, dd), family_member(e, "r", j))
        K = RMSNorm(e["gk"]).apply(X * col_block(e["WK"], j, dd), family_member(e, "s", j))
        return _weights(e, j, Q * K.T) * X * col_block(e["WV"], j, dd) * row_block(e["WO"], j, dd)
    return vec_r(family_sum(head, d["h"]))


def _qk_rhs(e, d):
    r"""Σ_h H_h ⊗ (W_{V,h} W_{O,h})ᵀ x' with H_h from the dynamic diagonals (diag r ⊗ diag g)(I_N ⊗ W_Qᵀ) x'."""
    N, dd, x = d["N"], d["d"], vec_r(e["X"])

    def head(j):
        q = (RMSNorm(e["gq"]).matrix_vector_form(family_member(e, "r", j)).W_prime
             * (kron(identity_matrix(N), col_block(e["WQ"], j, dd).T) * x))
        k = (RMSNorm(e["gk"]).matrix_vector_form(family_member(e, "s", j)).W_prime
             * (kron(identity_matrix(N), col_block(e["WK"], j, dd).T) * x))
        S = unvec_r(q, N, dd) * unvec_r(k, N, dd).T
        return kron(_weights(e, j, S), (col_block(e["WV"], j, dd) * row_block(e["WO"], j, dd)).T)
    return Matrix(family_sum(head, d["h"]) * x)


def _qk_ref(a, d):
    dd, X = d["d"], a["X"]
    out = np.zeros((d["N"], d["h"] * dd))
    for h in range(d["h"]):
        cols = slice(h * dd, (h + 1) * dd)
        Q = a[f"r{h + 1}"] * (X @ a["WQ"][:, cols]) * a["gq"].T
        K = a[f"s{h + 1}"] * (X @ a["WK"][:, cols]) * a["gk"].T
        out += (logistic(Q @ K.T) * a[f"z{h + 1}"]) @ X @ a["WV"][:, cols] @ a["WO"][cols, :]
    return out.reshape(-1)


def qk_norm_identity() -> Identity:
    r"""MHA with q/k RMSNorm = (Σ_h H_h ⊗ (W_{V,h}W_{O,h})ᵀ) x': the norms act inside H_h only."""
    return Identity(shapes=_qk_shapes, lhs=_qk_lhs, rhs=_qk_rhs, dims=_QK_DIMS, reference=_qk_ref,
                    random_dims={"h": 2, "N": 3, "d": 3},
                    scope=r"Inverse RMS values $r_{h,n}$, $s_{h,n}$ and normalisers $z_{h,n}$ are free symbols;"
                          r" $\sigma$ stands for exp. Per-head norms (Qwen3); a full-width norm (OLMo-2) is the same"
                          r" with one $r_n$ shared by all heads. Up to 2 heads, $N, d \le 2$.")


# --- grouped-query attention ----------------------------------------------------------------------

_GQA_DIMS = tuple({"H": H, "G": G, "N": N, "M": M, "d": 1}
                  for H, G in ((1, 1), (2, 1), (2, 2), (3, 1), (4, 2), (4, 4)) for N in (1, 2) for M in (1, 2))


def _gqa_shapes(d):
    H, G, N, M, dd = d["H"], d["G"], d["N"], d["M"], d["d"]
    return {"X": (N, M), "WV": (M, G * dd), "WO": (H * dd, M), **family_shapes("H", H, N, N)}


def _gqa_lhs(e, d):
    r"""As the libraries compute it: ``repeat_kv`` of the value groups, each head's :math:`H_hV_{g(h)}`
    concatenated, then :math:`W_O` (the loop over heads at concrete sizes; on symbolic ones heads are pairs
    (group, place), :mod:`symuat.allsizes.groups`)."""
    heads = repeat_kv(e["X"] * e["WV"], d["H"], d["G"], d["d"])
    concat = family_hstack(lambda h: family_member(e, "H", h) * heads[h], d["H"])
    return vec_r(concat * e["WO"])


def _np_repeat_kv(V, H: int, G: int, dd: int):
    r"""``repeat_kv`` in NumPy: each group's value block repeated H/G times, consecutively."""
    return [V[:, g * dd:(g + 1) * dd] for g in range(G) for _ in range(H // G)]


def _gqa_ref(a, d):
    V = a["X"] @ a["WV"]
    heads = _np_repeat_kv(V, d["H"], d["G"], d["d"])
    return (np.hstack([a[f"H{h + 1}"] @ heads[h] for h in range(d["H"])]) @ a["WO"]).reshape(-1)


def gqa_identity() -> Identity:
    r"""GQA/MQA output = (Σ_h H_h ⊗ (W_{V,g(h)} W_{O,h})ᵀ) x' with g(h) = ⌊hG/H⌋."""
    return Identity(
        shapes=_gqa_shapes, lhs=_gqa_lhs,
        rhs=lambda e, d: grouped_closed_form(family_of(e, "H", d["H"]), e["WV"], e["WO"], d["G"]) * vec_r(e["X"]),
        dims=_GQA_DIMS, reference=_gqa_ref, random_dims={"H": 4, "G": 2, "N": 3, "M": 3, "d": 2},
        scope=r"$H_h$ free ($N \times N$); (heads, groups) in $\{(1,1),(2,1),(2,2),(3,1),(4,2),(4,4)\}$,"
              r" $N, M \le 2$; the left side repeats each K/V group $H/G$ times as the libraries'"
              r" \texttt{repeat\_kv} does.",
    )


# --- masks ----------------------------------------------------------------------------------------

#: ``r`` real tokens followed by ``N - r`` padded ones (dimensions are positive, so the grid counts real tokens).
#: ``r`` real tokens followed by ``N - r`` padded ones; head width ``d`` (dimensions are positive, so the grid counts
#: real tokens).
_MASK_DIMS = tuple({"h": h, "N": N, "r": r, "d": 1} for h in (1, 2) for N in (1, 2, 3) for r in range(N, 0, -1))


def _mask_shapes(d):
    h, N, M = d["h"], d["N"], d["h"] * d["d"]
    shapes = {"X": (N, M), "WV": (M, M), "WO": (M, M), "bV": (M, 1), "bO": (M, 1)}
    shapes.update(family_shapes("H", h, N, N))
    return shapes


def _masked_mha(e, d) -> MultiHeadAttention:
    allowed = causal_padding_mask(d["N"], d["N"] - d["r"])
    H = row_stochastic_family("H", d["h"], d["N"], allowed)
    return MultiHeadAttention(H, e["WV"], e["WO"], e["bV"], e["bO"])


def _mask_ref(a, d):
    N, p, dd = d["N"], d["N"] - d["r"], d["d"]
    out = np.tile(a["bO"].T, (N, 1))
    for i in range(d["h"]):
        F = a[f"H{i + 1}"]
        Hh = np.zeros((N, N))
        for n in range(N):
            cols = [m for m in range(n + 1) if m < N - p]
            Hh[n, cols[:-1]] = F[n, cols[:-1]]
            Hh[n, cols[-1]] = 1.0 - F[n, cols[:-1]].sum()
        cols = slice(i * dd, (i + 1) * dd)
        out += Hh @ (a["X"] @ a["WV"][:, cols] + a["bV"][cols].T) @ a["WO"][cols, :]
    return out.reshape(-1)


def mask_counts_rhs(e, d):
    r"""The closed form with the value bias counted once per visible key, the mask's 0/1 pattern :math:`C` read as
    the weights of the bias: :math:`W'_{HVO}x' + \sum_h C\mathbf 1_N\otimes W_{O,h}^Tb_{V,h} + \mathbf 1_N\otimes
    b_O` (the Coq mutant ``coq/mutants/ext/Mutant_mask_counts.v``).  False from :math:`N = 2`: query :math:`n` sees
    :math:`n + 1` keys, its weights sum to 1."""
    N, mha = d["N"], _masked_mha(e, d)
    allowed = causal_padding_mask(N, N - d["r"])
    counts = Matrix(N, 1, lambda n, _: sum(1 for m in range(N) if allowed(n, m)))
    value = sum((mha.W_O_head(h).T * row_block(e["bV"], h, mha.head_dim) for h in range(mha.n_heads)),
                sympy.zeros(e["WO"].shape[1], 1))
    return Matrix(mha.W_HVO_closed_form() * vec_r(e["X"]) + kron(counts, value) + kron(ones(N), e["bO"]))


def mask_identity() -> Identity:
    r"""Causal + right-padding mask: MHA with value bias = W'_HVO x' + 1_N ⊗ (Σ_h W_{O,h}ᵀ b_{V,h} + b_O)."""
    return Identity(
        shapes=_mask_shapes, lhs=lambda e, d: vec_r(_masked_mha(e, d).apply(e["X"])),
        rhs=lambda e, d: _masked_mha(e, d).matrix_vector_form().apply(vec_r(e["X"])),
        dims=_MASK_DIMS, reference=_mask_ref, random_dims={"h": 2, "N": 4, "r": 3, "d": 2},
        scope=r"$H_h = \mathrm{softmax}(S + \mathrm{mask})$ is any matrix that vanishes on masked (future or padded) "
              r"keys with rows summing to 1; its free entries are symbols. Up to 2 heads, $N = 3$, $r \le N$ real "
              r"tokens followed by $N - r$ padded ones.",
    )


# --- the entries ----------------------------------------------------------------------------------

_ROPE_MHA = (r"\operatorname{vec}_r\,\mathrm{MHA}_{\mathrm{RoPE}}(\mathbf X) = \textstyle\sum_h \mathbf H_h\otimes"
             r"(\mathbf W_{V,h}\mathbf W_{O,h})^T\,\mathbf x',\ "
             r"\mathbf H_h = \mathrm{softmax}\big((\mathbf R\mathbf Q_h)(\mathbf R\mathbf K_h)^T\big)")
_QKN = (r"\operatorname{vec}_r\,\mathrm{MHA}_{\mathrm{qk\text{-}norm}}(\mathbf X) = \textstyle\sum_h \mathbf H_h"
        r"\otimes(\mathbf W_{V,h}\mathbf W_{O,h})^T\,\mathbf x',\ \mathbf H_h = \mathrm{softmax}\big("
        r"\mathrm{RMS}(\mathbf Q_h)\,\mathrm{RMS}(\mathbf K_h)^T\big)")
_GQA = (r"\mathbf W'_{HVO} = \textstyle\sum_h \mathbf H_h\otimes(\mathbf W_{V,g(h)}\mathbf W_{O,h})^T,\ "
        r"g(h) = \lfloor hG/H\rfloor")
_MASK = (r"\operatorname{vec}_r\,\mathrm{MHA}(\mathbf X) = \mathbf W'_{HVO}\mathbf x' + \mathbf 1_N\otimes\big("
         r"\textstyle\sum_h \mathbf W_{O,h}^T\mathbf b_{V,h} + \mathbf b_O\big)\ \text{under causal and padding masks}")


def entries() -> list[Entry]:
    P = Status.PROVED
    return linked([
        Entry("ext:rotary.closed-form", "rotary position embeddings inside attention", _ROPE_MHA, P,
              rotary_closed_form_identity(),
              note=r"The rotation acts on queries and keys only, so it changes $H_h$ and nothing else: $W'_{HVO}$"
                   " keeps the closed form of Eq. 10."),
        Entry("ext:qk-norm.closed-form", "query/key RMSNorm (Qwen3, OLMo-2)", _QKN, P, qk_norm_identity(),
              note=r"Like rotary, q/k norms change the scores only: $W'_{HVO}$ keeps the closed form of Eq. 10."),
        Entry("ext:gqa.closed-form", "grouped- and multi-query attention", _GQA, P, gqa_identity()),
        Entry("ext:mask.static-value-bias", "additive causal and padding masks", _MASK, P, mask_identity(),
              note=r"Masked rows of $H_h$ still sum to 1, so the value bias stays static; masked keys give zero"
                   " blocks."),
    ])
