r"""Beyond the paper: cross-attention (encoder–decoder, T5's decoder) as an Eq. 10 box with an external input.

A decoder's cross-attention reads its queries from the decoder stream :math:`X` (:math:`N\times M`) and its keys and
values from the encoder's output :math:`E` (:math:`N_e\times M`), an input from *outside* the decoder's residual
stream.  With :math:`H_h(X, E)` (:math:`N\times N_e`, rows summing to one),

.. math::

    \operatorname{vec}_r\big(\mathrm{MHA}(X, E)\big) = \sum_h H_h\otimes(W_{V,h}W_{O,h})^T e' +
    \mathbf 1_N\otimes\Big(\sum_h W_{O,h}^T b_{V,h} + b_O\Big),\qquad e' = \operatorname{vec}_r(E):

Eq. 10's closed form with the operator acting on the *external* vector :math:`e'`, not on :math:`x'`; the bias is
static and has the decoder's :math:`N` rows (the rows of :math:`H_h` sum to one over the encoder's keys).  In the
Eq. 20 box of a decoder block the cross-attention therefore adds a term :math:`W'_E(x', e')\,e'` (dynamic through
:math:`H_h`, which depends on both) next to :math:`W'_1 x'`: the box's output is affine in :math:`x'` *and*
:math:`e'` at frozen :math:`H_h`, and the induction over decoder layers carries :math:`e'` as a second input.

Id ``ext:cross-attention.mv-form``.  Evidence: symbolic, exact :math:`\mathbb F_p` and float64 on free matrices;
each :math:`H_h` has free entries except the last of each row (the row sums to one); the float level compares with a
NumPy reference written here (values of :math:`E`, per-head mixing, output projection).
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from symuat import Entry, Identity, Status, vec_r
from symuat.algebra.families import col_block, family_member, family_shapes, family_sum, row_block
from symuat.algebra.matrices import kron
from symuat.algebra.splits import but_last

from ._coq_links import linked

__all__ = ["entries", "cross_identity", "np_cross", "decoder_stream_rhs"]

Matrix = sympy.ImmutableMatrix


def _shapes(d):
    M, N, Ne = d["h"] * d["d"], d["N"], d["Ne"]
    out = {"X": (N, M), "E": (Ne, M), "WV": (M, M), "WO": (M, M), "bV": (M, 1), "bO": (M, 1)}
    out.update(family_shapes("H", d["h"], N, Ne))
    return out


def _head_matrix(e, d, j):
    r""":math:`H_h` (:math:`N\times N_e`) with free entries; each row's last entry makes the row sum one (the first
    :math:`N_e - 1` columns are free: ``but_last``)."""
    free = but_last(d["Ne"])
    F = family_member(e, "H", j)[:, :free]
    return Matrix.hstack(F, Matrix.ones(d["N"], 1) - F * Matrix.ones(d["Ne"], 1)[:free, :])


def _head(e, d, h):
    dd = d["d"]
    return col_block(e["WV"], h, dd), row_block(e["WO"], h, dd), row_block(e["bV"], h, dd)


def _lhs(e, d):
    r"""The library's order: values of the encoder output, per-head mixing, output projection."""
    def head(h):
        WV, WO, bV = _head(e, d, h)
        return _head_matrix(e, d, h) * (e["E"] * WV + Matrix.ones(d["Ne"], 1) * bV.T) * WO
    return vec_r(Matrix.ones(d["N"], 1) * e["bO"].T + family_sum(head, d["h"]))


def _operator(e, d, x):
    r""":math:`\sum_h H_h\otimes(W_{V,h}W_{O,h})^T x + \mathbf 1_N\otimes(\sum_h W_{O,h}^Tb_{V,h} + b_O)`."""
    def head(h):
        WV, WO, bV = _head(e, d, h)
        return kron(_head_matrix(e, d, h), (WV * WO).T) * x + kron(Matrix.ones(d["N"], 1), WO.T * bV)
    return kron(Matrix.ones(d["N"], 1), e["bO"]) + family_sum(head, d["h"])


def _rhs(e, d):
    r""":math:`\sum_h H_h\otimes(W_{V,h}W_{O,h})^T e' + \mathbf 1_N\otimes(\sum_h W_{O,h}^Tb_{V,h} + b_O)`."""
    return _operator(e, d, vec_r(e["E"]))


def decoder_stream_rhs(e, d):
    r"""The self-attention reading: the operator applied to the decoder's own :math:`x'` (with square
    :math:`N = N_e`).  False: the values come from :math:`E`."""
    return _operator(e, d, vec_r(e["X"]))


def np_cross(a, d) -> np.ndarray:
    r"""NumPy reference in the library's order, :math:`H_h` from the random free entries (last column completed)."""
    out = np.tile(a["bO"].T, (d["N"], 1))
    dd = d["d"]
    for h in range(d["h"]):
        H = np.array(a[f"H{h + 1}"], dtype=float)
        H[:, -1] = 1.0 - H[:, :-1].sum(axis=1)
        s = slice(h * dd, (h + 1) * dd)
        out += H @ (a["E"] @ a["WV"][:, s] + a["bV"][s, 0]) @ a["WO"][s, :]
    return out.reshape(-1)


@functools.cache
def cross_identity() -> Identity:
    r"""Cross-attention = Eq. 10's closed form on the external :math:`e' = \operatorname{vec}_r(E)`, static bias."""
    return Identity(
        shapes=_shapes, lhs=_lhs, rhs=_rhs,
        dims=({"h": 1, "N": 1, "Ne": 1, "d": 1}, {"h": 1, "N": 1, "Ne": 2, "d": 1}, {"h": 1, "N": 2, "Ne": 2, "d": 1},
              {"h": 1, "N": 2, "Ne": 3, "d": 1}, {"h": 2, "N": 1, "Ne": 2, "d": 1}, {"h": 1, "N": 1, "Ne": 2, "d": 2}),
        reference=np_cross, random_dims={"h": 2, "N": 3, "Ne": 4, "d": 2},
        scope=r"$H_h$ ($N\times N_e$) has free entries except the last of each row, which makes the row sum one;"
              r" up to 2 heads, $N = 2$ decoder and $N_e = 3$ encoder tokens.")


_CROSS = (r"\operatorname{vec}_r\big(\mathrm{MHA}(\mathbf X,\mathbf E)\big) = \textstyle\sum_h \mathbf H_h(\mathbf X,"
          r"\mathbf E)\otimes(\mathbf W_{V,h}\mathbf W_{O,h})^T e' + \mathbf 1_N\otimes\big(\sum_h \mathbf W_{O,h}^T"
          r"\mathbf b_{V,h} + \mathbf b_O\big),\ \ e' = \operatorname{vec}_r(\mathbf E)")


def entries() -> list[Entry]:
    """The entry, with its Coq theorem (docs/coq.md)."""
    return linked([
        Entry("ext:cross-attention.mv-form", "cross-attention: Eq. 10 on the encoder's output, an external input",
              _CROSS, Status.PROVED, cross_identity(),
              note=r"Queries from the decoder stream $X$, keys and values from the encoder's output $E$: Eq. 10's"
                   r" closed form acts on $e' = \operatorname{vec}_r(E)$, an input from outside the residual stream,"
                   r" and $H_h$ ($N\times N_e$) depends on both. The bias is static with the decoder's $N$ rows."
                   r" In a decoder block's Eq. 20 box this adds a term $W'_E(x', e')e'$ next to $W'_1x'$; the"
                   r" induction over decoder layers carries $e'$ as a second input. symuat evaluates T5's"
                   r" decoders this way: the term joins $b'_3$ of the decoder block's box, dynamic."),
    ])
