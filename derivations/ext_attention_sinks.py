r"""Beyond the paper: attention sinks (GPT-OSS, StreamingLLM-style learned sinks).

A sink is one extra logit :math:`t_h` per head in every row's softmax whose value is dropped:
:math:`(H_h)_{nm} = e^{S_{nm}}/(\sum_{m'} e^{S_{nm'}} + e^{t_h})`.  The sink takes the probability mass
:math:`\pi_{h,n} = e^{t_h}/(\sum_{m'} e^{S_{nm'}} + e^{t_h})`, so the rows of :math:`H_h` sum to
:math:`1 - \pi_{h,n}` instead of 1.  Eq. 10's closed form :math:`W'_{HVO} = \sum_h H_h\otimes(W_{V,h}W_{O,h})^T`
still holds (it never used the row sums), but the value bias no longer passes through unchanged: the paper's static
:math:`b' = \mathbf 1_N\otimes(\sum_h W_{O,h}^Tb_{V,h} + b_O)` (``ext:sliding-window.mask``) becomes

.. math::

    b'(x) = \mathbf 1_N\otimes\Big(\sum_h W_{O,h}^Tb_{V,h} + b_O\Big) - \sum_h \pi_h\otimes W_{O,h}^Tb_{V,h},

*dynamic* through :math:`\pi_h` (which depends on :math:`x` through the scores).  Without a value bias
(:math:`b_V = 0`) the sink changes :math:`H_h` only.

Id ``ext:attention-sink.mv-form``.  Evidence: symbolic, exact :math:`\mathbb F_p` and float64 on free matrices;
each :math:`H_h` is any matrix whose row :math:`n` sums to :math:`1 - \pi_{h,n}` (its last entry takes the rest),
with free sink masses :math:`\pi_{h,n}`; the float level compares with a NumPy reference written here.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from symuat import Entry, Identity, Status, vec_r
from symuat.algebra.families import family_from, family_member, family_shapes, family_sum, row_block
from symuat.algebra.matrices import kron, ones
from symuat.algebra.splits import but_last
from symuat.layers.attention import MultiHeadAttention

from ._coq_links import linked

__all__ = ["entries", "sink_identity", "np_sink_mha", "static_bias_rhs"]

Matrix = sympy.ImmutableMatrix


def _shapes(d):
    M, N = d["h"] * d["d"], d["N"]
    out = {"X": (N, M), "WV": (M, M), "WO": (M, M), "bV": (M, 1), "bO": (M, 1)}
    out.update(family_shapes("pi", d["h"], N, 1))
    out.update(family_shapes("H", d["h"], N, N))
    return out


def _heads(e, d):
    r""":math:`H_h` with free entries whose row :math:`n` sums to :math:`1 - \pi_{h,n}` (the sink's mass): the last
    column is :math:`\mathbf 1 - \pi_h` minus the others (a family computed per head)."""
    N = d["N"]
    free = but_last(N)  # the first N - 1 columns are free

    def head(j):
        F = family_member(e, "H", j)[:, :free]
        return Matrix.hstack(F, ones(N) - F * ones(N)[:free, :] - family_member(e, "pi", j))
    return family_from(head, d["h"])


def _mha(e, d) -> MultiHeadAttention:
    return MultiHeadAttention(_heads(e, d), e["WV"], e["WO"], e["bV"], e["bO"])


def _rhs(e, d):
    r""":math:`W'_{HVO}x' + \mathbf 1\otimes(\sum_h W_{O,h}^Tb_{V,h} + b_O) - \sum_h \pi_h\otimes W_{O,h}^Tb_{V,h}`."""
    mha = _mha(e, d)
    sinks = family_sum(lambda h: kron(family_member(e, "pi", h), mha.W_O_head(h).T * row_block(e["bV"], h, d["d"])),
                       d["h"])
    return mha.W_HVO_closed_form() * vec_r(e["X"]) + mha.b_prime() - sinks


def static_bias_rhs(e, d):
    r"""The paper's static :math:`b' = \mathbf 1\otimes(\sum_h W_{O,h}^Tb_{V,h} + b_O)` kept with sinks (MHA's
    matrix-vector form, which assumes rows summing to one).  False when a sink takes mass."""
    return _mha(e, d).matrix_vector_form().apply(vec_r(e["X"]))


def np_sink_mha(a, d) -> np.ndarray:
    r"""The library's way in NumPy (values with their bias, per-head mixing, output projection) with
    :math:`H_h` built from the random free entries ``a["H<h>"]``: the last column takes :math:`1 - \pi_{h,n}` minus
    the others."""
    N, dd = d["N"], d["d"]
    out = np.tile(a["bO"].T, (N, 1))
    for h in range(d["h"]):
        H = np.array(a[f"H{h + 1}"], dtype=float)
        H[:, N - 1] = 1.0 - H[:, :N - 1].sum(axis=1) - a[f"pi{h + 1}"][:, 0]
        cols = slice(h * dd, (h + 1) * dd)
        out += H @ (a["X"] @ a["WV"][:, cols] + a["bV"][cols, 0]) @ a["WO"][cols, :]
    return out.reshape(-1)


@functools.cache
def sink_identity() -> Identity:
    r"""MHA with sinks (rows of :math:`H_h` summing to :math:`1-\pi_h`) = :math:`W'_{HVO}x' + b'(x)`, :math:`b'`
    dynamic through :math:`\pi_h`."""
    return Identity(
        shapes=_shapes, lhs=lambda e, d: vec_r(_mha(e, d).apply(e["X"])), rhs=_rhs,
        dims=({"h": 1, "N": 1, "d": 1}, {"h": 1, "N": 2, "d": 1}, {"h": 1, "N": 2, "d": 2}, {"h": 2, "N": 2, "d": 1},
              {"h": 1, "N": 3, "d": 1}),
        reference=np_sink_mha, random_dims={"h": 2, "N": 4, "d": 2},
        scope=r"$H_h$ has free entries except the last of each row, which makes the row sum $1 - \pi_{h,n}$; the"
              r" sink masses $\pi_{h,n}$ are free symbols. Up to 2 heads, $N = 3$.")


_SINK = (r"\operatorname{vec}_r\big(\mathrm{MHA}_{\mathrm{sink}}(\mathbf X)\big) = \textstyle\sum_h \mathbf H_h"
         r"\otimes(\mathbf W_{V,h}\mathbf W_{O,h})^T x' + \mathbf 1_N\otimes\big(\sum_h \mathbf W_{O,h}^T"
         r"\mathbf b_{V,h} + \mathbf b_O\big) - \textstyle\sum_h \boldsymbol\pi_h\otimes\mathbf W_{O,h}^T"
         r"\mathbf b_{V,h},\ \ \mathbf H_h\mathbf 1 = \mathbf 1 - \boldsymbol\pi_h")


def entries() -> list[Entry]:
    """The entry, with its Coq theorem (docs/coq.md)."""
    return linked([
        Entry("ext:attention-sink.mv-form", "attention sinks (GPT-OSS): Eq. 10 with a dynamic value bias", _SINK,
              Status.PROVED, sink_identity(),
              note=r"A learned extra logit $t_h$ per head joins each row's softmax and is dropped: it takes the mass"
                   r" $\pi_{h,n}$, so the rows of $H_h$ sum to $1-\pi_{h,n}$. $W'_{HVO}$ keeps Eq. 10's closed"
                   r" form; the value bias reaches the output scaled by $1-\pi_{h,n}$, which makes $b'$ dynamic"
                   r" (the paper's static $b'$ needs rows summing to 1). In the Eq. 20 box the attention's $a$ is"
                   r" then a dynamic parameter like $A$. Without a value bias only $H_h$ changes."),
    ])
