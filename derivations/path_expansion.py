r"""Beyond the paper: the path expansion ("virtual attention heads") of an attention-only stack.

Seed 001 writes one MHA layer as :math:`\mathring{\mathbf H}' = \mathbf W'\mathbf x'` (Eq. 10) with
:math:`\mathbf W' = \sum_h H_h\otimes W_{OV,h}`, :math:`W_{OV,h} = (W_{V,h}W_{O,h})^{\mathsf T}`, and says
(§4.2, App. C) that every output element "can access the full context".  For an attention-only stack with
the standard residual :math:`X_l = X_{l-1} + \mathrm{MHA}(X_{l-1})` and **no value/output biases**
(assumed throughout; with biases each layer adds the static :math:`\mathbf 1_N\otimes c_l`, which the
later layers carry along as extra bias paths — excluded here), the stack is
:math:`\tilde A_L = F_L\cdots F_1`, :math:`F_l = I + \sum_h H^{(l)}_h\otimes W^{(l)}_{OV,h}`, and the
mixed-product rule expands it into :math:`\prod_l(1+h_l)` virtual heads
(:mod:`symuat.expansion.paths`).  Entries (ids attach to the closest printed statement):

* ``duat:eq10.part1`` — Eq. 10's closed form is the depth-1 path expansion (explicit matrices);
* ``duat:eq10.part2`` — depths 1–2 of the residual stack of Eq. 10 layers (explicit matrices);
* ``duat:eq10.lemma1`` — the mixed-product rule (explicit matrices);
* ``duat:eq10.part3`` — every depth: base case and induction step in the Kronecker-pair algebra;
* ``duat:eq11.claim1`` — the DUAT linear term :math:`\tilde A_L` of the *derived* table, with
  :math:`W'_{l,1} = F_l`, equals the sum of virtual heads (depths 1–3);
* ``duat:sec4.2.claim2`` — prose; proxy: real softmax attention stacks, paths vs. direct forward vs.
  DUAT form, with and without causal mask, and the token reach of the summed attention products.
"""

from __future__ import annotations

import itertools

import numpy as np
import sympy

from symuat import Entry, Evidence, Identity, Level, OpaqueIdentity, Prose, Status, dims_grid
from symuat.algebra.matrices import identity_matrix, kron, vec_r
from symuat.expansion import A_name, nc_symbol, substitution_table
from symuat.expansion.paths import encode_kron, extension_pairs, kron_multiply, layer_factor, path_expansion
from symuat.numeric.attention import AttentionWeights, head_attention_weights, multi_head_attention
from symuat.numeric.duat_form import duat_form
from symuat.numeric.paths import path_contributions
from symuat.numeric.stack import BlockWeights, FFNWeights, TransformerStack

from ._coq_links import linked

__all__ = ["entries", "attention_only_forward", "duat_linear_term", "eq10_single_layer", "induction",
           "mixed_product_rule", "numeric_check", "path_bindings", "random_attention_layers", "residual_stack"]

# ---------------------------------------------------------------- explicit matrices (small dims)

_SCOPE = (r"Polynomial identity in the entries; $H_h$ arbitrary $N\times N$ (softmax or not), covers N, M in {1,2}.")


def _explicit(expr: sympy.Expr, matrices, n: int) -> sympy.ImmutableMatrix:
    """Evaluate a product of opaque symbols on explicit matrices (``1`` is the identity of size ``n``)."""
    out = identity_matrix(n)
    for f in sympy.Mul.make_args(expr):
        if f != 1:
            out = out * matrices[f.name]
    return sympy.ImmutableMatrix(out)


def _paths_side(depth: int, H, Wov, X, d, *, skip_empty: bool = False) -> sympy.ImmutableMatrix:
    r""":math:`\sum_p (A_p\otimes B_p)\operatorname{vec}_r(X)` with the symbols of :func:`path_expansion` made
    explicit."""
    mats = {}
    for l in range(1, depth + 1):
        for h in range(1, d["h"] + 1):
            mats[f"H^{{({l})}}_{{{h}}}"] = H(l, h)
            mats[f"W_{{OV}}^{{({l})}}_{{{h}}}"] = Wov(l, h)
    x = vec_r(X)
    out = sympy.zeros(d["N"] * d["M"], 1)
    for t in path_expansion(depth, d["h"]):
        if skip_empty and t.path.order == 0:
            continue
        out += kron(_explicit(t.attention_product, mats, d["N"]), _explicit(t.ov_product, mats, d["M"])) * x
    return sympy.ImmutableMatrix(out)


def eq10_single_layer() -> Identity:
    r"""Eq. 10: :math:`\operatorname{vec}_r(\sum_h H_h X W_{V,h}W_{O,h}) = \sum_{\text{paths of length
    1}}(H_h\otimes W_{OV,h})\mathbf x'`."""
    def shapes(d):
        N, M = d["N"], d["M"]
        out = {"X": (N, M)}
        for h in range(1, d["h"] + 1):
            out.update({f"H1{h}": (N, N), f"V1{h}": (M, M), f"O1{h}": (M, M)})
        return out

    def lhs(e, d):
        return vec_r(sum((e[f"H1{h}"] * e["X"] * e[f"V1{h}"] * e[f"O1{h}"] for h in range(1, d["h"] + 1)),
                         sympy.zeros(d["N"], d["M"])))

    def rhs(e, d):
        return _paths_side(1, lambda l, h: e[f"H1{h}"], lambda l, h: (e[f"V1{h}"] * e[f"O1{h}"]).T, e["X"], d,
                           skip_empty=True)

    def ref(a, d):
        return sum(a[f"H1{h}"] @ a["X"] @ a[f"V1{h}"] @ a[f"O1{h}"] for h in range(1, d["h"] + 1)).reshape(-1)

    return Identity(shapes, lhs, rhs, dims_grid(h=(1, 2), N=(1, 2), M=(1, 2)), reference=ref,
                    random_dims={"h": 2, "N": 3, "M": 2}, scope=_SCOPE)


def residual_stack(depths=(1, 2)) -> Identity:
    r""":math:`X_l = X_{l-1} + \sum_h H^{(l)}_h X_{l-1} W_{OV,h}^{(l)\mathsf T}` vs. the sum over all paths."""
    def shapes(d):
        out = {"X": (d["N"], d["M"])}
        for l in range(1, d["L"] + 1):
            for h in range(1, d["h"] + 1):
                out.update({f"H{l}{h}": (d["N"], d["N"]), f"W{l}{h}": (d["M"], d["M"])})
        return out

    def lhs(e, d):
        X = e["X"]
        for l in range(1, d["L"] + 1):
            X = X + sum((e[f"H{l}{h}"] * X * e[f"W{l}{h}"].T for h in range(1, d["h"] + 1)), sympy.zeros(*X.shape))
        return vec_r(X)

    def rhs(e, d):
        return _paths_side(d["L"], lambda l, h: e[f"H{l}{h}"], lambda l, h: e[f"W{l}{h}"], e["X"], d)

    def ref(a, d):
        X = a["X"]
        for l in range(1, d["L"] + 1):
            X = X + sum(a[f"H{l}{h}"] @ X @ a[f"W{l}{h}"].T for h in range(1, d["h"] + 1))
        return X.reshape(-1)

    return Identity(shapes, lhs, rhs, dims_grid(L=depths, h=(1, 2), N=(1, 2), M=(1, 2)), reference=ref,
                    random_dims={"L": max(depths), "h": 2, "N": 3, "M": 2}, scope=_SCOPE)


def mixed_product_rule() -> Identity:
    r""":math:`(A\otimes B)(C\otimes D) = AC\otimes BD` for rectangular :math:`A,B,C,D` (all six dims in {1,2})."""
    return Identity(
        shapes={"A": ("p", "q"), "C": ("q", "r"), "B": ("s", "t"), "D": ("t", "u")},
        lhs=lambda A, B, C, D: kron(A, B) * kron(C, D),
        rhs=lambda A, C, B, D: kron(A * C, B * D),
        dims=dims_grid(p=(1, 2), q=(1, 2), r=(1, 2), s=(1, 2), t=(1, 2), u=(1, 2)),
        reference=lambda A, B, C, D: np.kron(A, B) @ np.kron(C, D),
        random_dims={"p": 2, "q": 3, "r": 2, "s": 3, "t": 2, "u": 3},
        scope=r"Entry ((i,k),(j,l)) of both sides is $\sum_{m,n} A_{im} C_{mj} B_{kn} D_{nl}$; the grid covers every "
              "index pattern.",
    )


# ---------------------------------------------------------------- every depth: induction in the pair algebra

P_H, P_W = nc_symbol("P_{H}"), nc_symbol("P_{W}")
_CASES = tuple((kind, h) for h in (1, 2, 3) for kind in ("base", "step"))


def _induction_lhs(case):
    kind, h = case
    if kind == "base":
        return encode_kron(layer_factor(1, h))
    return encode_kron(kron_multiply(layer_factor("L+1", h), [(P_H, P_W)]))


def _induction_rhs(case):
    kind, h = case
    if kind == "base":
        return encode_kron([t.pair for t in path_expansion(1, h)])
    return encode_kron(extension_pairs((P_H, P_W), "L+1", h))


def _induction_ref(a, case):
    kind, h = case
    T = a[r"T_{\otimes}"]
    layer = "1" if kind == "base" else "L+1"
    PH, PW = (np.eye(T.shape[0]),) * 2 if kind == "base" else (a["P_{H}"], a["P_{W}"])
    return PH @ T @ PW + sum(a[f"H^{{({layer})}}_{{{k}}}"] @ PH @ T @ a[f"W_{{OV}}^{{({layer})}}_{{{k}}}"] @ PW
                             for k in range(1, h + 1))


def induction() -> OpaqueIdentity:
    r"""Base :math:`F_1 = \sum_{p\in\mathcal P_1}A_p\otimes B_p` and step
    :math:`F_{L+1}(P_H\otimes P_W) = \sum \texttt{extension\_pairs}((P_H,P_W), L+1)` for an opaque depth-:math:`L`
    term; by linearity :math:`\sum_{\mathcal P_{L+1}} = F_{L+1}\sum_{\mathcal P_L}`."""
    return OpaqueIdentity(_induction_lhs, _induction_rhs, _CASES, reference=_induction_ref,
                          scope=r"Kronecker pairs encoded $A\otimes B \mapsto A\cdot T\cdot B$ (injective); products "
                                "by the mixed-product rule (duat:eq10.lemma1); heads 1..3, generic layer L+1.")


def _duat_linear_lhs(depth: int, heads: int = 2):
    table = substitution_table(depth)
    pairs = ((sympy.S.One, sympy.S.One),)
    for factor in reversed(sympy.Mul.make_args(table.unfold(nc_symbol(A_name(depth))))):
        layer = int(factor.name.split("{")[1].split(",")[0])  # W'_{l,1}
        pairs = kron_multiply(layer_factor(layer, heads), pairs)
    return encode_kron(pairs)


def _duat_linear_ref(a, depth: int, heads: int = 2):
    T = a[r"T_{\otimes}"]
    out = np.zeros_like(T)
    for k in range(depth + 1):
        for subset in itertools.combinations(range(1, depth + 1), k):
            for choice in itertools.product(range(1, heads + 1), repeat=k):
                A, B = np.eye(T.shape[0]), np.eye(T.shape[0])
                for l, h in zip(subset, choice):
                    A, B = a[f"H^{{({l})}}_{{{h}}}"] @ A, a[f"W_{{OV}}^{{({l})}}_{{{h}}}"] @ B
                out = out + A @ T @ B
    return out


def duat_linear_term() -> OpaqueIdentity:
    r""":math:`\tilde A_L` (derived table, :math:`W'_{l,1}\mapsto F_l`) :math:`= \sum_{\text{paths}}A_p\otimes
    B_p`, :math:`L\le 3`, 2 heads."""
    return OpaqueIdentity(_duat_linear_lhs, lambda L: encode_kron([t.pair for t in path_expansion(L, 2)]),
                          (1, 2, 3), reference=_duat_linear_ref,
                          scope=r"$\tilde{A}_L$ read off \texttt{substitution\_table}(L); Kronecker pairs encoded "
                                r"$A\otimes "
                                r"B \mapsto A\cdot T\cdot B$.")


# ---------------------------------------------------------------- real softmax attention

def random_attention_layers(rng, depth: int, width: int, heads: int, causal: bool) -> tuple[AttentionWeights, ...]:
    """Random attention layers with query/key biases but **no value/output biases**."""
    def mat():
        return rng.standard_normal((width, width)) / np.sqrt(width)
    return tuple(AttentionWeights(mat(), mat(), mat(), mat(), b_Q=0.1 * rng.standard_normal(width),
                                  b_K=0.1 * rng.standard_normal(width), n_heads=heads, causal=causal)
                 for _ in range(depth))


def attention_only_forward(layers, X0) -> list[np.ndarray]:
    r"""Direct forward pass :math:`X_l = X_{l-1} + \mathrm{MHA}_l(X_{l-1})`; returns :math:`[X_0,\dots,X_L]`."""
    out = [np.asarray(X0, dtype=float)]
    for attn in layers:
        out.append(out[-1] + multi_head_attention(out[-1], attn))
    return out


def path_bindings(layers, inputs) -> dict[str, np.ndarray]:
    r""":math:`H^{(l)}_h` at the layer's actual input ``inputs[l-1]`` and :math:`W^{(l)}_{OV,h} =
    (W_{V,h}W_{O,h})^{\mathsf T}`."""
    out = {}
    for l, (attn, X) in enumerate(zip(layers, inputs), start=1):
        for h, H in enumerate(head_attention_weights(X, attn), start=1):
            sl = attn.head_slice(h - 1)
            out[f"H^{{({l})}}_{{{h}}}"] = H
            out[f"W_{{OV}}^{{({l})}}_{{{h}}}"] = (attn.W_V[:, sl] @ attn.W_O[sl, :]).T
    return out


def _duat_stack(layers, rng) -> TransformerStack:
    M = layers[0].width
    def zero_ffn():
        return FFNWeights(rng.standard_normal((M, 2)), np.zeros(2), np.zeros((2, M)), np.zeros(M))
    return TransformerStack(tuple(BlockWeights(a, zero_ffn()) for a in layers), kind="standard")


def numeric_check(seed: int, depth: int = 3, N: int = 6, M: int = 4, heads: int = 2, causal: bool = False,
                  terms=None) -> dict:
    r"""Paths vs. direct forward vs. DUAT :math:`\tilde A_L\mathbf x'_0`; also the token reach of :math:`\sum_p A_p`."""
    rng = np.random.default_rng([seed, 101, int(causal)])
    layers = random_attention_layers(rng, depth, M, heads, causal)
    X0 = rng.standard_normal((N, M))
    xs = attention_only_forward(layers, X0)
    terms = path_expansion(depth, heads) if terms is None else terms
    binds = path_bindings(layers, xs[:-1])
    parts = path_contributions(terms, binds, X0.reshape(-1))
    paths, direct = np.sum(parts, axis=0), xs[-1].reshape(-1)
    form = duat_form(_duat_stack(layers, rng), X0).terms
    scale = sum(float(np.max(np.abs(p))) for p in parts)
    tol = 16 * (depth + 1) * (N + M) * np.finfo(float).eps * scale
    reach = sum(np.abs(np.asarray(_numeric_product(t.attention_product, binds, N))) for t in terms)
    return {
        "paths_error": float(np.max(np.abs(paths - direct))),
        "duat_error": float(np.max(np.abs(form.linear_term - direct))),
        "duat_rest": float(np.max(np.abs(form.total - form.linear_term))),
        "tolerance": tol, "n_terms": len(terms),
        "reach": float(np.count_nonzero(reach > 0) / reach.size),
        "lower_triangular": bool(np.all(np.triu(reach, 1) == 0)),
    }


def _numeric_product(expr, binds, n):
    out = np.eye(n)
    for f in sympy.Mul.make_args(expr):
        if f != 1:
            out = out @ binds[f.name]
    return out


def _proxy(seed: int) -> tuple[Evidence, ...]:
    N = 6
    res = {c: numeric_check(seed, causal=c, N=N) for c in (False, True)}
    ok = all(r["paths_error"] <= r["tolerance"] and r["duat_error"] <= r["tolerance"] and r["duat_rest"] == 0
             for r in res.values()) and res[False]["reach"] == 1.0 and res[True]["lower_triangular"]
    g, c = res[False], res[True]
    detail = (f"depth 3, 2 heads, N={N}, M=4, real softmax attention, no value/output biases (seed {seed}): "
              f"Σ over {g['n_terms']} virtual heads vs direct forward max error {g['paths_error']:.1e} "
              f"(causal {c['paths_error']:.1e}; tolerance {g['tolerance']:.1e} from magnitudes); DUAT A~_L x'_0 "
              f"vs direct {g['duat_error']:.1e} (causal {c['duat_error']:.1e}), c~_L and σ-terms exactly 0. "
              f"Token reach of Σ_p A_p: {g['reach']:.3f} of all (output, input) token pairs; with a causal mask "
              f"{c['reach']:.3f} = (N+1)/(2N) = {(N + 1) / (2 * N):.3f}, lower triangular: "
              f"{c['lower_triangular']} — 'the full context' is only the preceding tokens in a decoder.")
    return (Evidence(Level.FLOAT, bool(ok), detail),)


# ---------------------------------------------------------------- ledger

_EQ10 = r"\mathring{\mathbf{H}}' = \mathbf{W}' \mathbf{x}'"
_EQ11 = (r"\mathbf{x}_{i+1} = (\mathbf{W}'_{i+1,1}\mathbf{x}_0 + \mathbf{b}_{i+1,1}) + \sum_{j=1}^{i+1} "
         r"\mathbf{W}'_{j,3}\sigma(\mathbf{W}'_{j,2}\mathbf{x}'_0 + \mathbf{b}'_{j,2})")
_BEYOND = "Beyond the paper (symuat's path expansion, symuat.expansion.paths); "
_NOBIAS = (r" Assumes no value/output biases (they would add bias paths $1_N \otimes c_l$ carried by later layers).")


def _entries() -> list[Entry]:
    return [
        Entry("duat:eq10.part1", "Eq. 10, depth-1 path expansion", _EQ10, Status.PROVED,
              eq10_single_layer(),
              note=_BEYOND + r"$W' = \sum_h H_h \otimes(W_{Vh} W_{Oh})^T$ is the sum of the length-1 terms of "
                             r"\texttt{path\_expansion}(1, h); the empty path (I) belongs to the residual, not to Eq. "
                             "10." + _NOBIAS),
        Entry("duat:eq10.part2", "Eq. 10, residual stack, depths 1-2", _EQ10, Status.PROVED,
              residual_stack(),
              note=_BEYOND + r"$x'_L = (I + W'_L)\cdots(I + W'_1) x'_0 = \sum$ over the $(1+h)^L$ virtual heads "
                             r"($H^{(l_k)}\cdots H^{(l_1)}) \otimes(W_{OV}^{(l_k)}\cdots W_{OV}^{(l_1)}$), explicit "
                             "matrices, L, h, N, M in {1,2}." + _NOBIAS),
        Entry("duat:eq10.lemma1", "Eq. 10, mixed-product rule",
              r"(\mathbf{A}\otimes\mathbf{B})(\mathbf{C}\otimes\mathbf{D}) = "
              r"\mathbf{A}\mathbf{C}\otimes\mathbf{B}\mathbf{D}",
              Status.PROVED, mixed_product_rule(),
              note=_BEYOND + "not printed; the lemma behind duat:eq10.part3 "
                             r"(symuat.expansion.paths.\texttt{mixed\_product})."),
        Entry("duat:eq10.part3", "Eq. 10, residual stack, induction", _EQ10,
              Status.PROVED, induction(),
              note=_BEYOND + r"base case (depth 1) and step: $F_{L+1}(P_H \otimes P_W) = P_H \otimes P_W + \sum_h "
                             r"H^{(L+1)}_h P_H \otimes W^{(L+1)}_{OV,h} P_W$, the recursion \texttt{path\_expansion} "
                             r"uses; by linearity $\sum_{\text{paths} \le L+1} = F_{L+1} \sum_{\text{paths} \le L}$, "
                             "so the "
                             "expansion holds for every depth, every size (given duat:eq10.lemma1)."),
        Entry("duat:eq11.claim1", "Eq. 11, linear term", _EQ11,
              Status.PROVED, duat_linear_term(),
              note=_BEYOND + "attention-only standard residual stack: $W'_{l,3} = 0$, $b' = 0$, so Eq. 11 "
                             r"degenerates to $\tilde{A}_L x'_0$ with $\tilde{A}_L = W'_{L,1}\cdots W'_{1,1}$ "
                             r"(transformed reading) "
                             "and $W'_{l,1} = I + W'^{(l)}_{HVO}$. $\\tilde{A}_L$ read off the derived table equals "
                             "the "
                             "sum "
                             "of virtual heads, depths 1-3, 2 heads; numerically with real softmax attention in "
                             "duat:sec4.2.claim2." + _NOBIAS),
        Entry("duat:sec4.2.claim2", "§4.2 and App. C",
              r"\mathbf{H}' = (\mathbf{W}'_{HVO})^T \mathbf{x}'\text{: each element of }\mathbf{H}'"
              r"\text{ contains information from the entire input}", Status.PROSE,
              Prose(r"Not an equation. Across layers the path expansion makes it precise: $x'_L = \sum_{paths} "
                    r"(H^{(l_k)}\cdots H^{(l_1)} \otimes W_{OV}^{(l_k)}\cdots W_{OV}^{(l_1)}) x'_0$, so output token "
                    r"i reaches input token j iff $(\sum_p A_p)_{ij} \ne 0$. Proxy: the sum over virtual heads "
                    "reproduces a direct attention-only forward pass and the DUAT linear term, and the token reach "
                    "is measured (full without a mask, lower-triangular with a causal mask).", proxy=_proxy),
              note="Beyond the paper; assumes no value/output biases."),
    ]


def entries() -> list[Entry]:
    """The entries of this derivation, each with its Coq theorem where one states it (docs/coq.md)."""
    return linked(_entries())
