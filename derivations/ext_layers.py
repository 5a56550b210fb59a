r"""Beyond the paper, layer by layer: RMSNorm (and Gemma's :math:`1+w`), LayerNorm without bias, the gated FFN
and rotary embeddings as matrix–vector products (ids ``ext:<layer>.<claim>``; attention in ``ext_attention``).

Each left-hand side is the layer as the libraries compute it (read directly; a NumPy copy for the float
level); each right-hand side the derived operator on :math:`x'=\operatorname{vec}_r(X)`.  Dynamic
diagonals (inverse RMS / std) are parameters (symbols), as for LayerNorm, so the identities stay
polynomial in the symbols and :math:`\sigma` and are checked at all three levels.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from symuat import Entry, Identity, Status, dims_grid, vec_r
from symuat.evidence.fields import SIGMA, logistic
from symuat.layers.gated_ffn import GatedFFN
from symuat.layers.layernorm import LayerNorm
from symuat.layers.rmsnorm import RMSNorm
from symuat.layers.rotary import rotary_operator, rotary_pairs, rotate_half_apply

from ._coq_links import linked

Matrix = sympy.ImmutableMatrix
_NM = dims_grid(N=(1, 2, 3), M=(1, 2, 3))
_POLY = r"Every entry is a polynomial identity in the symbols, so the grid covers all index patterns up to $N, M = 3$."


# --- norms ----------------------------------------------------------------------------------------

@functools.cache
def rmsnorm_identity(offset: int) -> Identity:
    r"""vec_r(RMS(X)) = (diag r ⊗ diag(o + g)) x' with the inverse RMS r a vector of symbols."""
    return Identity(
        shapes=lambda d: {"X": (d["N"], d["M"]), "g": (d["M"], 1), "r": (d["N"], 1)},
        lhs=lambda e, d: vec_r(RMSNorm(e["g"], offset).apply(e["X"], e["r"])),
        rhs=lambda e, d: RMSNorm(e["g"], offset).matrix_vector_form(e["r"]).apply(vec_r(e["X"])),
        dims=_NM,
        reference=lambda a, d: (a["r"] * a["X"] * (offset + a["g"].T)).reshape(-1),
        random_dims={"N": 4, "M": 5},
        scope=_POLY + r" $r_n$ stands for $(\mathrm{mean}_m X_{nm}^2 + \epsilon)^{-1/2}$, as LayerNorm's $d_n$ does.",
    )


def layernorm_no_bias_identity() -> Identity:
    r"""vec_r(LN(X)) with β = 0 equals (D ⊗ diag γ)(I_N ⊗ C_M) x': no bias term at all."""
    def rhs(e, d):
        ln = LayerNorm(e["g"], 0 * e["g"])
        return ln.matrix_vector_form(e["r"]).W_prime * vec_r(e["X"])

    def ref(a, d):
        Z = a["X"] - a["X"].mean(axis=1, keepdims=True)
        return (a["r"] * Z * a["g"].T).reshape(-1)

    return Identity(
        shapes=lambda d: {"X": (d["N"], d["M"]), "g": (d["M"], 1), "r": (d["N"], 1)},
        lhs=lambda e, d: vec_r(LayerNorm(e["g"], 0 * e["g"]).apply(e["X"], e["r"])),
        rhs=rhs, dims=_NM, reference=ref, random_dims={"N": 4, "M": 5},
        scope=_POLY + r" $r_n$ stands for $1/\sqrt{\mathrm{var}_n + \epsilon}$.",
    )


# --- gated FFN ------------------------------------------------------------------------------------

def gated_ffn_identity() -> Identity:
    r"""vec_r((σ(HW_g+b_g) ⊙ (HW_u+b_u)) W_d + b_d) = (I_N ⊗ W_dᵀ)(σ(z) ⊙ u) + 1_N ⊗ b_d."""
    def layer(e):
        return GatedFFN(e["Wg"], e["Wu"], e["Wd"], e["bg"], e["bu"], e["bd"])

    def ref(a, d):
        gate = logistic(a["H"] @ a["Wg"] + a["bg"].T)
        return ((gate * (a["H"] @ a["Wu"] + a["bu"].T)) @ a["Wd"] + a["bd"].T).reshape(-1)

    return Identity(
        shapes=lambda d: {"H": (d["N"], d["M"]), "Wg": (d["M"], d["F"]), "Wu": (d["M"], d["F"]),
                          "Wd": (d["F"], d["M"]), "bg": (d["F"], 1), "bu": (d["F"], 1), "bd": (d["M"], 1)},
        lhs=lambda e, d: vec_r(layer(e).apply(e["H"], SIGMA)),
        rhs=lambda e, d: layer(e).apply_matrix_vector(vec_r(e["H"]), d["N"], SIGMA),
        dims=dims_grid(N=(1, 2), M=(1, 2), F=(1, 2, 3)),
        reference=ref, random_dims={"N": 3, "M": 4, "F": 5},
        scope=r"$\sigma$ is an uninterpreted elementwise function (silu, gelu, gelu\_tanh, relu are instances); "
              "the float level uses the logistic sigmoid.",
    )


# --- rotary ---------------------------------------------------------------------------------------

ROPE_DIMS = ({"h": 1, "N": 1, "d": 2, "r": 2}, {"h": 1, "N": 2, "d": 2, "r": 2}, {"h": 1, "N": 2, "d": 3, "r": 2},
              {"h": 2, "N": 2, "d": 2, "r": 2}, {"h": 1, "N": 2, "d": 4, "r": 4})
ROPE_SCOPE = (r"cos/sin are free symbols $c_{n,i}$, $s_{n,i}$ (no $c^2 + s^2 = 1$ needed); full ($r = d$) and"
               r" partial ($r < d$) rotary, up to 2 heads and $N = 2$.")


def np_rope(Q, c, s):
    k = c.shape[1]
    r = Q[:, :2 * k]
    half = np.hstack([-r[:, k:], r[:, :k]])
    return np.hstack([r * np.hstack([c, c]) + half * np.hstack([s, s]), Q[:, 2 * k:]])


def rotary_operator_identity() -> Identity:
    r"""vec_r(q cos + rotate_half(q) sin) = (⊕_n R_nᵀ) q' with R_n the plane rotations of position n."""
    return Identity(
        shapes=lambda d: {"Q": (d["N"], d["d"]), "c": (d["N"], rotary_pairs(d["r"], d["d"])),
                          "s": (d["N"], rotary_pairs(d["r"], d["d"]))},
        lhs=lambda e, d: vec_r(rotate_half_apply(e["Q"], e["c"], e["s"])),
        rhs=lambda e, d: rotary_operator(e["c"], e["s"], d["d"]) * vec_r(e["Q"]),
        dims=ROPE_DIMS, reference=lambda a, d: np_rope(a["Q"], a["c"], a["s"]).reshape(-1),
        random_dims={"h": 1, "N": 4, "d": 6, "r": 4}, scope=ROPE_SCOPE,
    )


# --- the entries ----------------------------------------------------------------------------------

_RMS = (r"\operatorname{vec}_r\big(\mathrm{RMS}(\mathbf X)\big) = \big(\operatorname{diag}(\mathbf r)\otimes"
        r"\operatorname{diag}(\mathbf g)\big)\mathbf x',\quad r_n = \big(\tfrac1M\textstyle\sum_m X_{nm}^2+\varepsilon"
        r"\big)^{-1/2}")
_GEMMA = (r"\operatorname{vec}_r\big(\mathrm{RMS}_{1+\mathbf g}(\mathbf X)\big) = \big(\operatorname{diag}(\mathbf r)"
          r"\otimes\operatorname{diag}(\mathbf 1+\mathbf g)\big)\mathbf x'")
_LN = (r"\operatorname{vec}_r\big(\mathrm{LN}_{\boldsymbol\gamma,\mathbf 0}(\mathbf X)\big) = (\mathbf D\otimes"
       r"\operatorname{diag}\boldsymbol\gamma)(\mathbf I_N\otimes\mathbf C_M)\mathbf x'")
_GATED = (r"\operatorname{vec}_r\big((\sigma(\mathbf H\mathbf W_g)\odot\mathbf H\mathbf W_u)\mathbf W_d\big) = "
          r"(\mathbf I_N\otimes\mathbf W_d^T)\big(\sigma(\mathbf z)\odot\mathbf u\big),\ "
          r"\mathbf z = (\mathbf I_N\otimes\mathbf W_g^T)\mathbf h',\ "
          r"\mathbf u = (\mathbf I_N\otimes\mathbf W_u^T)\mathbf h'")
_ROPE_OP = (r"\operatorname{vec}_r\big(\mathrm{RoPE}(\mathbf Q)\big) = \Big(\textstyle\bigoplus_n \mathbf R_n^T\Big)"
            r"\mathbf q'")


def _entries() -> list[Entry]:
    P = Status.PROVED
    return [
        Entry("ext:rmsnorm.mv-form", "RMSNorm (Llama, Mistral, Qwen)", _RMS, P, rmsnorm_identity(0),
              note=r"A dynamic diagonal with no centring: LayerNorm's form with $C_M = I_M$ and no shift."),
        Entry("ext:rmsnorm.gemma", "RMSNorm with gain 1 + w (Gemma)", _GEMMA, P, rmsnorm_identity(1)),
        Entry("ext:layernorm.no-bias", "LayerNorm without bias (OLMo, bias=False)", _LN, P,
              layernorm_no_bias_identity(), note="The static bias b' vanishes; W' stays dynamic through D."),
        Entry("ext:gated-ffn.mv-form", "gated FFN (SwiGLU, GeGLU)", _GATED, P, gated_ffn_identity(),
              note="A product of a sigma-term and a linear term per hidden unit: not a single sigma-term."),
        Entry("ext:rotary.operator", "rotary position embeddings, full and partial", _ROPE_OP, P,
              rotary_operator_identity(),
              note=r"The libraries' \texttt{rotate\_half} formula is the per-position block rotation"
                   r" $\bigoplus_n R_n^T$ on $q'$."),
    ]


__all__ = ["entries", "rmsnorm_identity", "layernorm_no_bias_identity", "gated_ffn_identity",
           "rotary_operator_identity", "np_rope", "ROPE_DIMS", "ROPE_SCOPE"]


def entries() -> list[Entry]:
    """The entries of this derivation, each with its Coq theorem where one states it (docs/coq.md)."""
    return linked(_entries())
