r"""Beyond the paper: Llama 4's mixture of experts, whose routing weight scales each chosen expert's *input*
(ids ``ext:moe.input-scaled*``).

Llama 4's text model routes token :math:`n` to the top-:math:`k` experts :math:`S_n` of its router logits with the
sigmoid scores :math:`g_{n,e} = \mathrm{sigmoid}(r_{n,e})` (zero off :math:`S_n`: the library scatters
:math:`-\infty` before the sigmoid), runs every expert on every token's *scaled* row and adds an ungated shared
expert: :math:`\mathrm{MoE}(H) = \sum_e F_e(G_eH) + F_{\mathrm{sh}}(H)`, :math:`F_e(U) = (\mathrm{act}(UW_{g,e})
\odot UW_{u,e})W_{d,e}` without biases.  Since :math:`W(g\,u) = g\,Wu`,

.. math::
    \operatorname{vec}_rF_e(G_eH) = (G_e\otimes I_M)(I_N\otimes W_{d,e}^T)\big(\mathrm{act}((G_e\otimes I_F)z_e)
    \odot u_e\big):

the routing diagonal :math:`D(u)` before the down projection (as in ``ext:moe.gate-form``) and a second diagonal
:math:`D_{in}(u) = G_e\otimes I_F` on the gate branch's pre-activation (:mod:`symuat.layers.moe`).  The block is
still one matrix–vector product: Eq. 20 with the dynamic :math:`W'_{i,2,e} = D_{in,e}F_{g,e}L_2(I + AL_1)` and
:math:`W'_{i,3,e} = G_eF_{d,e}`; its table is the gated MoE table (:mod:`symuat.expansion.moe`) with these
parameters, proved for every depth.  An unchosen expert gets the zero row, and
:math:`F_e(0) = (\mathrm{act}(0)\odot 0)W_{d,e} = 0` for every activation because the experts have no biases
(with an up bias the identity is false: the tests give the witness).

Evidence: the layer at every size (free gates, the choice enters only through the zeros of :math:`G_e`) and at the
symbolic, exact and float levels against a NumPy reference in the library's order (scale, project, gate);
the block, the table (depths 1--3) and the induction in opaque symbols as in :mod:`symuat_paper.ext_moe`.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from symuat import Entry, Identity, OpaqueIdentity, Status, dims_grid, vec_r
from symuat.algebra.families import family_member, family_shapes, family_sum
from symuat.evidence.fields import SIGMA, logistic
from symuat.expansion import INPUT, nc_symbol
from symuat.expansion.extended import gate
from symuat.expansion.moe import derive_moe_table, expert_symbols, moe_induction, moe_residual_term
from symuat.expansion.symbols import layer_symbols
from symuat.layers.gated_ffn import GatedFFN
from symuat.layers.moe import input_scaled_experts, input_scaled_experts_matrix_vector

from .ext_duat_blocks import PROOF_CASES, enc, np_gate, proved_lazily

__all__ = ["entries", "input_scaled_identity", "np_input_scaled", "block", "block_claims", "EXPERTS", "SHARED",
           "TABLE_EXPERTS"]

#: The experts of the block entries: two routed experts and Llama 4's ungated shared expert.
EXPERTS = ("1", "2", "s")
SHARED = "s"


# --- the layer, every size ------------------------------------------------------------------------

def _expert(env, j, prefix="") -> GatedFFN:
    return GatedFFN(*(family_member(env, prefix + k, j) for k in ("Wg", "Wu", "Wd")))


def _shapes(d):
    N, M, F = d["N"], d["M"], d["F"]
    out = {"H": (N, M)}
    for prefix, n in (("", d["E"]), ("s", d["S"])):
        out.update({**family_shapes(prefix + "Wg", n, M, F), **family_shapes(prefix + "Wu", n, M, F),
                    **family_shapes(prefix + "Wd", n, F, M)})
    return {**out, **family_shapes("g", d["E"], N, 1)}


def _shared(e, d, apply):
    return family_sum(lambda j: apply(_expert(e, j, "s")), d["S"])


def _lhs(e, d):
    r"""Llama 4's definition: :math:`\sum_eF_e(G_eH) + \sum_tF_t(H)`, row-wise."""
    routed = input_scaled_experts(e["H"], lambda j: family_member(e, "g", j), lambda j: _expert(e, j), d["E"], SIGMA)
    return vec_r(routed + _shared(e, d, lambda f: f.apply(e["H"], SIGMA)))


def _rhs(e, d):
    r"""The matrix–vector form with :math:`D(u)` and :math:`D_{in}(u)` on :math:`h' = \operatorname{vec}_r H`."""
    N, M, h = d["N"], d["M"], vec_r(e["H"])
    routed = input_scaled_experts_matrix_vector(h, N, M, lambda j: family_member(e, "g", j), lambda j: _expert(e, j),
                                                d["E"], SIGMA)
    return routed + _shared(e, d, lambda f: f.apply_matrix_vector(h, N, SIGMA))


def np_input_scaled(a, d) -> np.ndarray:
    r"""NumPy reference in the library's order: each expert on the scaled rows :math:`g_e\odot H`, projected, gated
    and summed, plus the shared experts on :math:`H` (σ logistic)."""
    def ffn(prefix, j, U):
        Wg, Wu, Wd = (a[f"{prefix}{k}{j + 1}"] for k in ("Wg", "Wu", "Wd"))
        return (logistic(U @ Wg) * (U @ Wu)) @ Wd
    H = a["H"]
    Y = sum(ffn("s", j, H) for j in range(d["S"]))
    for j in range(d["E"]):
        Y = Y + ffn("", j, a[f"g{j + 1}"] * H)
    return Y.reshape(-1)


@functools.cache
def input_scaled_identity() -> Identity:
    r"""vec_r(Σ_e F_e(G_eH) + F_sh(H)) = Σ_e (G_e⊗I_M)(I_N⊗W_{d,e}ᵀ)(σ((G_e⊗I_F)z_e) ⊙ u_e) + vec_r F_sh(H)."""
    return Identity(shapes=_shapes, lhs=_lhs, rhs=_rhs,
                    dims=dims_grid(N=(1, 2), M=(1, 2), F=(1,), E=(1, 2), S=(1,)), reference=np_input_scaled,
                    random_dims={"N": 3, "M": 3, "F": 2, "E": 3, "S": 1},
                    scope=r"Gates $g_{n,e}$ are free symbols (Llama 4: $\mathrm{sigmoid}(r_{n,e})$ on the chosen"
                          r" experts, 0 elsewhere: \texttt{ext:moe.routing-raw} with $z_n = s = 1$); experts without"
                          r" biases, $E$ routed and $S$ ungated shared ones; $\sigma$ is the experts' uninterpreted"
                          r" activation.")


# --- the block as Eq. 20, its table, every depth --------------------------------------------------

X = nc_symbol("x'_{i-1}")
ONE = sympy.S.One


def _block_symbols(i):
    return {p: (nc_symbol(f"W'_{{{i},{p}}}"), nc_symbol(f"b'_{{{i},{p}}}")) for p in ("HVO", "N1", "N2")}


def _parts(i, e):
    r"""Expert ``e`` of layer ``i``: projections :math:`F_g, F_u, F_d`, the routing diagonal :math:`G` and the input
    diagonal :math:`D_{in}` (``S``); the shared expert has neither diagonal (both :math:`I`)."""
    p = {k: nc_symbol(f"W'_{{{i},{k[1:]},{e}}}") for k in ("Wg", "Wu", "Wd")}
    p.update({k: ONE if e == SHARED else nc_symbol(f"W'_{{{i},{k[1:]},{e}}}") for k in ("WG", "WS")})
    return p


def block(i, x, experts=EXPERTS):
    r"""A pre-LN Llama 4 MoE block in the matrix–vector form of ``ext:moe.input-scaled``: :math:`h = x +
    A(L_1x + \beta_1) + a`, :math:`u = L_2h + \beta_2`, :math:`y = h + \sum_e G_eF_{d,e}\,g(D_{in,e}F_{g,e}u,
    F_{u,e}u)`."""
    s = _block_symbols(i)
    (A, a), (L1, b1), (L2, b2) = s["HVO"], s["N1"], s["N2"]
    h = x + A * (L1 * x + b1) + a
    u = L2 * h + b2
    out = h
    for e in experts:
        p = _parts(i, e)
        out = out + p["WG"] * p["Wd"] * gate(p["WS"] * p["Wg"] * u, p["Wu"] * u)
    return out


def block_claims(i, experts=EXPERTS) -> dict:
    r"""Hand-written Eq. 20 parameters of :func:`block` (keys: the symbols of
    :func:`~symuat.expansion.moe.moe_residual_term`): :math:`W'_1 = P = I + AL_1`, :math:`b'_3 = p = A\beta_1 + a`,
    :math:`W'_{2,e} = D_{in,e}F_{g,e}L_2P`, :math:`b'_{2,e} = D_{in,e}F_{g,e}(L_2p + \beta_2)`,
    :math:`W'_{3,e} = G_eF_{d,e}`, :math:`W'_{4,e} = F_{u,e}L_2P`, :math:`b'_{4,e} = F_{u,e}(L_2p + \beta_2)`."""
    s, ls = _block_symbols(i), layer_symbols(i)
    (A, a), (L1, b1), (L2, b2) = s["HVO"], s["N1"], s["N2"]
    P, p = ONE + A * L1, A * b1 + a
    out = {ls.W1: P, ls.b3: p}
    for e in experts:
        q, t = _parts(i, e), expert_symbols(i, e)
        out.update({t["W2"]: q["WS"] * q["Wg"] * L2 * P, t["b2"]: q["WS"] * q["Wg"] * (L2 * p + b2),
                    t["W3"]: q["WG"] * q["Wd"], t["W4"]: q["Wu"] * L2 * P, t["b4"]: q["Wu"] * (L2 * p + b2)})
    return out


LAYER = moe_residual_term(EXPERTS, gated=True)
#: The table's experts: one routed expert (the unfolded table grows fast with the experts and the depth).
TABLE_EXPERTS = ("1",)


def _np_block(a, i, x, experts=EXPERTS):
    def m(k):
        return a[f"W'_{{{i},{k}}}"]
    h = x + m("HVO") @ (m("N1") @ x + a[f"b'_{{{i},N1}}"]) + a[f"b'_{{{i},HVO}}"]
    u = m("N2") @ h + a[f"b'_{{{i},N2}}"]
    y = h
    for e in experts:
        S, G = (np.eye(len(x)), np.eye(len(x))) if e == SHARED else (m(f"S,{e}"), m(f"G,{e}"))
        y = y + G @ m(f"d,{e}") @ np_gate(a, S @ m(f"g,{e}") @ u, m(f"u,{e}") @ u)
    return y


def _eq20_identity() -> OpaqueIdentity:
    return OpaqueIdentity(lambda _: enc(block("i", X)), lambda _: enc(LAYER("i", X).xreplace(block_claims("i"))),
                          ("gated",), reference=lambda a, _: _np_block(a, "i", a["x'_{i-1}"]),
                          scope="The block in opaque symbols against the hand-written Eq. 20 parameters, two routed"
                                " experts and the ungated shared one.")


def _table_identity() -> OpaqueIdentity:
    ex = TABLE_EXPERTS

    def lhs(depth):
        x = INPUT
        for i in range(1, depth + 1):
            x = block(i, x, ex)
        return enc(x)

    def rhs(depth):
        t = derive_moe_table(depth, moe_residual_term(ex, gated=True), ex, gated=True)
        claims = {k: v for i in range(1, depth + 1) for k, v in block_claims(i, ex).items()}
        return enc(t.unfold(t.form()).xreplace(claims))

    def ref(a, depth):
        x = a["x'_{0}"]
        for i in range(1, depth + 1):
            x = _np_block(a, i, x, ex)
        return x

    # exact and float at depth 1: at depth 2 the substituted products make the logistic saturate in float64, and
    # mutants inside a saturated argument change the value by ~1e-13 of its magnitude (71 survived there)
    return OpaqueIdentity(lhs, rhs, (1, 2), reference=ref, check_case=1,
                          scope="The gated MoE table with the Llama 4 boxes substituted, unfolded, against the nested"
                                " blocks: one routed expert, depths 1 and 2 (exact and float at depth 1; every depth:"
                                r" \texttt{ext:moe.input-scaled.induction}).")


@functools.cache
def _induction_identity() -> OpaqueIdentity:
    proof = proved_lazily(lambda: moe_induction(LAYER, EXPERTS, gated=True), PROOF_CASES,
                          "MoE rules of the wrong shape")  # built when first used
    boxes = {"base": block_claims(1), "step": block_claims("i+1"), "lemma": {}}

    def side(k):
        return lambda c: enc(proof().sides[c][k].xreplace(boxes[c]))
    # width 2: on 3x3 (4x4) matrices the logistic saturates on the step's long products in float64, and 2 (67)
    # mutants inside a saturated argument survived the float level; every mutant dies at 2x2 (the symbolic level is
    # the proof for every size)
    return OpaqueIdentity(side(0), side(1), PROOF_CASES, check_case="step", width=2,
                          scope=r"The gated MoE induction (base case, generic step $i \to i+1$, Lemma 1) with the Llama"
                                r" 4 box of layer $i+1$ substituted ($\tilde A_i$, $\tilde c_i$, $R_i$ opaque).")


# --- the entries ----------------------------------------------------------------------------------

_FORM = (r"\operatorname{vec}_r\textstyle\sum_eF_e(\mathbf G_e\mathbf H) = \sum_e(\mathbf G_e\otimes\mathbf I_M)"
         r"(\mathbf I_N\otimes\mathbf W_{d,e}^T)\big(\sigma(\mathbf D_{in,e}\mathbf z_e)\odot\mathbf u_e\big),\ "
         r"{\mathbf D_{in,e} = \mathbf G_e\otimes\mathbf I_F}")
_EQ20 = (r"x'_i = \mathbf W'_{i,1}x'_{i-1} + \mathbf b'_{i,3} + \textstyle\sum_e\mathbf W'_{i,3,e}\,"
         r"g(\mathbf W'_{i,2,e}x'_{i-1} + \mathbf b'_{i,2,e},\ \mathbf W'_{i,4,e}x'_{i-1} + \mathbf b'_{i,4,e}),\ "
         r"{\mathbf W'_{i,2,e} = \mathbf D_{in,i,e}F_{g,e}L_2(I + AL_1)},\ "
         r"{\mathbf W'_{i,3,e} = \mathbf G_{i,e}F_{d,e}}")
_TABLE = (r"{\tilde V_{i,e} = \mathbf D_{in,i,e}F_{g,e}L_2(I + AL_1)\tilde A_{i-1}},\ {\tilde U^{(i)}_{i,e} = "
          r"\mathbf G_{i,e}F_{d,e}},\ {\tilde P_{i,e} = F_{u,e}L_2(I + AL_1)\tilde A_{i-1}}")
_INDUCTION = (r"x'_L = \tilde A_Lx'_0 + \tilde c_L + \textstyle\sum_{j\le L}\sum_e\tilde U^{(L)}_{j,e}\,"
              r"g(\tilde V_{j,e}x'_0 + \tilde\beta_{j,e},\ \tilde P_{j,e}x'_0 + \tilde\gamma_{j,e})"
              r"\ \text{for every } L")


def entries() -> list[Entry]:
    P = Status.PROVED
    return [
        Entry("ext:moe.input-scaled", "Llama 4 MoE: routing weight on each expert's input", _FORM, P,
              input_scaled_identity(),
              note=r"Llama 4 multiplies each chosen expert's input by its routing weight. The experts have no"
                   r" biases, so $W(g\,u) = g\,Wu$: the routing diagonal $G_e$ moves before the down projection"
                   r" (\texttt{ext:moe.gate-form}'s $D(u)$) and a second dynamic diagonal $D_{in,e} = G_e\otimes I_F$"
                   r" stays on the gate branch's pre-activation, inside the activation. An unchosen expert gets the"
                   r" zero row and contributes $(\sigma(0)\odot 0)W_{d,e} = 0$. The shared expert is ungated."),
        Entry("ext:moe.input-scaled.eq20", "pre-LN block with Llama 4's MoE as Eq. 20", _EQ20, P, _eq20_identity(),
              note=r"$b'_{i,2,e} = D_{in,i,e}F_{g,e}(L_2p + \beta_2)$ and $W'_{i,2,e}$ carry the input diagonal:"
                   r" dynamic, like $W'_{i,3,e}$ with the routing gate; the up branch $W'_{i,4,e} = F_{u,e}L_2(I +"
                   r" AL_1)$ and $b'_{i,3} = A\beta_1 + a$ are those of a gated block (no expert biases)."),
        Entry("ext:moe.input-scaled.table", "Llama 4 MoE, substitution table", _TABLE, P, _table_identity(),
              note=r"The gated MoE table (\texttt{ext:moe.table}) with Llama 4's boxes: $D_{in}$ enters"
                   r" $\tilde V_{i,e}$ and $\tilde\beta_{i,e}$, the routing gate $\tilde U^{(i)}_{i,e}$; $\tilde A$,"
                   r" $\tilde c$, $\tilde P$, $\tilde\gamma$ are those of a gated block."),
        Entry("ext:moe.input-scaled.induction", "Llama 4 MoE, every depth", _INDUCTION, P, _induction_identity(),
              note=r"The every-depth proof of \texttt{ext:moe.induction} (gated) holds with the Llama 4 box of the"
                   r" generic layer substituted: the input diagonal lives in the parameters, the expansion keeps the"
                   r" same shape."),
    ]
