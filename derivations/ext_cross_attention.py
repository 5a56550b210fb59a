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

That induction (``ext:cross-attention.induction``): the decoder block's box

.. math::

    \mathbf x'_i = \mathbf W'_{i,1}\mathbf x'_{i-1} + \mathbf W'_{i,E}e' + \mathbf b'_{i,3}
    + \mathbf W'_{i,3}\sigma(\mathbf W'_{i,2}\mathbf x'_{i-1} + \mathbf W'_{i,2E}e' + \mathbf b'_{i,2})

is Eq. 20 with the :math:`e'`-terms in the biases, so the table's mechanical derivation
(:func:`symuat.expansion.extended_induction`) runs on it unchanged: :math:`\tilde A`, :math:`\tilde U`,
:math:`\tilde V` keep the paper's rules, and :math:`e'` enters
:math:`\tilde c_i = \mathbf W'_{i,1}\tilde c_{i-1} + \mathbf b'_{i,3} + \mathbf W'_{i,E}e'` and
:math:`\tilde\beta_i = \mathbf W'_{i,2}(\tilde c_{i-1} + R_{i-1}) + \mathbf b'_{i,2} + \mathbf W'_{i,2E}e'`.

Ids ``ext:cross-attention.mv-form``, ``ext:cross-attention.induction``.  Evidence of the first: symbolic, exact
:math:`\mathbb F_p` and float64 on free matrices; each :math:`H_h` has free entries except the last of each row (the
row sums to one); the float level compares with a NumPy reference written here (values of :math:`E`, per-head mixing,
output projection).  Of the second: the induction's cases (base, generic step, Lemma 1, and the two rules in which
:math:`e'` appears, derived against hand-written) in opaque symbols, :math:`e'` an opaque vector.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from symuat import Entry, Identity, InvalidValueError, OpaqueIdentity, Status, vec_r
from symuat.algebra.families import col_block, family_member, family_shapes, family_sum, row_block
from symuat.algebra.matrices import kron
from symuat.algebra.splits import but_last
from symuat.expansion import canonical_expand, derive_table, extended_induction, layer_symbols, nc_symbol, sigma
from symuat.expansion.table import R_name, beta_name, c_name

from ._coq_links import linked
from .ext_duat_blocks import INDUCTION_SCOPE, PROOF_CASES

__all__ = ["entries", "cross_identity", "np_cross", "decoder_stream_rhs", "ENCODER", "decoder_residual_term",
           "decoder_induction_identity", "static_beta_rhs"]

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


# --- the decoder stack, every depth ----------------------------------------------------------------

#: :math:`e' = \operatorname{vec}_r(E)`, the encoder's output: the decoder's second input (an opaque vector).
ENCODER = nc_symbol("e'")


def _external(i) -> tuple[sympy.Symbol, sympy.Symbol]:
    r""":math:`(\mathbf W'_{i,E}, \mathbf W'_{i,2E})`: the coefficients of :math:`e'` in the box and in its
    :math:`\sigma` argument."""
    return nc_symbol(f"W'_{{{i},E}}"), nc_symbol(f"W'_{{{i},2E}}")


def decoder_residual_term(i, x):
    r"""The decoder block's Eq. 20 box with the second input (``ExtAttention.decoder_eq20``):
    :math:`\mathbf W'_{i,1}x + \mathbf W'_{i,E}e' + \mathbf b'_{i,3}
    + \mathbf W'_{i,3}\sigma(\mathbf W'_{i,2}x + \mathbf W'_{i,2E}e' + \mathbf b'_{i,2})`.

    >>> from symuat.expansion import INPUT
    >>> decoder_residual_term(1, INPUT)
    W'_{1,1}*x'_{0} + W'_{1,3}*sigma(W'_{1,2E}*e' + W'_{1,2}*x'_{0} + b'_{1,2}) + W'_{1,E}*e' + b'_{1,3}
    """
    s = layer_symbols(i)
    WE, W2E = _external(i)
    return s.W1 * x + WE * ENCODER + s.b3 + s.W3 * sigma(s.W2 * x + W2E * ENCODER + s.b2)


#: The box whose derived rules the rule cases compare with the statement (the induction's rule layer).
_RULE_BOX = 3


def _stated_rules() -> dict[str, sympy.Expr]:
    r"""How :math:`e'` enters the table, as the entry states it, at box 3: :math:`\tilde c_3` and
    :math:`\tilde\beta_3` (written here, not derived)."""
    r = _RULE_BOX
    s, (WE, W2E) = layer_symbols(r), _external(r)
    c_prev, R_prev = nc_symbol(c_name(r - 1)), nc_symbol(R_name(r - 1))
    return {"c-rule": s.W1 * c_prev + s.b3 + WE * ENCODER,
            "beta-rule": s.W2 * (c_prev + R_prev) + s.b2 + W2E * ENCODER}


#: The cases of the decoder's proof: the every-depth proof's, then box 3's derived rules against the stated ones.
_DECODER_CASES = (*PROOF_CASES, "c-rule", "beta-rule")


@functools.cache
def _decoder_sides() -> dict[str, tuple[sympy.Expr, sympy.Expr]]:
    proof = extended_induction(decoder_residual_term, rule_layer=_RULE_BOX)
    if proof.problems:
        raise InvalidValueError(f"decoder rules of the wrong shape: {proof.problems}")  # named by the audit
    table = derive_table(_RULE_BOX, decoder_residual_term).table
    derived = {"c-rule": table.definition(c_name(_RULE_BOX)), "beta-rule": table.definition(beta_name(_RULE_BOX))}
    stated = _stated_rules()
    sides = {case: (canonical_expand(lhs), canonical_expand(rhs)) for case, (lhs, rhs) in proof.sides.items()}
    sides.update((case, (canonical_expand(derived[case]), canonical_expand(stated[case]))) for case in stated)
    if tuple(sides) != _DECODER_CASES:
        raise InvalidValueError(f"the decoder's proof has the cases {tuple(sides)}, not {_DECODER_CASES}")
    return sides


def static_beta_rhs(case):
    r"""The wrong reading: :math:`e'` dropped from the :math:`\sigma` arguments (:math:`\tilde\beta` of the network
    without the second input, every :math:`\mathbf W'_{\cdot,2E}e'` gone), :math:`\tilde c` keeping its
    :math:`e'`-term.  False: the cross-attention feeds the FFN."""
    rhs = _decoder_sides()[case][1]
    return rhs.xreplace({W2E: sympy.S.Zero for W2E in rhs.free_symbols if W2E.name.endswith(",2E}")})


@functools.cache
def decoder_induction_identity() -> OpaqueIdentity:
    r"""The every-depth proof of the decoder stack's table with the second input :math:`e'` (base, step, Lemma 1)
    and the rules of :math:`\tilde c`, :math:`\tilde\beta` derived against the statement; the proof is built when a
    side is first evaluated, not when the derivations load."""
    return OpaqueIdentity(lambda c: _decoder_sides()[c][0], lambda c: _decoder_sides()[c][1], _DECODER_CASES,
                          check_case="step",
                          scope=INDUCTION_SCOPE + r", Lemma 1 (Eq. 19), and box 3's derived $\tilde c_3$,"
                                                  r" $\tilde\beta_3$ against the stated rules; $e'$ an opaque vector,"
                                                  r" the same in every layer.")


_CROSS = (r"\operatorname{vec}_r\big(\mathrm{MHA}(\mathbf X,\mathbf E)\big) = \textstyle\sum_h \mathbf H_h(\mathbf X,"
          r"\mathbf E)\otimes(\mathbf W_{V,h}\mathbf W_{O,h})^T e' + \mathbf 1_N\otimes\big(\sum_h \mathbf W_{O,h}^T"
          r"\mathbf b_{V,h} + \mathbf b_O\big),\ \ e' = \operatorname{vec}_r(\mathbf E)")


_INDUCTION = (r"x'_L = \tilde A_Lx'_0 + \tilde c_L(e') + \textstyle\sum_{j\le L}\tilde U^{(L)}_j\sigma(\tilde V_jx'_0"
              r" + \tilde\beta_j(e'))\ \text{for every } L,\ \tilde c_i = \mathbf W'_{i,1}\tilde c_{i-1} +"
              r" \mathbf b'_{i,3} + \mathbf W'_{i,E}e',\ \tilde\beta_i = \mathbf W'_{i,2}(\tilde c_{i-1} + R_{i-1})"
              r" + \mathbf b'_{i,2} + \mathbf W'_{i,2E}e'")


def entries() -> list[Entry]:
    """The entries, with their Coq theorems (docs/coq.md)."""
    return linked([
        Entry("ext:cross-attention.mv-form", "cross-attention: Eq. 10 on the encoder's output, an external input",
              _CROSS, Status.PROVED, cross_identity(),
              note=r"Queries from the decoder stream $X$, keys and values from the encoder's output $E$: Eq. 10's"
                   r" closed form acts on $e' = \operatorname{vec}_r(E)$, an input from outside the residual stream,"
                   r" and $H_h$ ($N\times N_e$) depends on both. The bias is static with the decoder's $N$ rows."
                   r" In a decoder block's Eq. 20 box this adds a term $W'_E(x', e')e'$ next to $W'_1x'$; the"
                   r" induction over decoder layers carries $e'$ as a second input"
                   r" (\texttt{ext:cross-attention.induction}). symuat evaluates T5's"
                   r" decoders this way: the term joins $b'_3$ of the decoder block's box, dynamic."),
        Entry("ext:cross-attention.induction", "cross-attention, every depth", _INDUCTION, Status.PROVED,
              decoder_induction_identity(),
              note=r"A stack of decoder blocks, each reading the same encoder output $E$, is the Eq. 20 network"
                   r" with $b'_{i,3} + W'_{i,E}e'$ and $b'_{i,2} + W'_{i,2E}e'$ as its biases. $\tilde A_L$,"
                   r" $\tilde U^{(L)}_j$, $\tilde V_j$ do not involve $e'$; $\tilde c_L(e') = \tilde c_L(0) +"
                   r" \tilde E_Le'$ with $\tilde E_0 = 0$, $\tilde E_i = W'_{i,1}\tilde E_{i-1} + W'_{i,E}$ (linear in"
                   r" $e'$); $e'$ enters $\tilde\beta_j$ through its rule, through $\tilde c_{j-1}$ and through"
                   r" $R_{j-1}$. The dynamic parameters ($H_h$, $H_{c,h}$, the norms) depend on $e'$ too; as"
                   r" everywhere they are the values at the actual input. Coq proves it for every depth and size"
                   r" (\texttt{Decoder.decoder\_duat}, \texttt{Decoder.c\_tilde\_ext},"
                   r" \texttt{Decoder.beta\_tilde\_ext})."),
    ])
