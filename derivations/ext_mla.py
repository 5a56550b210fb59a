r"""Beyond the paper: multi-head latent attention (DeepSeek-V2/V3, MLA) as an Eq. 10 box.

MLA projects every token to one low-rank latent :math:`Z = XW_{DKV} + \mathbf 1 b^T` (rank :math:`r`), normalises it
with an RMSNorm, :math:`C = D\,Z\,\Gamma` (:math:`D = \operatorname{diag}(d)` the per-token inverse RMS,
:math:`\Gamma = \operatorname{diag}(\gamma)` the gain), and up-projects it per head to keys and values,
:math:`V_h = C\,W_{UV,h}`.  Queries and keys (with their decoupled rotary part) only enter :math:`H_h`.  The head
output :math:`\sum_h H_h V_h W_{O,h} + \mathbf 1 b_O^T`, vectorised row-major, is

.. math::

    \sum_h (H_h D)\otimes(W_{DKV}\Gamma W_{UV,h}W_{O,h})^T x' + \sum_h (H_h d)\otimes W_{O,h}^T W_{UV,h}^T\Gamma b
    + \mathbf 1_N\otimes b_O:

Eq. 10 with the dynamic matrix :math:`\tilde H_h = H_h D(x)` (the latent norm's diagonal joins the attention
matrix), the static low-rank value map :math:`W_{V,h} = W_{DKV}\Gamma W_{UV,h}` and a value bias that reaches the
output through :math:`\tilde H_h\mathbf 1 = H_h d`, so :math:`b'` is dynamic like :math:`W'_{HVO}` — the same
box as ``ext:attention-sink.mv-form`` (rows of :math:`\tilde H_h` do not sum to one).  The paper's static
:math:`b'` is refused with a witness.

Id ``ext:mla.mv-form``.  Evidence: symbolic, exact :math:`\mathbb F_p` and float64 on free matrices; the
:math:`H_h` are free (the identity never uses their row sums), :math:`d` and :math:`\gamma` free vectors; the float
level compares with a NumPy reference written here (latent first, per-head up-projection, mixing, output projection:
the library's order).
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from symuat import Entry, Identity, Status, vec_r
from symuat.algebra.families import col_block, diag_vector, family_member, family_shapes, family_sum, row_block
from symuat.algebra.matrices import kron

from ._coq_links import linked

__all__ = ["entries", "mla_identity", "np_mla", "static_bias_rhs"]

Matrix = sympy.ImmutableMatrix


def _shapes(d):
    M, N, r, v = d["M"], d["N"], d["r"], d["v"]
    out = {"X": (N, M), "Wa": (M, r), "b": (r, 1), "g": (r, 1), "d": (N, 1), "Wuv": (r, d["h"] * v),
           "WO": (d["h"] * v, M), "bO": (M, 1)}
    out.update(family_shapes("H", d["h"], N, N))
    return out


def _head(e, d, h):
    v = d["v"]
    return col_block(e["Wuv"], h, v), row_block(e["WO"], h, v)


def _lhs(e, d):
    r"""The library's order: :math:`C = D(XW_{DKV} + \mathbf 1b^T)\Gamma`, then :math:`\sum_h H_h C W_{UV,h}W_{O,h}`
    (the loop over heads at concrete sizes, an index sum on symbolic ones)."""
    ones = Matrix.ones(d["N"], 1)
    C = diag_vector(e["d"]) * (e["X"] * e["Wa"] + ones * e["b"].T) * diag_vector(e["g"])

    def head(h):
        Wuv, WO = _head(e, d, h)
        return family_member(e, "H", h) * C * Wuv * WO
    return vec_r(ones * e["bO"].T + family_sum(head, d["h"]))


def _rhs(e, d):
    r""":math:`\sum_h (H_hD)\otimes(W_{DKV}\Gamma W_{UV,h}W_{O,h})^T x' + \sum_h (H_hd)\otimes W_{O,h}^TW_{UV,h}^T
    \Gamma b + \mathbf 1\otimes b_O`."""
    D, G = diag_vector(e["d"]), diag_vector(e["g"])

    def head(h):
        Wuv, WO = _head(e, d, h)
        H = family_member(e, "H", h)
        return kron(H * D, (e["Wa"] * G * Wuv * WO).T) * vec_r(e["X"]) + kron(H * e["d"], WO.T * Wuv.T * G * e["b"])
    return kron(Matrix.ones(d["N"], 1), e["bO"]) + family_sum(head, d["h"])


def static_bias_rhs(e, d):
    r"""The paper's Eq. 10 read naively: :math:`\tilde H_h` in :math:`W'_{HVO}` but the static
    :math:`b' = \mathbf 1\otimes(\sum_h W_{O,h}^TW_{V,h}^T\ldots b + b_O)` (rows summing to one).  False."""
    N, D, G = d["N"], diag_vector(e["d"]), diag_vector(e["g"])

    def head(h):
        Wuv, WO = _head(e, d, h)
        return (kron(family_member(e, "H", h) * D, (e["Wa"] * G * Wuv * WO).T) * vec_r(e["X"])
                + kron(Matrix.ones(N, 1), WO.T * Wuv.T * G * e["b"]))
    return kron(Matrix.ones(N, 1), e["bO"]) + family_sum(head, d["h"])


def np_mla(a, d) -> np.ndarray:
    r"""NumPy reference in the library's order (module docstring), from the random values of the free symbols."""
    v = d["v"]
    C = a["d"][:, :1] * (a["X"] @ a["Wa"] + a["b"][:, 0]) * a["g"][:, 0]
    out = np.tile(a["bO"].T, (d["N"], 1))
    for h in range(d["h"]):
        cols = slice(h * v, (h + 1) * v)
        out += np.asarray(a[f"H{h + 1}"], dtype=float) @ C @ a["Wuv"][:, cols] @ a["WO"][cols, :]
    return out.reshape(-1)


@functools.cache
def mla_identity() -> Identity:
    r"""MLA's head output = Eq. 10 with :math:`\tilde H_h = H_hD`, :math:`W_{V,h} = W_{DKV}\Gamma W_{UV,h}` and a
    dynamic value bias."""
    return Identity(
        shapes=_shapes, lhs=_lhs, rhs=_rhs,
        dims=({"h": 1, "N": 1, "M": 1, "r": 1, "v": 1}, {"h": 1, "N": 2, "M": 1, "r": 1, "v": 1},
              {"h": 1, "N": 2, "M": 2, "r": 1, "v": 1}, {"h": 1, "N": 1, "M": 2, "r": 2, "v": 1},
              {"h": 2, "N": 2, "M": 1, "r": 1, "v": 1}, {"h": 1, "N": 1, "M": 1, "r": 1, "v": 2}),
        reference=np_mla, random_dims={"h": 2, "N": 4, "M": 3, "r": 2, "v": 2},
        scope=r"$H_h$, $d$ (the latent norm's inverse RMS per token) and $\gamma$ are free; up to 2 heads, $N = 2$,"
              r" latent rank and value width 2.")


_MLA = (r"\operatorname{vec}_r\big(\mathrm{MLA}(\mathbf X)\big) = \textstyle\sum_h \mathbf H_h\mathbf D\otimes"
        r"(\mathbf W_{DKV}\boldsymbol\Gamma\mathbf W_{UV,h}\mathbf W_{O,h})^T x' + \textstyle\sum_h \mathbf H_h"
        r"\mathbf d\otimes\mathbf W_{O,h}^T\mathbf W_{UV,h}^T\boldsymbol\Gamma\mathbf b + \mathbf 1_N\otimes"
        r"\mathbf b_O")


def entries() -> list[Entry]:
    """The entry, with its Coq theorem (docs/coq.md)."""
    return linked([
        Entry("ext:mla.mv-form", "multi-head latent attention (DeepSeek-V2/V3): Eq. 10 with H_h D(x)", _MLA,
              Status.PROVED, mla_identity(),
              note=r"Keys and values come from one RMS-normalised low-rank latent $C = D(XW_{DKV} + \mathbf 1b^T)"
                   r"\Gamma$. The latent norm's diagonal $D(x)$ joins each attention matrix, $\tilde H_h = H_hD$, and"
                   r" the value map is the static low-rank product $W_{DKV}\Gamma W_{UV,h}$: Eq. 10's box with a"
                   r" dynamic $\tilde H_h$ whose rows do not sum to one, so the latent bias reaches the output"
                   r" through $H_hd$ and $b'$ is dynamic. Queries, keys and the decoupled rotary key act inside"
                   r" $H_h$ only."),
    ])
