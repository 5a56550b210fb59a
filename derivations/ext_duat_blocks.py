r"""Beyond the paper: modern Transformer blocks as (gated) Eq. 20, their substitution tables, and the
input-transform and final-norm boxes.

Every block is written in opaque noncommutative symbols (:mod:`symuat.expansion.blocks`): an attention
layer at its actual input is :math:`A x + a` (:math:`A = W'_{HVO}`, Eq. 9–10, dynamic), a norm
(LayerNorm or RMSNorm) :math:`L_k x + \beta'_k` (dynamic through its per-token scale), the FFN
:math:`F_2\sigma(F_1u + f_1) + f_2` or, gated, :math:`F_d\,g(F_gu + f_g, F_uu + f_u) + f_d` with the
gate :math:`g(a, b) = \mathrm{act}(a)\odot b` uninterpreted.

Evidence.  *symbolic*: canonical expansion in the free noncommutative algebra (every matrix opaque, any
size, σ and the gate uninterpreted).  *exact* and *float*: the gate is encoded as
:math:`g(a, b) \mapsto \sigma(a + Kb)` with a fresh opaque :math:`K` (injective on canonical expansions,
:func:`symuat.expansion.encode_gate`), then random :math:`\mathbb F_p` / float64 matrices; the float level
compares with plain NumPy recursions written here (no SymPy).

Ids: ``ext:block-layouts.eq20`` (every layout, plain and gated), ``ext:parallel-block.*`` (GPT-J /
GPT-NeoX / Falcon), ``ext:input-transform.table``, ``ext:final-norm.table``, ``ext:input-final.induction``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import sympy

from symuat import Entry, InvalidValueError, OpaqueIdentity, Status
from symuat.expansion import (
    INPUT,
    LAYOUTS,
    affine_term,
    block_symbols,
    block_term,
    canonical_expand,
    derive_table,
    encode_gate,
    extended_induction,
    gate,
    layer_symbols,
    nc_symbol,
    sigma,
)
from symuat.expansion.extended import INPUT_TRANSFORM, gated_residual_term, gated_symbols, plain_residual_term
from symuat.names import logistic as sig

from ._coq_links import linked

__all__ = ["entries", "K", "enc", "np_gate", "np_block", "np_eq20", "nested", "block_claims", "induction_claim",
           "plain_and_gated_induction", "proved_lazily", "PROOF_CASES", "PROOF_CASES_WITH_FINAL", "INDUCTION_SCOPE"]

K = nc_symbol("W'_{K}")
X = nc_symbol("x'_{i-1}")
ONE = sympy.S.One


def enc(e: sympy.Expr) -> sympy.Expr:
    """The gate encoded by σ (see the module docstring), canonically expanded so that a scalar 1 only ever
    multiplies a vector (the exact and float levels read a bare 1 as a scalar, not as the identity)."""
    return canonical_expand(encode_gate(e, K))


def np_gate(a: Mapping[str, np.ndarray], u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return sig(u + a["W'_{K}"] @ v)


#: The scope of an every-depth proof, up to what follows Lemma 1's place in the list.
INDUCTION_SCOPE = (r"Induction on the depth: base case, generic step $i \to i+1$ with the rules of box 3 re-indexed"
                   r" ($\tilde A_i$, $\tilde c_i$, $R_i$ opaque)")


#: The cases of an every-depth proof (:func:`~symuat.expansion.extended_induction`), in order; ``final`` only for a
#: table with a final box.
PROOF_CASES = ("base", "step", "lemma")
PROOF_CASES_WITH_FINAL = ("base", "step", "final", "lemma")


def proved_lazily(prove: Callable[[], Any], cases: tuple[str, ...], wrong_shape: str) -> Callable[[], Any]:
    r"""``prove()`` (an every-depth proof), built on first use and then kept: when a claim's side is first
    evaluated, not when the derivations load (a warm ``symuat audit`` takes every record from the cache and
    builds none).  A proof whose rules have the wrong shape, or whose cases are not ``cases``, is an
    :class:`InvalidValueError` (``wrong_shape: problems``); the audit of the entry reports it as one
    :class:`~symuat.errors.DerivationError` naming the entry."""

    @functools.cache
    def proof() -> Any:
        p = prove()
        if p.problems:
            raise InvalidValueError(f"{wrong_shape}: {p.problems}")
        if p.cases != cases:
            raise InvalidValueError(f"{wrong_shape}: the proof has the cases {p.cases}, not {cases}")
        return p

    return proof


def plain_and_gated_induction(prove: Callable[[bool], Any], wrong_shape: str, scope: str) -> OpaqueIdentity:
    r"""One identity per case ``(gated, case)`` of the every-depth proofs ``prove(False)`` (plain) and
    ``prove(True)`` (gated), each with the cases :data:`PROOF_CASES`, both sides encoded (:func:`enc`), checked
    numerically at the gated step; each proof is built when first used (:func:`proved_lazily`)."""
    proofs = {g: proved_lazily(functools.partial(prove, g), PROOF_CASES, wrong_shape) for g in (False, True)}
    cases = tuple((g, c) for g in (False, True) for c in PROOF_CASES)
    return OpaqueIdentity(lambda c: enc(proofs[c[0]]().sides[c[1]][0]), lambda c: enc(proofs[c[0]]().sides[c[1]][1]),
                          cases, check_case=(True, "step"), scope=scope)


def induction_claim(name: str, term: Callable[[bool], Any]) -> OpaqueIdentity:
    r"""The induction on the depth of a block whose residual term is ``term(gated)`` (plain and gated): base case,
    generic step :math:`i \to i+1` with box 3's rules re-indexed, Lemma 1 (Eq. 19), from
    :func:`~symuat.expansion.extended_induction`, built when first used (:func:`proved_lazily`)."""
    return plain_and_gated_induction(lambda g: extended_induction(term(g)), f"{name}: rules of the wrong shape",
                                     INDUCTION_SCOPE + ", Lemma 1 (Eq. 19); plain and gated.")


# ---------------------------------------------------------------- hand-written claims

def block_claims(layout: str, i: str = "i") -> dict[str, sympy.Expr]:
    r"""The claimed Eq. 20 parameters of ``layout`` (written by hand, checked against the block).

    ``W2 = F_in X``, ``b2 = F_in Y + f_in``; a gated block adds ``W4 = F_up X``, ``b4 = F_up Y + f_up``.
    """
    s = block_symbols(i)
    (A, a), (L1, b1), (L2, b2), (Fi, fi), (Fo, fo) = (s[p] for p in ("HVO", "N1", "N2", "in", "out"))
    if layout == "paper":
        W1, b3, Xm, Y, W3 = A, a + fo, A, a, Fo
    elif layout == "standard":
        W1, b3, Xm, Y, W3 = ONE + A, a + fo, ONE + A, a, Fo
    elif layout == "pre_ln":
        P, p = ONE + A * L1, A * b1 + a
        W1, b3, Xm, Y, W3 = P, p + fo, L2 * P, L2 * p + b2, Fo
    elif layout == "post_ln":
        P, p = L1 * (ONE + A), L1 * a + b1
        W1, b3, Xm, Y, W3 = L2 * P, L2 * (p + fo) + b2, P, p, L2 * Fo
    elif layout == "parallel":
        W1, b3, Xm, Y, W3 = ONE + A * L1, A * b1 + a + fo, L2, b2, Fo
    else:  # sublayer_post_ln
        P, p = ONE + L1 * A, L1 * a + b1
        W1, b3, Xm, Y, W3 = P, p + L2 * fo + b2, P, p, L2 * Fo
    return {"W1": W1, "b3": b3, "X": Xm, "Y": Y, "W3": W3}


def _claimed_eq20(layout: str, gated: bool) -> sympy.Expr:
    c, s = block_claims(layout), block_symbols("i")
    (Fi, fi), (Fu, fu) = s["in"], s["up"]
    u = Fi * c["X"] * X + Fi * c["Y"] + fi
    inner = gate(u, Fu * c["X"] * X + Fu * c["Y"] + fu) if gated else sigma(u)
    return c["W1"] * X + c["b3"] + c["W3"] * inner


# ---------------------------------------------------------------- NumPy references (no SymPy)

def np_block(a: Mapping[str, np.ndarray], layout: str, gated: bool, i: str, x: np.ndarray) -> np.ndarray:
    """One ``layout`` block in plain NumPy on the bound values (names as in :func:`block_symbols`)."""
    def m(p):
        return a[f"W'_{{{i},{p}}}"]

    def v(p):
        return a[f"b'_{{{i},{p}}}"]

    def attn(z):
        return m("HVO") @ z + v("HVO")

    def n(k, z):
        return m(f"N{k}") @ z + v(f"N{k}")

    def ffn(z):
        g = m("in") @ z + v("in")
        inner = np_gate(a, g, m("up") @ z + v("up")) if gated else sig(g)
        return m("out") @ inner + v("out")

    if layout == "paper":
        h = attn(x)
        return h + ffn(h)
    if layout == "standard":
        h = x + attn(x)
        return h + ffn(h)
    if layout == "pre_ln":
        h = x + attn(n(1, x))
        return h + ffn(n(2, h))
    if layout == "post_ln":
        h = n(1, x + attn(x))
        return n(2, h + ffn(h))
    if layout == "parallel":
        return x + attn(n(1, x)) + ffn(n(2, x))
    h = x + n(1, attn(x))
    return h + n(2, ffn(h))


def np_eq20(a: Mapping[str, np.ndarray], gated: bool, i, x: np.ndarray) -> np.ndarray:
    """The (gated) Eq. 20 layer ``i`` in plain NumPy."""
    W1, W2, W3 = (a[f"W'_{{{i},{k}}}"] for k in (1, 2, 3))
    u = W2 @ x + a[f"b'_{{{i},2}}"]
    inner = np_gate(a, u, a[f"W'_{{{i},4}}"] @ x + a[f"b'_{{{i},4}}"]) if gated else sig(u)
    return W1 @ x + a[f"b'_{{{i},3}}"] + W3 @ inner


def nested(layer, depth: int, input_transform: bool = False, final=None) -> sympy.Expr:
    """The naive composition of ``depth`` layers (plus the optional boxes), as one expression."""
    x = INPUT_TRANSFORM[0] * INPUT + INPUT_TRANSFORM[1] if input_transform else INPUT
    for i in range(1, depth + 1):
        x = layer(i, x)
    return final(depth + 1, x) if final is not None else x


def _table_identity(layer, np_layer, cases=(1, 2, 3), input_transform=False, final=None, scope="") -> OpaqueIdentity:
    def lhs(depth):
        return enc(nested(layer, depth, input_transform, final))

    def rhs(depth):
        t = derive_table(depth, layer, input_transform=input_transform, final=final).table
        return enc(t.unfold(t.form()))

    def ref(a, depth):
        x = a["x'_{0}"]
        if input_transform:
            x = a["W'_{0,1}"] @ x + a["b'_{0,3}"]
        for i in range(1, depth + 1):
            x = np_layer(a, i, x)
        if final is not None:
            x = a[f"W'_{{{depth + 1},1}}"] @ x + a[f"b'_{{{depth + 1},3}}"]
        return x

    return OpaqueIdentity(lhs, rhs, tuple(cases), reference=ref,
                          scope=scope or "The derived table's unfolded form against the nested network.")


@functools.cache
def induction_identity(layer, **kw) -> OpaqueIdentity:
    """The every-depth proof (base, step, [final,] lemma) of a derived table as one identity per case, built when
    first used (:func:`proved_lazily`)."""
    cases = PROOF_CASES_WITH_FINAL if kw.get("final") is not None else PROOF_CASES
    proof = proved_lazily(lambda: extended_induction(layer, **kw), cases, "rules of the wrong shape")
    return OpaqueIdentity(lambda c: enc(proof().sides[c][0]), lambda c: enc(proof().sides[c][1]), cases,
                          check_case="step", scope=INDUCTION_SCOPE + ", the final box if any, and Lemma 1 (Eq. 19).")


# ---------------------------------------------------------------- entries

_LAYOUT_CASES = tuple((layout, g) for g in (False, True) for layout in LAYOUTS)


def _layouts_identity() -> OpaqueIdentity:
    return OpaqueIdentity(lambda c: enc(block_term(c[0], c[1])("i", X)), lambda c: enc(_claimed_eq20(*c)),
                          _LAYOUT_CASES,
                          reference=lambda a, c: np_block(a, c[0], c[1], "i", a["x'_{i-1}"]),
                          scope="Each block against (gated) Eq. 20 with the hand-written parameters.")


_EQ20_TEX = (r"x'_i = \mathbf{W}'_{i,1}x'_{i-1} + \mathbf{b}'_{i,3} + \mathbf{W}'_{i,3}\sigma(\mathbf{W}'_{i,2}x'_{i-1}"
             r" + \mathbf{b}'_{i,2})\ \text{(gated: } \mathrm{act}(\cdot)\odot(\mathbf{W}'_{i,4}x'_{i-1} +"
             r" \mathbf{b}'_{i,4})\text{) for every layout}")
_PAR_TEX = (r"x + \mathrm{MHA}(N_1x) + \mathrm{FFN}(N_2x):\ \mathbf{W}'_{i,1} = I + AL_1,\ "
            r"\mathbf{b}'_{i,3} = A\beta'_1 + a + f_2,\ \mathbf{W}'_{i,2} = F_1L_2,\ \mathbf{b}'_{i,2} = F_1\beta'_2"
            r" + f_1,\ \mathbf{W}'_{i,3} = F_2")


def _par_np(a, i, x):
    return np_block(a, "parallel", False, str(i), x)


def _entries() -> list[Entry]:
    par = block_term("parallel")
    return [
        Entry("ext:block-layouts.eq20", "Transformer block layouts as Eq. 20", _EQ20_TEX, Status.PROVED,
              _layouts_identity(),
              note=r"Layouts paper, standard, pre-LN (GPT-2, Llama), post-LN (BERT,"
                   r" \texttt{nn.TransformerEncoderLayer}), parallel (GPT-J, GPT-NeoX), sublayer-post-norm"
                   r" (OLMo-2); each with the paper's FFN and a gated FFN. Parameters as in"
                   r" \texttt{symuat.numeric.residual\_params}; $W'_{i,4}$, $b'_{i,4}$ are"
                   r" $W'_{i,2}$, $b'_{i,2}$ with the up projection in place of the gate projection."),
        Entry("ext:parallel-block.eq20", "parallel block x + MHA(N1 x) + FFN(N2 x)", _PAR_TEX,
              Status.PROVED,
              OpaqueIdentity(lambda c: enc(block_term("parallel", c)("i", X)),
                             lambda c: enc(_claimed_eq20("parallel", c)), (False, True),
                             reference=lambda a, c: np_block(a, "parallel", c, "i", a["x'_{i-1}"])),
              note=r"Both branches read the block input, so $W'_{i,2} = F_1 L_2$ no longer contains $W'_{i,1}$ (the"
                   r" Eq. 30$\to$31 merge of the paper does not happen); $b'_{i,2}$ is static. $N_2 = N_1$ (GPT-J) is"
                   r" the special case $L_2 = L_1$, $\beta'_2 = \beta'_1$."),
        Entry("ext:parallel-block.table", "parallel block, substitution table",
              r"\tilde V_i = F_{1,i}L_{2,i}\tilde A_{i-1},\ \tilde\beta_i = F_{1,i}L_{2,i}(\tilde c_{i-1} + R_{i-1})"
              r" + F_{1,i}\beta'_{2,i} + f_{1,i},\ \tilde A_i = (I + A_iL_{1,i})\tilde A_{i-1},\ \dots",
              Status.PROVED, _table_identity(par, _par_np),
              note="Derived mechanically from the block written in opaque symbols; depths 1-3 against the nested"
                   " network (ext:parallel-block.induction proves every depth)."),
        Entry("ext:parallel-block.induction", "parallel block, every depth",
              r"x'_L = \tilde A_Lx'_0 + \tilde c_L + \sum_{j\le L}\tilde U^{(L)}_j\sigma(\tilde V_jx'_0 +"
              r" \tilde\beta_j)\ \text{for every } L \text{ (parallel blocks)}",
              Status.PROVED, induction_identity(par)),
        Entry("ext:input-transform.table", "input transform (scale, position embeddings, input norm)",
              r"\tilde A_0 = \mathbf{W}'_{0,1},\ \tilde c_0 = \mathbf{b}'_{0,3}\ (\text{instead of } I, 0)",
              Status.PROVED,
              _table_identity(plain_residual_term, lambda a, i, x: np_eq20(a, False, i, x), input_transform=True),
              note=r"$x'_{(0)} = W'_{0,1}x'_0 + b'_{0,3}$: $W'_{0,1} = s I$ (Gemma's $\sqrt{M}$), or $s$ times the"
                   r" input norm's operator (BERT's embedding LayerNorm, dynamic); $b'_{0,3}$ the position"
                   r" embeddings, or the norm applied to them plus its bias. Every later box keeps its form;"
                   r" $\tilde A_L = W'_{L,1}\cdots W'_{1,1}W'_{0,1}$."),
        Entry("ext:final-norm.table", "final norm as an affine box",
              r"\tilde A_{L+1} = \mathbf{W}'_{L+1,1}\tilde A_L,\ \tilde c_{L+1} = \mathbf{W}'_{L+1,1}\tilde c_L +"
              r" \mathbf{b}'_{L+1,3},\ \tilde U^{(L+1)}_j = \mathbf{W}'_{L+1,1}\tilde U^{(L)}_j",
              Status.PROVED,
              _table_identity(plain_residual_term, lambda a, i, x: np_eq20(a, False, i, x), final=affine_term),
              note=r"The final norm adds no term (Lemma 1, Eq. 19: a matrix times a UAT is a UAT); $\tilde V_j$,"
                   r" $\tilde\beta_j$ unchanged."),
        Entry("ext:input-final.induction", "input transform and final norm, every depth",
              r"x'_{out} = \tilde A_{L+1}x'_0 + \tilde c_{L+1} + \sum_{j\le L}\tilde U^{(L+1)}_j\sigma(\tilde V_jx'_0"
              r" + \tilde\beta_j)\ \text{for every } L",
              Status.PROVED, induction_identity(plain_residual_term, input_transform=True, final=affine_term)),
    ]


# keep names used by ext_duat_gated importable
_ = (gated_residual_term, gated_symbols, layer_symbols)


def entries() -> list[Entry]:
    """The entries of this derivation, each with its Coq theorem where one states it (docs/coq.md)."""
    return linked(_entries())
