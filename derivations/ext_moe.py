r"""Beyond the paper: a mixture-of-experts FFN is an input-dependent selection (Mixtral, Qwen2/3-MoE, OLMoE,
DeepSeek-V3; ids ``ext:moe.<claim>``).

Token :math:`n` chooses the experts :math:`S_n` (the router's top-:math:`k`) with weights from the router's
probabilities :math:`p_{n,e}`: renormalised over :math:`S_n` or raw, times a routed scaling factor :math:`s`.
Written as dynamic diagonal gates :math:`G_e = \operatorname{diag}(g_{1,e},\dots,g_{N,e})`, zero for the tokens
that did not choose :math:`e`, the layer is :math:`\sum_e(G_e\otimes I_M)\operatorname{vec}_rF_e(H)` plus the
shared experts (:mod:`symuat.layers.moe`).  **The choice of experts is part of the dynamic parameters**: it
enters only through :math:`G_e`, exactly as the attention pattern enters only through :math:`H_h`.

In the DUAT form each expert contributes its own term family: Eq. 20 becomes
:math:`W'_{i,1}x + b'_{i,3} + \sum_e W'_{i,3,e}\sigma(W'_{i,2,e}x + b'_{i,2,e})` with
:math:`W'_{i,3,e} = G_{i,e}F_{d,e}` (gated experts: the two-argument gate), and the table
(:mod:`symuat.expansion.moe`) carries :math:`\tilde U^{(L)}_{j,e}, \tilde V_{j,e}, \tilde\beta_{j,e}` per
layer and expert, proved for every depth.

Evidence: explicit identities (routing weights :math:`p_{n,e} = \sigma(r_{n,e})z_n` with :math:`\sigma` for
exp and a free normaliser :math:`z_n`, the top-:math:`k` choice fixed per grid point) at the symbolic, exact
and float levels, the gate form also at every size; the tables in opaque symbols as in
:mod:`symuat_paper.ext_duat_blocks`.
"""

from __future__ import annotations

import functools
from itertools import combinations

import numpy as np
import sympy

from symuat import Entry, Identity, OpaqueIdentity, Status, dims_grid, vec_r
from symuat.algebra.families import col_block, diag_vector, family_member, family_shapes
from symuat.algebra.matrices import elementwise, identity_matrix, kron
from symuat.evidence.fields import SIGMA, logistic
from symuat.expansion import INPUT, nc_symbol, sigma
from symuat.expansion.extended import gate
from symuat.expansion.moe import derive_moe_table, moe_induction, moe_residual_term
from symuat.layers.gated_ffn import GatedFFN
from symuat.layers.moe import (
    choice_weights,
    dispatch,
    expert_family,
    fixed_choice,
    gated_experts,
    gated_experts_matrix_vector,
    renormalise_rows,
    routing_gates,
)

from ._coq_links import linked
from .ext_duat_blocks import INDUCTION_SCOPE, enc, np_gate, plain_and_gated_induction

__all__ = ["entries", "choice_of", "np_expert", "moe_gate_identity", "routing_identity", "dense_swapped_rhs",
           "np_moe_eq20", "EXPERTS"]

Matrix = sympy.ImmutableMatrix

#: The experts of the table entries: two routed experts and one shared expert.
EXPERTS = ("1", "2", "s")


# --- the gate form, every size --------------------------------------------------------------------

def _expert(env, j, prefix="") -> GatedFFN:
    def m(name):
        return family_member(env, prefix + name, j)
    return GatedFFN(m("Wg"), m("Wu"), m("Wd"), b_d=m("bd"))


def np_expert(a, j: int, Hm: np.ndarray, prefix: str = "") -> np.ndarray:
    """Expert ``j`` (0-based; ``prefix="s"``: the shared one) row-wise in NumPy with the logistic σ."""
    Wg, Wu, Wd, bd = (a[f"{prefix}{k}{j + 1}"] for k in ("Wg", "Wu", "Wd", "bd"))
    return (logistic(Hm @ Wg) * (Hm @ Wu)) @ Wd + bd.T


def _gate_shapes(d):
    N, M, F = d["N"], d["M"], d["F"]
    out = {"H": (N, M)}
    for prefix, n in (("", d["E"]), ("s", d["S"])):
        out.update({**family_shapes(prefix + "Wg", n, M, F), **family_shapes(prefix + "Wu", n, M, F),
                    **family_shapes(prefix + "Wd", n, F, M), **family_shapes(prefix + "bd", n, M, 1)})
    return {**out, **family_shapes("g", d["E"], N, 1), **family_shapes("t", d["S"], N, 1)}


def _gate_lhs(e, d):
    H = e["H"]
    routed = gated_experts(H, lambda j: family_member(e, "g", j), lambda j: _expert(e, j), d["E"], SIGMA)
    shared = gated_experts(H, lambda j: family_member(e, "t", j), lambda j: _expert(e, j, "s"), d["S"], SIGMA)
    return vec_r(routed + shared)


def _gate_rhs(e, d):
    N, M, h = d["N"], d["M"], vec_r(e["H"])
    routed = gated_experts_matrix_vector(h, N, M, lambda j: family_member(e, "g", j), lambda j: _expert(e, j),
                                         d["E"], SIGMA)
    return routed + gated_experts_matrix_vector(h, N, M, lambda j: family_member(e, "t", j),
                                                lambda j: _expert(e, j, "s"), d["S"], SIGMA)


def _gate_ref(a, d):
    Y = sum(a[f"t{j + 1}"] * np_expert(a, j, a["H"], "s") for j in range(d["S"]))
    for j in range(d["E"]):
        Y = Y + a[f"g{j + 1}"] * np_expert(a, j, a["H"])
    return Y.reshape(-1)


@functools.cache
def moe_gate_identity() -> Identity:
    r"""vec_r(Σ_e G_e F_e(H) + T F_s(H)) = Σ_e (G_e ⊗ I_M)(I_N ⊗ W_{d,e}ᵀ)(σ(z_e) ⊙ u_e) + … (every size)."""
    return Identity(shapes=_gate_shapes, lhs=_gate_lhs, rhs=_gate_rhs,
                    dims=dims_grid(N=(1, 2), M=(1, 2), F=(1,), E=(1, 2), S=(1,)), reference=_gate_ref,
                    random_dims={"N": 3, "M": 3, "F": 2, "E": 3, "S": 2},
                    scope=r"Gates $g_{n,e}$ and the shared experts' $t_n$ are free symbols (zero for an"
                          r" expert the token did not choose: see \texttt{ext:moe.routing-renormalised});"
                          r" $E$ routed and $S$ shared experts; $\sigma$ is the experts' uninterpreted activation.")


# --- the router's choice and weights --------------------------------------------------------------

def choice_of(N: int, E: int, k: int, c: int) -> tuple[tuple[int, ...], ...]:
    r"""The top-:math:`k` choice of grid point ``c``: ``c = 1`` every token the first :math:`k` experts (the others
    unused); ``c = 2`` token :math:`n` the :math:`(n+1)`-th :math:`k`-subset, odd tokens in reverse order (as a
    top-:math:`k` by weight may list them)."""
    subsets = list(combinations(range(E), k))
    out = []
    for n in range(N):
        s = subsets[0] if c == 1 else subsets[(n + 1) % len(subsets)]
        out.append(tuple(reversed(s)) if c > 1 and n % 2 else s)
    return tuple(out)


def _routing_shapes(d):
    N, M, F, E = d["N"], d["M"], d["F"], d["E"]
    out = {"H": (N, M), "Wr": (M, E), "z": (N, 1), "t": (N, 1), "s": (),
           "sWg1": (M, F), "sWu1": (M, F), "sWd1": (F, M), "sbd1": (M, 1)}
    out.update({**family_shapes("Wg", E, M, F), **family_shapes("Wu", E, M, F), **family_shapes("Wd", E, F, M),
                **family_shapes("bd", E, M, 1)})
    return out


def _probs(e):
    r"""The router's probabilities :math:`p_{n,e} = \sigma(r_{n,e})z_n`, :math:`r = HW_r` (σ for exp)."""
    return diag_vector(e["z"]) * elementwise(SIGMA, e["H"] * e["Wr"])


def _shared(e, H):
    return diag_vector(e["t"]) * _expert(e, 0, "s").apply(H, SIGMA)


def _choice(d, c=None):
    """The grid point's top-k choice (:func:`choice_of`; on symbolic sizes every choice)."""
    return fixed_choice(choice_of, d["N"], d["E"], d["k"], d["c"] if c is None else c)


def _routing_lhs(renormalise):
    def lhs(e, d):
        r"""As the libraries do: softmax, top-k gather, optional renormalisation, scaling, per-expert dispatch."""
        choice = _choice(d)
        W = choice_weights(_probs(e), choice)
        if renormalise:
            W = renormalise_rows(W)
        experts = expert_family(lambda j: _expert(e, j), d["E"])
        return vec_r(dispatch(e["H"], experts, choice, e["s"] * W, SIGMA) + _shared(e, e["H"]))
    return lhs


def _routing_rhs(renormalise):
    def rhs(e, d):
        r"""The gate form with :math:`G` built from the choice (:func:`symuat.layers.moe.routing_gates`)."""
        N, M, h = d["N"], d["M"], vec_r(e["H"])
        G = routing_gates(_probs(e), _choice(d), renormalise, e["s"])
        routed = gated_experts_matrix_vector(h, N, M, lambda j: col_block(G, j, 1), lambda j: _expert(e, j), d["E"],
                                             SIGMA)
        shared = kron(diag_vector(e["t"]), identity_matrix(M)) * _expert(e, 0, "s").apply_matrix_vector(h, N, SIGMA)
        return routed + shared
    return rhs


def _routing_ref(renormalise):
    def ref(a, d):
        N, H = d["N"], a["H"]
        P = logistic(H @ a["Wr"]) * a["z"]
        Y = a["t"] * np_expert(a, 0, H, "s")
        for n, chosen in enumerate(choice_of(N, d["E"], d["k"], d["c"])):
            total = sum(P[n, j] for j in chosen)
            for j in chosen:
                w = float(a["s"]) * (P[n, j] / total if renormalise else P[n, j])
                Y[n] += w * np_expert(a, j, H[n:n + 1])[0]
        return Y.reshape(-1)
    return ref


_ROUTING_DIMS = ({"N": 1, "M": 1, "F": 1, "E": 2, "k": 1, "c": 1}, {"N": 2, "M": 1, "F": 1, "E": 2, "k": 1, "c": 2},
                 {"N": 2, "M": 2, "F": 1, "E": 3, "k": 1, "c": 2}, {"N": 3, "M": 1, "F": 1, "E": 3, "k": 2, "c": 2})


@functools.cache
def routing_identity(renormalise: bool) -> Identity:
    r"""The libraries' top-k dispatch = the gate form with :math:`G_e` from the choice, renormalised or raw."""
    return Identity(shapes=_routing_shapes, lhs=_routing_lhs(renormalise), rhs=_routing_rhs(renormalise),
                    dims=_ROUTING_DIMS, reference=_routing_ref(renormalise),
                    random_dims={"N": 4, "M": 2, "F": 2, "E": 4, "k": 2, "c": 2},
                    scope=r"The router's probabilities are $\sigma(r_{n,e})z_n$ with $\sigma$ for exp and $z_n$ a free"
                          r" normaliser (softmax; any other score, e.g. DeepSeek-V3's sigmoid, is the same with"
                          r" $z_n = 1$); the top-$k$ choice is fixed per point: all tokens on the same experts (the"
                          r" others unused) or on different ones, listed in either order. $s$ (routed scaling factor)"
                          r" and the shared expert's gate $t_n$ are free symbols. Up to $N = 3$ tokens, $E = 3$"
                          r" experts, $k = 2$.")


def _unselected_experts(e, d, swapped: bool) -> list[GatedFFN]:
    """The routed experts; ``swapped``: those no token chose in choice 1 (experts >= k) with the fresh weights."""
    used = {j for s in choice_of(d["N"], d["E"], d["k"], 1) for j in s}
    return [_expert(e, j) if j in used or not swapped else
            GatedFFN(*(e[f"{k}{j + 1}x"] for k in ("Wg", "Wu", "Wd")), b_d=e[f"bd{j + 1}x"])
            for j in range(d["E"])]


def dense_swapped_rhs(e, d):
    r"""Dense gating with the unchosen experts swapped: every expert on every token with the router's probability,
    :math:`\sum_e\operatorname{diag}(p_{\cdot,e})F'_e(\mathbf H)` (the Coq mutant
    ``coq/mutants/ext/Mutant_moe_dense.v``).  False: an expert no token chose then contributes."""
    experts, P = _unselected_experts(e, d, True), _probs(e)
    return vec_r(gated_experts(e["H"], lambda j: col_block(P, j, 1), lambda j: experts[j], d["E"], SIGMA))


def _unselected_identity() -> Identity:
    r"""The dispatch does not read the weights of an expert no token chose (choice c = 1: experts ≥ k unused)."""
    def shapes(d):
        out = _routing_shapes(d)
        out.update({f"{k}{j + 1}x": out[f"{k}{j + 1}"] for j in range(d["E"]) for k in ("Wg", "Wu", "Wd", "bd")})
        return out

    def run(e, d, swapped):
        choice = choice_of(d["N"], d["E"], d["k"], 1)
        W = Matrix(d["N"], d["k"], lambda n, slot: _probs(e)[n, choice[n][slot]])
        return vec_r(dispatch(e["H"], _unselected_experts(e, d, swapped), choice, W, SIGMA))

    def ref(a, d):
        P = logistic(a["H"] @ a["Wr"]) * a["z"]
        Y = np.zeros((d["N"], d["M"]))
        for n, chosen in enumerate(choice_of(d["N"], d["E"], d["k"], 1)):
            for j in chosen:
                Y[n] += P[n, j] * np_expert(a, j, a["H"][n:n + 1])[0]
        return Y.reshape(-1)

    return Identity(shapes=shapes, lhs=lambda e, d: run(e, d, False), rhs=lambda e, d: run(e, d, True),
                    dims=tuple({**p, "c": 1} for p in _ROUTING_DIMS[:2]) + ({"N": 2, "M": 1, "F": 1, "E": 3, "k": 1,
                                                                              "c": 1},),
                    reference=ref, random_dims={"N": 3, "M": 2, "F": 2, "E": 4, "k": 2, "c": 1},
                    scope=r"Every token chooses the first $k$ experts; the other experts' weights are replaced by"
                          r" fresh symbols on the right-hand side. Up to $N = 2$, $E = 3$.")


# --- the MoE block as Eq. 20, the table, every depth ----------------------------------------------

X = nc_symbol("x'_{i-1}")
ONE = sympy.S.One


def _block_symbols(i):
    names = ("HVO", "N1", "N2")
    return {p: (nc_symbol(f"W'_{{{i},{p}}}"), nc_symbol(f"b'_{{{i},{p}}}")) for p in names}


def _expert_parts(i, e):
    r"""Expert ``e`` of layer ``i`` in opaque symbols: gate :math:`G`, projections :math:`F_g, F_u, F_d`, biases."""
    return {k: nc_symbol(f"{k[0]}'_{{{i},{k[1:]},{e}}}") for k in ("Wg", "bg", "Wu", "bu", "Wd", "bd", "WG")}


def moe_block(gated: bool):
    r"""A pre-LN block with an MoE FFN: :math:`h = x + A(L_1x + \beta_1) + a`,
    :math:`y = h + \sum_e G_e(F_{d,e}\,\mathrm{act}(F_{g,e}u + f_{g,e})[\odot(F_{u,e}u + f_{u,e})] + f_{d,e})`,
    :math:`u = L_2h + \beta_2`; the shared expert is one of the experts (its :math:`G` the shared gate or
    :math:`I`)."""
    def layer(i, x):
        s = _block_symbols(i)
        (A, a), (L1, b1), (L2, b2) = s["HVO"], s["N1"], s["N2"]
        h = x + A * (L1 * x + b1) + a
        u = L2 * h + b2
        out = h
        for e in EXPERTS:
            p = _expert_parts(i, e)
            inner = gate(p["Wg"] * u + p["bg"], p["Wu"] * u + p["bu"]) if gated else sigma(p["Wg"] * u + p["bg"])
            out = out + p["WG"] * (p["Wd"] * inner + p["bd"])
        return out
    return layer


def _claimed_moe_eq20(gated: bool) -> sympy.Expr:
    r"""Hand-written: :math:`W'_1 = P = I + AL_1`, :math:`b'_3 = p + \sum_e G_ef_{d,e}`, :math:`W'_{2,e} = F_{g,e}L_2P`,
    :math:`b'_{2,e} = F_{g,e}(L_2p + \beta_2) + f_{g,e}`, :math:`W'_{3,e} = G_eF_{d,e}` (and the up projection)."""
    s = _block_symbols("i")
    (A, a), (L1, b1), (L2, b2) = s["HVO"], s["N1"], s["N2"]
    P, p = ONE + A * L1, A * b1 + a
    out = P * X + p
    for e in EXPERTS:
        q = _expert_parts("i", e)
        out = out + q["WG"] * q["bd"]
        W2, b2e = q["Wg"] * L2 * P, q["Wg"] * (L2 * p + b2) + q["bg"]
        W4, b4 = q["Wu"] * L2 * P, q["Wu"] * (L2 * p + b2) + q["bu"]
        inner = gate(W2 * X + b2e, W4 * X + b4) if gated else sigma(W2 * X + b2e)
        out = out + (q["WG"] * q["Wd"]) * inner
    return out


def _np_moe_block(a, gated, i, x):
    def m(k):
        return a[f"W'_{{{i},{k}}}"]

    def v(k):
        return a[f"b'_{{{i},{k}}}"]
    h = x + m("HVO") @ (m("N1") @ x + v("N1")) + v("HVO")
    u = m("N2") @ h + v("N2")
    y = h
    for e in EXPERTS:
        g = m(f"g,{e}") @ u + v(f"g,{e}")
        inner = np_gate(a, g, m(f"u,{e}") @ u + v(f"u,{e}")) if gated else logistic(g)
        y = y + m(f"G,{e}") @ (m(f"d,{e}") @ inner + v(f"d,{e}"))
    return y


def np_moe_eq20(a, gated: bool, i, x):
    """The MoE Eq. 20 layer ``i`` in plain NumPy (the independent reference of the MoE tables)."""
    y = a[f"W'_{{{i},1}}"] @ x + a[f"b'_{{{i},3}}"]
    for e in EXPERTS:
        u = a[f"W'_{{{i},2,{e}}}"] @ x + a[f"b'_{{{i},2,{e}}}"]
        inner = np_gate(a, u, a[f"W'_{{{i},4,{e}}}"] @ x + a[f"b'_{{{i},4,{e}}}"]) if gated else logistic(u)
        y = y + a[f"W'_{{{i},3,{e}}}"] @ inner
    return y


def _table_identity() -> OpaqueIdentity:
    def lhs(case):
        gated, depth = case
        layer, x = moe_residual_term(EXPERTS, gated), INPUT
        for i in range(1, depth + 1):
            x = layer(i, x)
        return enc(x)

    def rhs(case):
        gated, depth = case
        t = derive_moe_table(depth, moe_residual_term(EXPERTS, gated), EXPERTS, gated=gated)
        return enc(t.unfold(t.form()))

    def ref(a, case):
        x = a["x'_{0}"]
        for i in range(1, case[1] + 1):
            x = np_moe_eq20(a, case[0], i, x)
        return x

    return OpaqueIdentity(lhs, rhs, ((False, 1), (False, 2), (True, 1), (True, 2), (False, 3)), reference=ref,
                          scope="The derived MoE table's unfolded form against the nested network: two routed"
                                " experts and a shared one, plain and gated, depths 1--3.")


@functools.cache
def _induction_identity() -> OpaqueIdentity:
    return plain_and_gated_induction(
        lambda g: moe_induction(moe_residual_term(EXPERTS, g), EXPERTS, gated=g), "MoE rules of the wrong shape",
        INDUCTION_SCOPE + ", and Lemma 1 (Eq. 19); two routed experts and a shared one, plain and gated.")


# --- the entries ----------------------------------------------------------------------------------

_GATES = (r"\operatorname{vec}_r\mathrm{MoE}(\mathbf H) = \textstyle\sum_e(\mathbf G_e\otimes\mathbf I_M)"
          r"\big((\mathbf I_N\otimes\mathbf W_{d,e}^T)(\sigma(\mathbf z_e)\odot\mathbf u_e) + \mathbf 1_N\otimes"
          r"\mathbf b_{d,e}\big) + (\mathbf T\otimes\mathbf I_M)\operatorname{vec}_rF_{\mathrm{sh}}(\mathbf H),\ "
          r"\mathbf G_e = \operatorname{diag}(g_{1,e},\dots,g_{N,e})")
_ROUTE = (r"g_{n,e} = \begin{cases}s\,p_{n,e}{}^{\dagger} & e\in S_n(\mathbf x)\\ 0 & e\notin S_n(\mathbf x)"
          r"\end{cases},\ {S_n = \text{top-}k(\mathbf p_n)}:\ \text{the choice is a dynamic parameter}")
_RENORM = _ROUTE.replace(r"{}^{\dagger}", r"/\textstyle\sum_{e'\in S_n}p_{n,e'}")
_RAW = _ROUTE.replace(r"{}^{\dagger}", "")
_EQ20 = (r"x'_i = \mathbf W'_{i,1}x'_{i-1} + \mathbf b'_{i,3} + \textstyle\sum_e\mathbf W'_{i,3,e}"
         r"\sigma(\mathbf W'_{i,2,e}x'_{i-1} + \mathbf b'_{i,2,e}),\ {\mathbf W'_{i,3,e} = \mathbf G_{i,e}F_{d,e}},\ "
         r"{\mathbf W'_{i,2,e} = F_{g,e}L_2(I + AL_1)}")
_TABLE = (r"{\tilde V_{i,e} = \mathbf W'_{i,2,e}\tilde A_{i-1}},\ {\tilde\beta_{i,e} = \mathbf W'_{i,2,e}"
          r"(\tilde c_{i-1} + R_{i-1}) + \mathbf b'_{i,2,e}},\ {\tilde U^{(i)}_{i,e} = \mathbf W'_{i,3,e}},\ "
          r"{\tilde U^{(i)}_{j,e} = \mathbf W'_{i,1}\tilde U^{(i-1)}_{j,e}}")
_INDUCTION = (r"x'_L = \tilde A_Lx'_0 + \tilde c_L + \textstyle\sum_{j\le L}\sum_e\tilde U^{(L)}_{j,e}"
              r"\sigma(\tilde V_{j,e}x'_0 + \tilde\beta_{j,e})\ \text{for every } L")


def entries() -> list[Entry]:
    """The entries, the unselected experts' with its Coq theorem (docs/coq.md)."""
    P = Status.PROVED
    return linked([
        Entry("ext:moe.gate-form", "MoE FFN with dynamic diagonal gates per expert", _GATES, P, moe_gate_identity(),
              note=r"Each expert is a gated FFN (\texttt{ext:gated-ffn.mv-form}) behind its own dynamic diagonal"
                   r" gate $G_e$; shared experts have the gate $T$ (Qwen2-MoE: $t_n = \mathrm{sigmoid}(h_nw)$;"
                   r" DeepSeek: $T = I$). The expert choice and the routing weights enter through $G_e$ only."),
        Entry("ext:moe.routing-renormalised", "MoE router, top-k weights renormalised (Mixtral, Qwen3-MoE)",
              _RENORM, P, routing_identity(True),
              note=r"The libraries' dispatch (per expert: the tokens that chose it, their weights, a scatter-add)"
                   r" equals the gate form with $g_{n,e}$ as stated. The \emph{choice} $S_n(\mathbf x)$ of experts"
                   r" depends on the input: it is a dynamic parameter, like the attention pattern in $H_h$."
                   r" Mixtral's softmax over the top-$k$ logits is this renormalisation; $s$ is the routed scaling"
                   r" factor (DeepSeek-V3), 1 elsewhere. How $S_n$ is chosen (plain top-$k$, DeepSeek-V3's"
                   r" bias-corrected or group-limited top-$k$) changes only which gates are zero."),
        Entry("ext:moe.routing-raw", "MoE router, raw top-k weights (Qwen2-MoE, OLMoE)", _RAW, P,
              routing_identity(False),
              note=r"Without renormalisation ($\texttt{norm\_topk\_prob} = \texttt{False}$) the gates are the router's"
                   r" probabilities themselves on the chosen experts."),
        Entry("ext:moe.unselected-experts", "MoE, experts no token chose",
              r"\mathrm{MoE}(\mathbf H;\ F_e) = \mathrm{MoE}(\mathbf H;\ F'_e)\ \text{when no token chose } e",
              P, _unselected_identity(),
              note=r"The dispatch never reads an unchosen expert: $G_e = 0$. Which experts are unchosen depends on"
                   r" the input. Coq proves it for every number of tokens, experts, slots and width and every choice"
                   r" (\texttt{MoE.unselected\_experts}): the experts are any functions of a token's row, those that no"
                   r" token chose replaced by any others; the dispatch is $\sum_e G_eF_e(\mathbf H)$"
                   r" (\texttt{MoE.dispatch\_gate\_form})."),
        Entry("ext:moe.eq20", "pre-LN block with an MoE FFN as Eq. 20", _EQ20, P,
              OpaqueIdentity(lambda g: enc(moe_block(g)("i", X)), lambda g: enc(_claimed_moe_eq20(g)), (False, True),
                             reference=lambda a, g: _np_moe_block(a, g, "i", a["x'_{i-1}"]),
                             scope="The block in opaque symbols against the hand-written MoE Eq. 20 parameters,"
                                   " two routed experts and a shared one, plain and gated."),
              note=r"$b'_{i,3} = A\beta'_1 + a + \sum_e G_ef_{d,e}$: the experts' output biases are gated too, so"
                   r" $b'_{i,3}$ is dynamic through $G_e$. Gated experts add $W'_{i,4,e} = F_{u,e}L_2(I + AL_1)$."),
        Entry("ext:moe.table", "MoE, substitution table (one term family per expert)", _TABLE, P,
              _table_identity(),
              note=r"Derived mechanically: box $i$ adds one term per expert,"
                   r" $\tilde U^{(i)}_{i,e}\,\sigma(\tilde V_{i,e}x'_0 + \tilde\beta_{i,e})$; $\tilde A$ and"
                   r" $\tilde c$ keep the paper's rules. Gated experts add"
                   r" $\tilde P_{i,e}$, $\tilde\gamma_{i,e}$ as in \texttt{ext:gated-ffn.table}."),
        Entry("ext:moe.induction", "MoE, every depth", _INDUCTION, P, _induction_identity(),
              note=r"The terms of an expert that no token chose in layer $j$ carry $\tilde U^{(L)}_{j,e} = 0$ at"
                   r" that input: the expansion keeps the same shape, the selection lives in the parameters."),
    ])
