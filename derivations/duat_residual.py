r"""Seed 001 (DUAT) App. B.1–B.2: Lemma 1 (Eq. 19), the residual term (Eq. 20) and its DUAT expansion (Eq. 21–27).

Transcribed *as printed* from ``001_280f2464439a611b.txt`` (App. B.1, B.2).
Checking semantics (see :mod:`derivations._duat_common`):

* a printed **derivation step** :math:`E_{k-1} = E_k` (Eq. 22, 26, 27) is an
  algebraic identity between consecutive printed expressions, every printed
  symbol an opaque noncommutative symbol exactly as printed; a step that
  substitutes an earlier statement (Eq. 21 for :math:`\mathbf x'_1`, the
  induction hypothesis for :math:`\mathbf x'_i`) has it substituted into
  :math:`E_{k-1}` first (said in the entry's note).  The float level compares
  :math:`E_k` with a hand-written NumPy evaluation of :math:`E_{k-1}`;
* a printed **substitution rule** ("In Eq. 22, let …", "Setting …", "Let
  :math:`UAT^R_{i+1}` …") is checked *semantically*: the row(s) it defines
  replace the mechanically derived rows of the substitution table, and the
  unfolded DUAT form is compared with the nested Eq. 20 network at depths
  1, 2, 3 (the first failing depth is the smallest counterexample).  When a
  right-hand side symbol may mean the original layer parameter or the already
  transformed (cumulative) value, the entry is a :class:`~symuat.Readings`
  (``transformed`` = the Figure 2 caption reading, ``original``);
* printed **forms** (Eq. 21, 23–25 and the :math:`UAT^R` definitions) are
  read with the printed symbols standing for the transformed values defined
  by the adjacent rules, and compared with the nested network;
* :math:`UAT^R_i` is an opaque vector symbol named :math:`R_i` (docs/conventions.md).

Ids: ``duat:eq<N>.step<K>`` is the K-th "=" of the chain of Eq. N;
``duat:eq<N>.rule<K>`` the K-th rule of the sentence following Eq. N
("In Eq. 22, let …", "Setting …"); ``duat:eq<N>.claim<K>`` a conclusion stated
in the text after Eq. N; ``duat:defUATR.part<K>`` the K-th printed definition of
:math:`UAT^R`.
"""

from __future__ import annotations

import functools

import sympy

from symuat import Correction, Entry, Evidence, Level, OpaqueIdentity, Prose, Readings, Status
from symuat.expansion import A_name, R_name, U_name, V_name, beta_name, c_name, residual_term
from symuat.numeric.residual_params import DYNAMIC

from ._coq_links import linked
from ._duat_common import (
    INPUT,
    READ_O,
    READ_T,
    R_sym,
    S,
    W,
    b,
    dependency_proxy,
    printed,
    semantic,
    sig,
    sigma,
    step,
    table,
)

__all__ = ["entries", "EQ22_LET", "HYP", "claim26", "eq21_rhs", "eq23_rhs", "lemma1", "proxy_eq25", "rule_A",
           "rule_V", "rule_beta", "rule_c"]

x0 = INPUT


# ---------------------------------------------------------------- Lemma 1 (Eq. 19)

@functools.cache
def lemma1() -> OpaqueIdentity:
    beta = S(r"\boldsymbol{\beta}")
    alpha = [S(rf"\alpha_{{{j}}}") for j in range(4)]
    WT = [S(rf"W_{{{j}}}^{{T}}") for j in range(4)]
    bj = [S(rf"b_{{{j}}}") for j in range(4)]
    x = S(r"\mathbf{x}")

    def term(j):
        return sigma(WT[j] * x + bj[j])

    def ref(a, n):
        xs = a[r"\mathbf{x}"]
        tot = sum(a[rf"\alpha_{{{j}}}"] @ sig(a[rf"W_{{{j}}}^{{T}}"] @ xs + a[rf"b_{{{j}}}"]) for j in range(1, n + 1))
        return a[r"\boldsymbol{\beta}"] @ tot

    return OpaqueIdentity(lhs=lambda n: beta * sympy.Add(*(alpha[j] * term(j) for j in range(1, n + 1))),
                          rhs=lambda n: sympy.Add(*(beta * alpha[j] * term(j) for j in range(1, n + 1))),
                          cases=(1, 2, 3), reference=ref,
                          scope="beta, $alpha_j$, $W_j^T$ opaque matrices (any size); cases are the number N of "
                                "terms.")


# ---------------------------------------------------------------- Eq. 20, 21

def _eq20() -> OpaqueIdentity:
    xp = S("x'_{i-1}")
    printed_ = (W("i", 1) * xp + b("i", 3)) + W("i", 3) * sigma(W("i", 2) * xp + b("i", 2))

    def ref(a):
        return (a["W'_{i,1}"] @ a["x'_{i-1}"] + a["b'_{i,3}"]
                + a["W'_{i,3}"] @ sig(a["W'_{i,2}"] @ a["x'_{i-1}"] + a["b'_{i,2}"]))

    return step(printed_, residual_term("i", xp), ref,
                scope=r"Eq. 20 as printed vs symuat.expansion.\texttt{residual\_term} (the definition every other "
                      "check uses).")


def eq21_rhs() -> sympy.Expr:
    return (W(1, 1) * x0 + b(1, 3)) + W(1, 3) * sigma(W(1, 2) * x0 + b(1, 2))


# ---------------------------------------------------------------- Eq. 22 (legible lines)

x1 = S("x'_{1}")


def _eq22_lines() -> list[sympy.Expr]:
    inner = (W(1, 1) * x0 + b(1, 3)) + W(1, 3) * sigma(W(1, 2) * x0 + b(1, 2))
    s1 = sigma(W(1, 2) * x0 + b(1, 2))
    l1 = W(2, 1) * x1 + W(2, 3) * sigma(W(2, 2) * x1 + b(2, 2)) + b(2, 3)
    l2 = (W(2, 1) * x1 + b(2, 3)) + W(2, 3) * sigma(W(2, 2) * x1 + b(2, 2))
    l3 = (W(2, 1) * inner + b(2, 3)) + W(2, 3) * sigma(W(2, 2) * inner + b(2, 2))
    l4 = (W(2, 1) * (W(1, 1) * x0 + b(1, 3)) + b(2, 3) + W(2, 1) * W(1, 3) * s1) \
        + W(2, 3) * sigma(W(2, 2) * (W(1, 1) * x0 + b(1, 3)) + b(2, 2) + W(2, 2) * W(1, 3) * s1)
    l5 = ((W(2, 1) * W(1, 1) * x0 + W(2, 1) * b(1, 3) + b(2, 3)) + W(2, 1) * W(1, 3) * s1) \
        + W(2, 3) * sigma(W(2, 2) * W(1, 1) * x0 + (W(2, 2) * b(1, 3) + b(2, 2)) + W(2, 2) * W(1, 3) * s1)
    return [residual_term(2, x1), l1, l2, l3, l4, l5]


def _np_x1(a):
    return (a["W'_{1,1}"] @ a["x'_{0}"] + a["b'_{1,3}"]
            + a["W'_{1,3}"] @ sig(a["W'_{1,2}"] @ a["x'_{0}"] + a["b'_{1,2}"]))


def _np_layer2(a, x):
    return a["W'_{2,1}"] @ x + a["b'_{2,3}"] + a["W'_{2,3}"] @ sig(a["W'_{2,2}"] @ x + a["b'_{2,2}"])


_EQ22_TEX = [
    r"\mathbf{x}_{2}'",
    r"\mathbf{W}_{2,1}'\mathbf{x}_{1}' + \mathbf{W}_{2,3}'\sigma(\mathbf{W}_{2,2}'\mathbf{x}_{1}' + \mathbf{b}_{2,2}') "
    r"+ \mathbf{b}_{2,3}'",
    r"(\mathbf{W}_{2,1}'\mathbf{x}_{1}' + \mathbf{b}_{2,3}') + "
    r"\mathbf{W}_{2,3}'\sigma(\mathbf{W}_{2,2}'\mathbf{x}_{1}' + \mathbf{b}_{2,2}')",
    r"\{\mathbf{W}_{2,1}'[(\mathbf{W}_{1,1}'\mathbf{x}_{0}' + \mathbf{b}_{1,3}') + "
    r"\mathbf{W}_{1,3}'\sigma(\mathbf{W}_{1,2}'\mathbf{x}_{0}' + \mathbf{b}_{1,2}')] + \mathbf{b}_{2,3}'\} + "
    r"\mathbf{W}_{2,3}'\sigma\{\mathbf{W}_{2,2}'[(\mathbf{W}_{1,1}'\mathbf{x}_{0}' + \mathbf{b}_{1,3}') + "
    r"\mathbf{W}_{1,3}'\sigma(\mathbf{W}_{1,2}'\mathbf{x}_{0}' + \mathbf{b}_{1,2}')] + \mathbf{b}_{2,2}'\}",
    r"\{\mathbf{W}_{2,1}'(\mathbf{W}_{1,1}'\mathbf{x}_{0}' + \mathbf{b}_{1,3}') + \mathbf{b}_{2,3}' + "
    r"\mathbf{W}_{2,1}'\mathbf{W}_{1,3}'\sigma(\mathbf{W}_{1,2}'\mathbf{x}_{0}' + \mathbf{b}_{1,2}')\} + "
    r"\mathbf{W}_{2,3}'\sigma\{\mathbf{W}_{2,2}'(\mathbf{W}_{1,1}'\mathbf{x}_{0}' + \mathbf{b}_{1,3}') + "
    r"\mathbf{b}_{2,2}' + \mathbf{W}_{2,2}'\mathbf{W}_{1,3}'\sigma(\mathbf{W}_{1,2}'\mathbf{x}_{0}' + "
    r"\mathbf{b}_{1,2}')\}",
    r"\{(\mathbf{\underline{W}}_{2,1}'\mathbf{W}_{1,1}'\mathbf{x}_{0}' + "
    r"\mathbf{\underline{W}}_{2,1}'\mathbf{b}_{1,3}' + \mathbf{b}_{2,3}') + "
    r"\mathbf{\underline{W}}_{2,1}'\mathbf{W}_{1,3}'\sigma(\mathbf{W}_{1,2}'\mathbf{x}_{0}' + \mathbf{b}_{1,2}')\} + "
    r"\mathbf{W}_{2,3}'\sigma\{\mathbf{\underline{W}}_{2,2}'\mathbf{W}_{1,1}'\mathbf{x}_{0}' + "
    r"(\mathbf{\underline{W}}_{2,2}'\mathbf{b}_{1,3}' + \mathbf{b}_{2,2}') + "
    r"\mathbf{\underline{W}}_{2,2}'\mathbf{W}_{1,3}'\sigma(\mathbf{\underline{W}}_{1,2}'\mathbf{x}_{0}' + "
    r"\mathbf{b}_{1,2}')\}",
]


def _eq22_steps() -> list[Entry]:
    lines = _eq22_lines()
    eq21 = eq21_rhs()
    refs = [
        lambda a: _np_layer2(a, a["x'_{1}"]),
        lambda a: (a["W'_{2,1}"] @ a["x'_{1}"] + a["W'_{2,3}"] @ sig(a["W'_{2,2}"] @ a["x'_{1}"] + a["b'_{2,2}"])
                   + a["b'_{2,3}"]),
        lambda a: _np_layer2(a, _np_x1(a)),
        lambda a: _np_layer2(a, _np_x1(a)),
        lambda a: _np_layer2(a, _np_x1(a)),
    ]
    out = []
    for k in range(1, 6):
        lhs, rhs = lines[k - 1], lines[k]
        note = ("The DUAT version, App. B.2, Eq. 22 (the legible first lines of the chain).")
        if k == 1:
            note += (r" Step 1 is Eq. 20 at $i = 2$ (lhs: symuat's \texttt{residual\_term}(2, $x'_1$)).")
        if k == 3:
            lhs = lhs.xreplace({x1: eq21})
            note += (" Step 3 substitutes Eq. 21 for $x'_1$ (done on the left-hand side before comparing).")
        if k == 5:
            note += (" The underlines of the printed line (marking the factors merged in Eq. 23) are ignored. After "
                     "this line the DUAT-version extraction degenerates (the second half of the line is repeated "
                     r"with more underlines, then a run of $W'_{2,2}W'_{1,3}\dots$); the regrouping that leads to Eq. "
                     "23 is not legible, and the UAT conference version App. C Eq. (5) is missing from the OCR: not "
                     "transcribed.")
        out.append(Entry(f"duat:eq22.step{k}", f"App. B.2, Eq. 22, step {k}",
                         f"{_EQ22_TEX[k - 1]} = {_EQ22_TEX[k]}", Status.PROVED,
                         step(lhs, rhs, refs[k - 1]), note=note))
    return out


# ---------------------------------------------------------------- Eq. 22 rules, Eq. 23–25

_EQ22_RULES = [  # (printed, table row, printed rhs)
    (r"\mathbf{W}_{2,1}' = \mathbf{W}_{2,1}'\mathbf{W}_{1,1}'", A_name(2), W(2, 1) * W(1, 1)),
    (r"\mathbf{b}_{2,1}' = \mathbf{W}_{2,1}'\mathbf{b}_{1,3}' + \mathbf{b}_{2,3}'", c_name(2),
     W(2, 1) * b(1, 3) + b(2, 3)),
    (r"\mathbf{W}_{1,3}' = \mathbf{W}_{2,1}'\mathbf{W}_{1,3}'", U_name(1, 2), W(2, 1) * W(1, 3)),
    (r"\mathbf{W}_{2,2}' = \mathbf{W}_{2,2}'\mathbf{W}_{1,1}'", V_name(2), W(2, 2) * W(1, 1)),
    (r"\mathbf{b}_{2,2}' = (\mathbf{W}_{2,2}'\mathbf{b}_{1,3}' + \mathbf{b}_{2,2}') + "
     r"\mathbf{W}_{2,2}'\mathbf{W}_{1,3}'"
     r"\sigma(\mathbf{W}_{1,2}'\mathbf{x}_{0}' + \mathbf{b}_{1,2}')", beta_name(2),
     (W(2, 2) * b(1, 3) + b(2, 2)) + W(2, 2) * W(1, 3) * sigma(W(1, 2) * x0 + b(1, 2))),
]

#: The Eq. 22 "let" substitutions as a simultaneous replacement of the printed layer-2 symbols.
EQ22_LET = {W(2, 1): W(2, 1) * W(1, 1), S("b'_{2,1}"): W(2, 1) * b(1, 3) + b(2, 3), W(1, 3): W(2, 1) * W(1, 3),
            W(2, 2): W(2, 2) * W(1, 1), b(2, 2): _EQ22_RULES[4][2]}


def _uat2() -> sympy.Expr:
    return sum((W(j, 3) * sigma(W(j, 2) * x0 + b(j, 2)) for j in (1, 2)), sympy.S.Zero)


def eq23_rhs() -> sympy.Expr:
    return (W(2, 1) * x0 + S("b'_{2,1}")) + W(1, 3) * sigma(W(1, 2) * x0 + b(1, 2)) + W(2,
                                                                                        3) * sigma(W(2, 2) * x0 + b(2,
                                                                                                                    2))


def _eq22_rules() -> list[Entry]:
    out = []
    for k, (tex, name, rhs) in enumerate(_EQ22_RULES, start=1):
        out.append(Entry(
            f"duat:eq22.rule{k}", f"App. B.2, text after Eq. 22 ('In Eq. 22, let …'), rule {k}", tex,
            Status.PROVED, semantic(lambda d, name=name, rhs=rhs: {name: rhs}, cases=(2, 3)),
            note=f"Defines the transformed value ${name}$ of box 2; checked semantically at depths 2, 3. The right-hand"
                 " side symbols are layer-1/2 parameters that no earlier box has changed, so the 'original' and"
                 " 'transformed' readings coincide; the five rules are simultaneous (in printed order, rule 2 would"
                 " use the new $W'_{2,1}$ and fail)."))
    return out


def _forms() -> list[Entry]:
    eq23 = semantic(form=lambda d: eq23_rhs().xreplace(EQ22_LET), cases=(2,))
    eq24 = semantic(form=lambda d: (W(1, 1) * x0 + b(1, 3)) + W(1, 3) * sigma(W(1, 2) * x0 + b(1, 2)), cases=(1,))
    eq25 = semantic(form=lambda d: ((W(2, 1) * x0 + S("b'_{2,1}")) + _uat2()).xreplace(EQ22_LET), cases=(2,))
    return [
        Entry("duat:eq21", "App. B.2, Eq. 21",
              r"\mathbf{x}_{1}' = (\mathbf{W}_{1,1}'\mathbf{x}_{0}' + \mathbf{b}_{1,3}') + "
              r"\mathbf{W}_{1,3}'\sigma(\mathbf{W}_{1,2}'\mathbf{x}_{0}' + \mathbf{b}_{1,2}')",
              Status.PROVED, semantic(form=lambda d: eq21_rhs(), cases=(1,)),
              note="Compared with the one-layer nested network (Eq. 20 at $i = 1$)."),
        Entry("duat:eq23", "App. B.2, Eq. 23",
              r"\mathbf{x}_{2}' = (\mathbf{W}_{2,1}'\mathbf{x}_{0}' + \mathbf{b}_{2,1}') + "
              r"\mathbf{W}_{1,3}'\sigma(\mathbf{W}_{1,2}'\mathbf{x}_{0}' + \mathbf{b}_{1,2}') + "
              r"\mathbf{W}_{2,3}'\sigma(\mathbf{W}_{2,2}'\mathbf{x}_{0}' + \mathbf{b}_{2,2}')",
              Status.PROVED, eq23,
              note="The printed symbols $W'_{2,1}$, $b'_{2,1}$, $W'_{1,3}$, $W'_{2,2}$, $b'_{2,2}$ are replaced "
                   "(simultaneously) by the right-hand sides of the five printed 'let' rules after Eq. 22, then "
                   "compared with the two-layer nested network. The printed rules themselves are duat:eq22.rule1-5."),
        Entry("duat:eq24", "App. B.2, Eq. 24 with the UAT_1^R printed before it",
              r"\mathbf{x}_{1}' = (\mathbf{W}_{1,1}'\mathbf{x}_{0}' + \mathbf{b}_{1,3}') + UAT_{1}^{R},\quad "
              r"UAT_1^R = \mathbf{W}_{1,3}'\sigma(\mathbf{W}_{1,2}'\mathbf{x}_0' + \mathbf{b}_{1,2}')",
              Status.PROVED, eq24, note="$UAT_1^R$ (printed in the sentence before Eq. 24) is substituted."),
        Entry("duat:eq25", "App. B.2, Eq. 25 with the UAT_2^R printed before Eq. 24",
              r"\mathbf{x}_{2}' = (\mathbf{W}_{2,1}'\mathbf{x}_{0}' + \mathbf{b}_{2,1}') + UAT_{2}^{R},\quad "
              r"UAT_2^R = \Sigma_{j=1}^2\mathbf{W}_{j,3}'\sigma(\mathbf{W}_{j,2}'\mathbf{x}_0' + \mathbf{b}_{j,2}')",
              Status.PROVED, eq25,
              note="$UAT_2^R$ substituted; the transformed symbols take the values of the Eq. 22 'let' rules."),
    ]


# ---------------------------------------------------------------- UAT_i^R of B.2 (index-shifted)

def _b2_uatr(depth: int) -> sympy.Expr:
    t = table(depth)
    def A(j):
        return t.ref(A_name(j))
    def c(j):
        return t.ref(c_name(j))
    body = A(depth) * x0 + c(depth) + sum((S(V_name(j)) * sigma(A(j) * x0 + c(j)) for j in range(1, depth + 1)),
                                          sympy.S.Zero)
    return t.unfold(body)


def _b3_uatr(depth: int) -> sympy.Expr:
    t = table(depth)
    body = t.ref(A_name(depth)) * x0 + t.ref(c_name(depth)) + sum(
        (S(U_name(j, depth)) * sigma(S(V_name(j)) * x0 + S(beta_name(j))) for j in range(1, depth + 1)), sympy.S.Zero)
    return t.unfold(body)


def _defuatr() -> Entry:
    return Entry(
        "duat:defUATR.part3", "App. B.2, definition before Eq. 26 (induction hypothesis)",
        r"\mathbf{x}_i' = (\mathbf{W}_{i,1}'\mathbf{x}_0' + \mathbf{b}_{i,1}') + UAT_i^R,\quad "
        r"UAT_i^R = \sum_{j=1}^i \mathbf{W}_{j,2}'\sigma(\mathbf{W}_{j,1}'\mathbf{x}_0' + \mathbf{b}_{j,1}')",
        Status.ERRATUM, semantic(form=_b2_uatr),
        correction=Correction(
            r"UAT_i^R = \sum_{j=1}^i \mathbf{W}_{j,3}'\sigma(\mathbf{W}_{j,2}'\mathbf{x}_0' + \mathbf{b}_{j,2}')"
            r"\ \text{(as in B.3 and Eq. 11)}", semantic(form=_b3_uatr)),
        note="The indices inside $UAT_i^R$ are shifted by one against Eq. 11/33 and against the paper's own "
             r"recursion $UAT_{i+1}^R = W'_{i+1,1}UAT_i^R + W'_{i+1,3}\sigma(W'_{i+1,2}x'_0 + b'_{i+1,2})$ after Eq. "
             r"27. Read with one meaning per symbol in the sentence ($W'_{j,1} = \tilde{A}_j$ and $b'_{j,1} = "
             r"\tilde{c}_j$ "
             r"as in the main term and the 'Setting' rules of Eq. 26, $W'_{j,2} = \tilde{V}_j$ as in Eq. 27), it is "
             r"false already at depth 1: $W'_{1,2}\sigma(W'_{1,1}x'_0 + b'_{1,3}) \ne W'_{1,3}\sigma(W'_{1,2}x'_0 + "
             "b'_{1,2})$. Only a relabelling local to this definition would rescue it, and that relabelling "
             "contradicts the recursion after Eq. 27.")


# ---------------------------------------------------------------- Eq. 26, 27 steps

i, ip = "i", "i+1"
xi = S("x'_{i}")
Ri = R_sym("i")
HYP = (W(i, 1) * x0 + b(i, 1)) + Ri  # x'_i = (W'_{i,1} x'_0 + b'_{i,1}) + UAT_i^R


def _np_hyp(a):
    return a["W'_{i,1}"] @ a["x'_{0}"] + a["b'_{i,1}"] + a["R_{i}"]


_EQ26_TEX = [
    r"(\mathbf{W}'_{i+1,1}\mathbf{x}'_{i} + \mathbf{b}'_{i+1,3})",
    r"\{\mathbf{W}'_{i+1,1}[(\mathbf{W}'_{i,1}\mathbf{x}'_{0} + \mathbf{b}'_{i,1}) + UAT_{i}^{R}] + "
    r"\mathbf{b}'_{i+1,3}\}",
    r"\{\mathbf{W}'_{i+1,1}(\mathbf{W}'_{i,1}\mathbf{x}'_{0} + \mathbf{b}'_{i,1}) + \mathbf{W}'_{i+1,1}UAT_{i}^{R} + "
    r"\mathbf{b}'_{i+1,3}\}",
    r"\{[\mathbf{W}'_{i+1,1}\mathbf{W}'_{i,1}\mathbf{x}'_{0} + (\mathbf{W}'_{i+1,1}\mathbf{b}'_{i,1} + "
    r"\mathbf{b}'_{i+1,3})] + \mathbf{W}'_{i+1,1}UAT_{i}^{R}\}",
]
_EQ27_TEX = [
    r"\mathbf{W}'_{i+1,3}\sigma(\mathbf{W}'_{i+1,2}\mathbf{x}'_{i} + \mathbf{b}'_{i+1,2})",
    r"\mathbf{W}'_{i+1,3}\sigma\{\mathbf{W}'_{i+1,2}[(\mathbf{W}'_{i,1}\mathbf{x}'_{0} + \mathbf{b}'_{i,1}) + "
    r"UAT_{i}^{R}] + \mathbf{b}'_{i+1,2}\}",
    r"\mathbf{W}'_{i+1,3}\sigma\{\mathbf{W}'_{i+1,2}(\mathbf{W}'_{i,1}\mathbf{x}'_{0} + \mathbf{b}'_{i,1}) + "
    r"\mathbf{W}'_{i+1,2}UAT_{i}^{R} + \mathbf{b}'_{i+1,2}\}",
    r"\mathbf{W}'_{i+1,3}\sigma\{\mathbf{W}'_{i+1,2}\mathbf{W}'_{i,1}\mathbf{x}'_{0} + "
    r"(\mathbf{W}'_{i+1,2}\mathbf{b}'_{i,1} + \mathbf{b}'_{i+1,2}) + \mathbf{W}'_{i+1,2}UAT_{i}^{R}\}",
]


def _eq26_lines():
    return [W(ip, 1) * xi + b(ip, 3),
            W(ip, 1) * ((W(i, 1) * x0 + b(i, 1)) + Ri) + b(ip, 3),
            W(ip, 1) * (W(i, 1) * x0 + b(i, 1)) + W(ip, 1) * Ri + b(ip, 3),
            (W(ip, 1) * W(i, 1) * x0 + (W(ip, 1) * b(i, 1) + b(ip, 3))) + W(ip, 1) * Ri]


def _eq27_lines():
    return [W(ip, 3) * sigma(W(ip, 2) * xi + b(ip, 2)),
            W(ip, 3) * sigma(W(ip, 2) * ((W(i, 1) * x0 + b(i, 1)) + Ri) + b(ip, 2)),
            W(ip, 3) * sigma(W(ip, 2) * (W(i, 1) * x0 + b(i, 1)) + W(ip, 2) * Ri + b(ip, 2)),
            W(ip, 3) * sigma(W(ip, 2) * W(i, 1) * x0 + (W(ip, 2) * b(i, 1) + b(ip, 2)) + W(ip, 2) * Ri)]


def _chain_steps(eq: int, lines, tex, ref_first, ref_rest) -> list[Entry]:
    out = []
    for k in range(1, len(lines)):
        lhs = lines[k - 1]
        note = f"DUAT version, App. B.2, Eq. {eq}."
        if k == 1:
            lhs = lhs.xreplace({xi: HYP})
            note += (" Step 1 substitutes the induction hypothesis $x'_i = (W'_{i,1}x'_0 + b'_{i,1}) + UAT_i^R "
                     "(UAT_i^R$ an opaque vector) on the left-hand side.")
        out.append(Entry(f"duat:eq{eq}.step{k}", f"App. B.2, Eq. {eq}, step {k}", f"{tex[k - 1]} = {tex[k]}",
                         Status.PROVED, step(lhs, lines[k], ref_first if k == 1 else ref_rest), note=note))
    return out


def _steps_26_27() -> list[Entry]:
    def r26(a):
        return a["W'_{i+1,1}"] @ _np_hyp(a) + a["b'_{i+1,3}"]
    def r27(a):
        return a["W'_{i+1,3}"] @ sig(a["W'_{i+1,2}"] @ _np_hyp(a) + a["b'_{i+1,2}"])
    return _chain_steps(26, _eq26_lines(), _EQ26_TEX, r26, r26) + _chain_steps(27, _eq27_lines(), _EQ27_TEX, r27, r27)


# ---------------------------------------------------------------- Eq. 26, 27 rules (semantic)

def _boxes(depth: int, start: int = 2):
    return range(start, depth + 1)


def rule_A(reading: str) -> OpaqueIdentity:  # W'_{i+1,1} = W'_{i+1,1} W'_{i,1}
    return semantic(lambda d: {A_name(k): W(k, 1) * printed("W1", k - 1, k, reading) for k in _boxes(d)})


@functools.cache
def rule_c() -> OpaqueIdentity:  # b'_{i+1,1} = W'_{i+1,1} b'_{i,1} + b'_{i+1,3}
    return semantic(lambda d: {c_name(k): W(k, 1) * printed("b3", k - 1, k, READ_T) + b(k, 3) for k in _boxes(d)})


def rule_V(reading: str) -> OpaqueIdentity:  # W'_{i+1,2} = W'_{i+1,2} W'_{i,1}
    return semantic(lambda d: {V_name(k): W(k, 2) * printed("W1", k - 1, k, reading) for k in _boxes(d)})


@functools.cache
def rule_beta() -> OpaqueIdentity:  # b'_{i+1,2} = (W'_{i+1,2} b'_{i,1} + b'_{i+1,2}) + W'_{i+1,2} UAT_i^R
    return semantic(lambda d: {beta_name(k): (W(k, 2) * printed("b3", k - 1, k, READ_T) + b(k, 2))
                               + W(k, 2) * S(R_name(k - 1)) for k in _boxes(d)})


def _rule_R(reading: str) -> OpaqueIdentity:
    """UAT_{i+1}^R = W'_{i+1,1} UAT_i^R + W'_{i+1,3} σ(W'_{i+1,2} x'_0 + b'_{i+1,2}) (σ argument transformed)."""
    def ov(d):
        out = {}
        for k in range(1, d + 1):
            first = W(k, 1) if reading == READ_O else S(A_name(k))
            prev = sympy.S.Zero if k == 1 else S(R_name(k - 1))
            out[R_name(k)] = first * prev + W(k, 3) * sigma(S(V_name(k)) * x0 + S(beta_name(k)))
        return out
    return semantic(ov)


@functools.cache
def claim26(reading: str) -> OpaqueIdentity:
    """'(W'_{i+1,1}x'_0 + b'_{i+1,1}) + W'_{i+1,1}UAT_i^R' with the Setting rules substituted."""
    A_new = W(ip, 1) * W(i, 1)
    c_new = W(ip, 1) * b(i, 1) + b(ip, 3)
    second = A_new if reading == READ_T else W(ip, 1)
    rhs = (A_new * x0 + c_new) + second * Ri
    lines = _eq26_lines()
    return step(lines[3], rhs, lambda a: a["W'_{i+1,1}"] @ a["W'_{i,1}"] @ a["x'_{0}"]
                + (a["W'_{i+1,1}"] @ a["b'_{i,1}"] + a["b'_{i+1,3}"]) + a["W'_{i+1,1}"] @ a["R_{i}"])


def _claim27() -> OpaqueIdentity:
    V_new = W(ip, 2) * W(i, 1)
    beta_new = (W(ip, 2) * b(i, 1) + b(ip, 2)) + W(ip, 2) * Ri
    lines = _eq27_lines()
    return step(lines[3], W(ip, 3) * sigma(V_new * x0 + beta_new),
                lambda a: a["W'_{i+1,3}"] @ sig(a["W'_{i+1,2}"] @ a["W'_{i,1}"] @ a["x'_{0}"]
                                                 + a["W'_{i+1,2}"] @ a["b'_{i,1}"] + a["b'_{i+1,2}"]
                                                 + a["W'_{i+1,2}"] @ a["R_{i}"]))


_ORIG_NOTE = ("Under 'original' the right-hand side $W'_{i,1}$ is layer i's own matrix: the product then misses "
              r"$W'_{i-1,1}\cdots W'_{1,1}$, which first matters at depth 3 (at depth 2 $\tilde{A}_1 = W'_{1,1}$).")


def _rules_26_27() -> list[Entry]:
    return [
        Entry("duat:eq26.rule1", "App. B.2, 'Setting …' after Eq. 26, rule 1",
              r"\mathbf{W}'_{i+1,1} = \mathbf{W}'_{i+1,1}\mathbf{W}'_{i,1}", Status.CONVENTION,
              Readings("whether the right-hand side W'_{i,1} is the transformed (cumulative) value or layer i's own"
                       " matrix", {READ_T: rule_A(READ_T), READ_O: rule_A(READ_O)}),
              note=r"Defines $\tilde{A}_{i+1}$; semantic check at depths 1-3. " + _ORIG_NOTE),
        Entry("duat:eq26.rule2", "App. B.2, 'Setting …' after Eq. 26, rule 2",
              r"\mathbf{b}'_{i+1,1} = \mathbf{W}'_{i+1,1}\mathbf{b}'_{i,1} + \mathbf{b}'_{i+1,3}", Status.PROVED,
              rule_c(),
              note="Defines $\\tilde{c}_{i+1}$. $b'_{i,1}$ exists only as a transformed value ($b'_{1,1}$ read as "
                   "$\\tilde{c}_1 = "
                   "b'_{1,3}$, as in Eq. 24); the right-hand side $W'_{i+1,1}$ is the layer's own matrix (the two "
                   "Setting rules are simultaneous — with the new $W'_{i+1,1}$ of rule 1 it would fail)."),
        Entry("duat:eq26.claim1", "App. B.2, text after Eq. 26: 'we can simplify the first part to …'",
              r"(\mathbf{W}'_{i+1,1}\mathbf{x}'_0 + \mathbf{b}'_{i+1,1}) + \mathbf{W}'_{i+1,1}UAT_i^R",
              Status.CONVENTION,
              Readings("whether both occurrences of W'_{i+1,1} are the transformed value set just before, or only the"
                       " first (the second being the layer's own matrix)",
                       {"both-transformed": claim26(READ_T), "second-original": claim26(READ_O)}),
              note="Compared with the last line of Eq. 26 after substituting the two Setting rules. The same printed "
                   "symbol $W'_{i+1,1}$ denotes $W'_{i+1,1}W'_{i,1}$ in the main term but must denote the layer's "
                   "own $W'_{i+1,1}$ in front of $UAT_i^R$."),
        Entry("duat:eq27.rule1", "App. B.2, 'Setting …' after Eq. 27 intro, rule 1",
              r"\mathbf{W}'_{i+1,2} = \mathbf{W}'_{i+1,2}\mathbf{W}'_{i,1}", Status.CONVENTION,
              Readings("whether the right-hand side W'_{i,1} is the transformed (cumulative) value or layer i's own"
                       " matrix", {READ_T: rule_V(READ_T), READ_O: rule_V(READ_O)}),
              note=r"Defines $\tilde{V}_{i+1}$; semantic check at depths 1-3. " + _ORIG_NOTE),
        Entry("duat:eq27.rule2", "App. B.2, 'Setting …' after Eq. 27 intro, rule 2",
              r"\mathbf{b}'_{i+1,2} = (\mathbf{W}'_{i+1,2}\mathbf{b}'_{i,1}+\mathbf{b}'_{i+1,2}) + "
              r"\mathbf{W}'_{i+1,2}UAT_i^R",
              Status.PROVED, rule_beta(),
              note=r"Defines $\tilde{\beta}_{i+1}$; $b'_{i,1} = \tilde{c}_i$ and $UAT_i^R = R_i$ (only transformed "
                   r"meanings exist); "
                   "the right-hand side $W'_{i+1,2}$ is the layer's own matrix (simultaneous with rule 1)."),
        Entry("duat:eq27.claim1", "App. B.2, text after Eq. 27 intro: 'we can rewrite the second part as …'",
              r"\mathbf{W}'_{i+1,3}\sigma(\mathbf{W}'_{i+1,2}\mathbf{x}'_0+\mathbf{b}'_{i+1,2})", Status.PROVED,
              _claim27(), note="Compared with the last line of Eq. 27 after substituting the two Setting rules."),
        Entry("duat:eq27.rule3", "App. B.2, 'Let UAT_{i+1}^R = …' after Eq. 27",
              r"UAT_{i+1}^R = \mathbf{W}'_{i+1,1}UAT_i^R + \mathbf{W}'_{i+1,3}\sigma(\mathbf{W}'_{i+1,2}\mathbf{x}'_0 "
              r"+ \mathbf{b}'_{i+1,2})",
              Status.CONVENTION,
              Readings("whether W'_{i+1,1} here is the value set by 'Setting W'_{i+1,1} = W'_{i+1,1}W'_{i,1}' (like"
                       " W'_{i+1,2}, b'_{i+1,2} in the same formula) or the layer's own matrix",
                       {"all-transformed": _rule_R(READ_T), "W1-original": _rule_R(READ_O)}),
              note=r"Defines $R_{i+1}$ (overriding the table's R rows at every depth); $\sigma's W'_{i+1,2}$, "
                   r"$b'_{i+1,2}$ must be the transformed $\tilde{V}_{i+1}$, $\tilde{\beta}_{i+1}$ (read so in both "
                   r"readings), but $W'_{i+1,1}$ must be the original: with the transformed $\tilde{A}_{i+1}$ it "
                   "fails at depth 2. One formula, two meanings of the primes."),
        Entry("duat:eq27.claim2", "App. B.2, text after Eq. 27: 'we can express x'_{i+1} as …'",
              r"\mathbf{x}'_{i+1} = (\mathbf{W}'_{i+1,1}\mathbf{x}'_0 + \mathbf{b}'_{i+1,1}) + UAT_{i+1}^R",
              Status.PROVED, semantic(),
              note=r"With the transformed values ($W'_{i+1,1} = \tilde{A}$, $b'_{i+1,1} = \tilde{c}$, $UAT^R = R$) "
                   r"this is "
                   "the derived DUAT form; checked against the nested network at depths 1-3 (with the rules of "
                   "duat:eq27.rule3 under its working reading, this is the table itself)."),
    ]


# ---------------------------------------------------------------- prose

def proxy_eq25(seed: int) -> tuple[Evidence, ...]:
    names = {"W'_{2,1} (Ã_2)": A_name(2), "b'_{2,1} (c~_2)": c_name(2), "W'_{1,3} (Ũ_1^(2))": U_name(1, 2),
             "W'_{2,2} (Ṽ_2)": V_name(2), "b'_{2,2} (β~_2)": beta_name(2)}
    cnn = dependency_proxy(2, frozenset(), names)
    vit = dependency_proxy(2, DYNAMIC["paper"], names)
    cnn_ok = cnn["b'_{2,2} (β~_2)"] and not any(v for k, v in cnn.items() if k != "b'_{2,2} (β~_2)")
    vit_dyn = [k for k, v in vit.items() if v]
    return (
        Evidence(Level.SYMBOLIC, cnn_ok,
                 f"static layer weights (residual CNN): input-dependent entries of the depth-2 table: "
                 f"{[k for k, v in cnn.items() if v]} — only b'_{{2,2}} depends on x'_0, as claimed"),
        Evidence(Level.SYMBOLIC, False,
                 f"paper Transformer block (dynamic {sorted(DYNAMIC['paper'])}): input-dependent entries: {vit_dyn}"
                 " — W'_{2,1} is not 'essentially fixed' for a Transformer"),
    )


def _prose() -> list[Entry]:
    return [
        Entry("duat:eq25.claim1", "App. B.2, text after Eq. 25",
              r"\text{for } UAT_2^R \text{, its parameter } \mathbf{b}'_{2,2} \text{ is influenced by the input, while "
              r"other weight parameters, such as } \mathbf{W}'_{2,1}\text{, can be disregarded \ldots essentially "
              r"fixed}",
              Status.PROSE,
              Prose("A qualitative statement about which transformed parameters depend on the input; measured by a "
                    "symbolic dependency proxy on the depth-2 table (static weights vs the paper's Transformer "
                    r"block, symuat.numeric.\texttt{residual\_params}.DYNAMIC).", proxy_eq25),
              note="True for a residual network with static weights; false for the Transformer block the paper "
                   "applies it to in B.3 (MHA makes $W'_{i,1}$, $W'_{i,2}$ dynamic)."),
    ]


def _entries() -> list[Entry]:
    return [
        Entry("duat:eq19", "App. B.1, Lemma 1, Eq. 19",
              r"G(\mathbf{x}) = \beta \sum_{j=1}^{N} \alpha_{j} \sigma(\mathbf{W}_{j}^{\mathrm{T}} \mathbf{x} + "
              r"\mathbf{b}_{j})"
              r" = \sum_{j=1}^{N} \beta \alpha_{j} \sigma(\mathbf{W}_{j}^{\mathrm{T}} \mathbf{x} + \mathbf{b}_{j})",
              Status.PROVED, lemma1(),
              note=r"$\beta$ and $\alpha_j$ opaque matrices (the lemma says 'a matrix (constant)'); cases $N = 1$, 2, "
                   "3 terms. Left distributivity of a matrix over a sum, so it holds for every N."),
        Entry("duat:eq20", "App. B.2, Eq. 20",
              r"\mathbf{x}_{i}' = (\mathbf{W}_{i1}' \mathbf{x}_{i-1}' + \mathbf{b}_{i3}') + \mathbf{W}_{i3}' \sigma "
              r"(\mathbf{W}_{i2}' \mathbf{x}_{i-1}' + \mathbf{b}_{i2}')",
              Status.PROVED, _eq20(),
              note="The definition of the residual term; printed indices $W'_{i1}$ (no comma) read as $W'_{i,1}$."),
        *_eq22_steps(), *_eq22_rules(), *_forms(), _defuatr(), *_steps_26_27(), *_rules_26_27(), *_prose(),
    ]


def entries() -> list[Entry]:
    """The entries of this derivation, each with its Coq theorem where one states it (docs/coq.md)."""
    return linked(_entries())
