r"""Beyond the paper: the Granite multipliers (Granite, GraniteMoE, GraniteMoE-shared) as folded parameters of the
pre-LN Eq. 20 box (ids ``ext:granite.*``).

Granite multiplies each sublayer's output by the residual multiplier :math:`r` before the residual sum:
:math:`h = x + r\,\mathrm{MHA}(N_1x)`, :math:`y = h + r\,\mathrm{FFN}(N_2h)`.  Since :math:`r(Au + a) = (rA)u + ra`
and :math:`r(F_2\sigma(\cdot) + f_2) = (rF_2)\sigma(\cdot) + rf_2`, the block is the pre-LN box with
:math:`W_O, b_O \mapsto rW_O, rb_O` and :math:`W_d, b_d \mapsto rW_d, rb_d` folded in, so the substitution table and
its induction are the pre-LN ones.  The other multipliers sit elsewhere: the embedding multiplier :math:`\gamma` is
the input transform :math:`W'_{0,1} = \gamma I` (``ext:input-transform.table``), the attention multiplier
:math:`\alpha` replaces :math:`1/\sqrt d` in the scores (inside :math:`H_h` only), the logits scaling :math:`1/c`
joins the LM head (an affine map after the stack).

Written in opaque noncommutative symbols (:mod:`symuat.expansion.blocks`) with :math:`W'_{i,r} = r_iI` an opaque
left factor (the identities hold for any matrix :math:`R_i` on the left); evidence as in
:mod:`symuat_paper.ext_duat_blocks` (the gate encoded by σ at the exact and float levels, NumPy references here).
"""

from __future__ import annotations

import functools

import numpy as np

from symuat import Entry, OpaqueIdentity, Status
from symuat.expansion import INPUT, block_symbols, derive_table, gate, nc_symbol, sigma
from symuat.names import logistic as sig

from ._coq_links import linked
from .ext_duat_blocks import enc, induction_claim, np_gate

__all__ = ["entries", "granite_term", "granite_claims", "unfolded_bias_rhs", "np_granite"]

X = nc_symbol("x'_{i-1}")
_CASES = (False, True)


def _multiplier(i):
    return nc_symbol(f"W'_{{{i},r}}")


@functools.cache
def granite_term(gated: bool):
    r"""The Granite block ``(i, x) -> expr``: :math:`h = x + R_i(A(L_1x + \beta_1) + a)`,
    :math:`y = h + R_i\,\mathrm{FFN}(L_2h + \beta_2)`."""
    def layer(i, x):
        s = block_symbols(i)
        (A, a), (L1, b1), (L2, b2) = s["HVO"], s["N1"], s["N2"]
        (Fi, fi), (Fu, fu), (Fo, fo) = s["in"], s["up"], s["out"]
        R = _multiplier(i)
        h = x + R * (A * (L1 * x + b1) + a)
        u = L2 * h + b2
        inner = gate(Fi * u + fi, Fu * u + fu) if gated else sigma(Fi * u + fi)
        return h + R * (Fo * inner + fo)
    return layer


def granite_claims(fold_b_O: bool = True):
    r"""The pre-LN Eq. 20 parameters with :math:`A, a, F_2, f_2` replaced by :math:`RA, Ra, RF_2, Rf_2` (written by
    hand): ``W1``, ``b3``, ``W3`` and the FFN input map ``X x + Y``.  ``fold_b_O=False``: :math:`a` left unscaled
    (the mutant :func:`unfolded_bias_rhs`)."""
    s = block_symbols("i")
    (A, a), (L1, b1), (L2, b2), (Fo, fo) = s["HVO"], s["N1"], s["N2"], s["out"]
    R = _multiplier("i")
    P, p = 1 + R * A * L1, R * A * b1 + (R * a if fold_b_O else a)
    return {"W1": P, "b3": p + R * fo, "W3": R * Fo, "X": L2 * P, "Y": L2 * p + b2}


def _claimed(gated: bool, fold_b_O: bool = True):
    c, s = granite_claims(fold_b_O), block_symbols("i")
    (Fi, fi), (Fu, fu) = s["in"], s["up"]
    u = Fi * c["X"] * X + Fi * c["Y"] + fi
    inner = gate(u, Fu * c["X"] * X + Fu * c["Y"] + fu) if gated else sigma(u)
    return c["W1"] * X + c["b3"] + c["W3"] * inner


def unfolded_bias_rhs(gated: bool):
    r"""The box with the multiplier folded into the projection weights only, the attention's output bias left
    unscaled: :math:`a` where the entry has :math:`Ra` (in :math:`\mathbf b'_{i,3}` and the FFN's input), the Coq
    mutant ``coq/mutants/ext/Mutant_granite_bias.v``.  False unless :math:`R = I` or :math:`a = 0`."""
    return enc(_claimed(gated, fold_b_O=False))


def np_granite(a, gated: bool, i, x: np.ndarray) -> np.ndarray:
    """One Granite block in plain NumPy (names as in :func:`symuat.expansion.block_symbols`, plus ``W'_{i,r}``)."""
    def m(p):
        return a[f"W'_{{{i},{p}}}"]

    def v(p):
        return a[f"b'_{{{i},{p}}}"]

    R = a[f"W'_{{{i},r}}"]
    h = x + R @ (m("HVO") @ (m("N1") @ x + v("N1")) + v("HVO"))
    u = m("N2") @ h + v("N2")
    g = m("in") @ u + v("in")
    inner = np_gate(a, g, m("up") @ u + v("up")) if gated else sig(g)
    return h + R @ (m("out") @ inner + v("out"))


def _eq20_identity() -> OpaqueIdentity:
    return OpaqueIdentity(lambda g: enc(granite_term(g)("i", X)), lambda g: enc(_claimed(g)), _CASES,
                          reference=lambda a, g: np_granite(a, g, "i", a["x'_{i-1}"]),
                          scope="The block in opaque symbols against the hand-written (gated) pre-LN Eq. 20 parameters"
                                " with the multiplier folded in.")


def _table_identity() -> OpaqueIdentity:
    def nested(gated, depth):
        x = INPUT
        for i in range(1, depth + 1):
            x = granite_term(gated)(i, x)
        return x

    def rhs(case):
        t = derive_table(case[1], granite_term(case[0])).table
        return enc(t.unfold(t.form()))

    def ref(a, case):
        x = a["x'_{0}"]
        for i in range(1, case[1] + 1):
            x = np_granite(a, case[0], i, x)
        return x

    return OpaqueIdentity(lambda c: enc(nested(*c)), rhs, ((False, 1), (False, 2), (True, 1), (True, 2)),
                          reference=ref, check_case=(False, 2),
                          scope=r"The derived table's unfolded form against the nested network, plain and gated,"
                                r" depths 1--2.")


def _induction_identity() -> OpaqueIdentity:
    return induction_claim("granite", granite_term)


_EQ20 = (r"x + r\,\mathrm{MHA}(N_1x) \to h,\ h + r\,\mathrm{FFN}(N_2h):\ \mathbf W'_{i,1} = I + rAL_1,\ "
         r"\mathbf b'_{i,3} = r(A\beta'_1 + a) + rf_2,\ \mathbf W'_{i,2} = F_1L_2\mathbf W'_{i,1},\ "
         r"\mathbf W'_{i,3} = rF_2")
_EVERY = (r"x'_L = \tilde A_Lx'_0 + \tilde c_L + \textstyle\sum_{j\le L}\tilde U^{(L)}_j\sigma(\tilde V_jx'_0 +"
          r" \tilde\beta_j)\ \text{for every } L \text{ (Granite blocks)}")


def entries() -> list[Entry]:
    """The three entries, the box with its Coq theorem (docs/coq.md)."""
    P = Status.PROVED
    return linked([
        Entry("ext:granite.eq20", "Granite multipliers folded into the pre-LN box", _EQ20, P, _eq20_identity(),
              note=r"The residual multiplier $r$ scales each sublayer's output: folded into $W_O, b_O$ (so $A \to"
                   r" rA$, $a \to ra$) and $W_d, b_d$ ($F_2 \to rF_2$, $f_2 \to rf_2$), the block is the pre-LN box of"
                   r" \texttt{ext:block-layouts.eq20}; gated: $\mathbf W'_{i,4} = F_uL_2\mathbf W'_{i,1}$. The"
                   r" embedding multiplier is the input transform $W'_{0,1} = \gamma I$"
                   r" (\texttt{ext:input-transform.table}); the attention multiplier replaces $1/\sqrt d$ inside"
                   r" $H_h$; the logits scaling $1/c$ joins the LM head after the stack."),
        Entry("ext:granite.table", "Granite blocks, substitution table", _EVERY.replace(
              r"\ \text{for every } L \text{ (Granite blocks)}", r"\ (L \le 2)"), P, _table_identity(),
              note="Derived mechanically from the block in opaque symbols: the pre-LN rules with the folded"
                   " parameters."),
        Entry("ext:granite.induction", "Granite blocks, every depth", _EVERY, P, _induction_identity()),
    ])
