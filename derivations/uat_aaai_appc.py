r"""Seed 000 (UAT, AAAI layout, OCR) App. C: "The UAT Format of Transformer" (C.1 Lemmas 1–2, C.2), where legible.

Transcribed from ``000_2bc2c73c7532a7f2.txt`` lines ~766–960.  App. C restarts
the equation numbering: ``uat-aaai:appC.eq<N>`` is App. C's Eq. (N).  The OCR
is garbled; each entry's note says what was read and how it differs from the
DUAT version (seed 001 App. B, :mod:`derivations.duat_residual`,
:mod:`derivations.duat_transformer`), whose checking semantics are reused
(steps: algebra of consecutive printed expressions; rules: semantic, via the
derived substitution table and the nested Eq. 20 network at depths 1–3).

Not legible, hence not transcribed: the displays of App. C Eq. (5) (the
two-layer chain, seed 001 Eq. 22), Eq. (7) and (8) (seed 001 Eq. 26, 27),
Eq. (9) (seed 001 Eq. 30), the σ-part of the last line of Eq. (11), and
Figure 3 (the examples, seed 001 Figure 2 — an image).
"""

from __future__ import annotations

import sympy

from symuat import Correction, Entry, Evidence, Level, OpaqueIdentity, Prose, Readings, Status
from symuat.expansion import A_name, R_name, U_name, V_name, beta_name, c_name, residual_term
from symuat.numeric.residual_params import DYNAMIC

from . import duat_residual as res
from . import duat_transformer as tr
from ._coq_links import linked
from ._duat_common import (
    INPUT,
    READ_O,
    READ_T,
    S,
    W,
    Wu,
    b,
    bu,
    dependency_proxy,
    printed,
    readings,
    semantic,
    sig,
    sigma,
    step,
    table,
)

__all__ = ["entries", "OCR"]

x0 = INPUT
i, ip = "i", "i+1"


OCR = ("OCR of the UAT conference version; ")


# ---------------------------------------------------------------- C.1

_EQ5_RULES = [  # (tex as read, row, rhs, note)
    (r"\mathbf{W}'_{2,1} = \mathbf{W}'_{2,1}\mathbf{W}'_{1,1}", A_name(2), W(2, 1) * W(1, 1), "as the DUAT version "
                                                                                              "Eq. 22."),
    (r"\mathbf{b}'_{2,1} = \mathbf{W}'_{2,1}\mathbf{b}'_{1,3} + \mathbf{b}'_{2,3}", c_name(2),
     W(2, 1) * b(1, 3) + b(2, 3),
     "the left-hand side's indices are illegible (\\texttt{b\\} 5}); read $b'_{2,1}$ as in Eq. (6) and the DUAT "
     "version."),
    (r"\mathbf{W}'_{1,3} = \mathbf{W}'_{2,1}\mathbf{W}'_{1,3}", U_name(1, 2), W(2, 1) * W(1, 3), "as the DUAT "
                                                                                                 "version Eq. 22."),
    (r"\mathbf{W}'_{2,3} = \mathbf{W}'_{2,2}\mathbf{W}'_{1,1}", U_name(2, 2), W(2, 2) * W(1, 1), ""),
    (r"\mathbf{b}'_{2,2} = (\mathbf{W}'_{2,2}\mathbf{b}'_{1,3} + \mathbf{b}'_{2,2}) + "
     r"\mathbf{W}'_{2,2}\mathbf{W}'_{1,3}"
     r"\sigma(\mathbf{W}'_{1,2}\mathbf{x}'_0 + \mathbf{b}'_{1,2})", beta_name(2),
     (W(2, 2) * b(1, 3) + b(2, 2)) + W(2, 2) * W(1, 3) * sigma(W(1, 2) * x0 + b(1, 2)), "as the DUAT version Eq. 22."),
]


def _c1_entries() -> list[Entry]:
    out = [
        Entry("uat-aaai:appC.eq3", "App. C.1, Lemma 1, Eq. (3)",
              r"G(\mathbf{x}) = \beta\sum_{j=1}^{N}\alpha_j\sigma(\mathbf{W}_j^{T}\mathbf{x} + \theta_j) = "
              r"\sum_{j=1}^{N}\beta\alpha_j\sigma(\mathbf{W}_j^{T}\mathbf{x} + \theta_j)", Status.PROVED, res.lemma1(),
              note=OCR + r"bias read $\theta_j$ (the DUAT version Eq. 19 has $b_j$); otherwise identical to "
                         "duat:eq19."),
        Entry("uat-aaai:appC.lemma2", "App. C.1, Lemma 2 (general term)",
              r"\mathbf{x}'_{i+1} = (\mathbf{W}'_{i+1,1}\mathbf{x}'_i + \mathbf{b}'_{i+1,3}) + \mathbf{W}'_{i+1,3}"
              r"\sigma(\mathbf{W}'_{i+1,2}\mathbf{x}'_i + \mathbf{b}'_{i+1,2}),\ i = 0,1,2,\ldots", Status.PROVED,
              step((W(ip, 1) * S("x'_{i}") + b(ip, 3)) + W(ip, 3) * sigma(W(ip, 2) * S("x'_{i}") + b(ip, 2)),
                   residual_term(ip, S("x'_{i}")),
                   lambda a: a["W'_{i+1,1}"] @ a["x'_{i}"] + a["b'_{i+1,3}"]
                   + a["W'_{i+1,3}"] @ sig(a["W'_{i+1,2}"] @ a["x'_{i}"] + a["b'_{i+1,2}"])),
              note=OCR + "the general term of the DUAT version Eq. 20 written for layer i+1 (a definition; compared "
                         r"with symuat's \texttt{residual\_term})."),
        Entry("uat-aaai:appC.eq4", "App. C.1, Eq. (4)",
              r"\mathbf{x}'_1 = (\mathbf{W}'_{1,1}\mathbf{x}'_0 + \mathbf{b}'_{1,3}) + \mathbf{W}'_{1,3}\sigma("
              r"\mathbf{W}'_{1,2}\mathbf{x}'_0 + \mathbf{b}'_{1,2})", Status.PROVED,
              semantic(form=lambda d: res.eq21_rhs(), cases=(1,)), note=OCR + "= the DUAT version Eq. 21."),
    ]
    for k, (tex, name, rhs, diff) in enumerate(_EQ5_RULES, start=1):
        ident = semantic(lambda d, name=name, rhs=rhs: {name: rhs}, cases=(2, 3))
        if k == 4:
            out.append(Entry(
                "uat-aaai:appC.eq5.rule4", "App. C.1, 'In Eq. (5), let …', rule 4", tex, Status.ERRATUM, ident,
                correction=Correction(r"\mathbf{W}'_{2,2} = \mathbf{W}'_{2,2}\mathbf{W}'_{1,1}",
                                      semantic(lambda d: {V_name(2): W(2, 2) * W(1, 1)}, cases=(2, 3))),
                note=OCR + "the left-hand side reads '$W'_{2,3}$' ('Wl2,3'); the DUAT version Eq. 22 prints "
                           r"$W'_{2,2}$. As read, it overwrites the $\sigma-coefficient W'_{2,3}$ and leaves "
                           "$W'_{2,2}$ unmerged: false at depth 2. May be an OCR error rather than a typo of the "
                           "paper."))
            continue
        out.append(Entry(f"uat-aaai:appC.eq5.rule{k}", f"App. C.1, 'In Eq. (5), let …', rule {k}", tex,
                         Status.PROVED, ident,
                         note=OCR + diff + " The display of Eq. (5) itself is missing from the OCR."))
    out += [
        Entry("uat-aaai:appC.eq6", "App. C.1, Eq. (6)",
              r"\mathbf{x}'_2 = (\mathbf{W}'_{2,1}\mathbf{x}'_0 + \mathbf{b}'_{2,1}) + \mathbf{W}'_{1,3}\sigma("
              r"\mathbf{W}'_{1,2}\mathbf{x}'_0 + \mathbf{b}'_{1,2}) + \mathbf{W}'_{2,3}\sigma(\mathbf{W}'_{2,2}"
              r"\mathbf{x}'_0 + \mathbf{b}'_{2,2})", Status.PROVED,
              semantic(form=lambda d: res.eq23_rhs().xreplace(res.EQ22_LET), cases=(2,)),
              note=OCR + "an unbalanced ')' after $W'_{1,2}x'_0$ is dropped. Transformed symbols take the values of "
                         "the 'let' rules with rule 4 corrected ($W'_{2,2} = W'_{2,2}W'_{1,1}$, as the DUAT version "
                         "Eq. 22/23); with rule 4 as read the equation would fail."),
        Entry("uat-aaai:appC.eq6.claim1", "App. C.1, text after Eq. (6)",
              r"\text{Why can we combine the above terms? Once the network training is complete, we know these "
              r"parameters, so they can be directly calculated and thus combined.}", Status.PROSE,
              Prose("A justification, not an equation. Proxy: which merged parameters of the depth-2 table depend on"
                    " the input for static weights vs the paper's Transformer block.", res.proxy_eq25),
              note="True for static weights (residual CNN); for a Transformer $W'_{2,1}W'_{1,1}$ involves the "
                   "attention matrices and cannot be precomputed after training. The DUAT version (after Eq. 25) "
                   r"says instead that such parameters 'can be disregarded $\dots$ essentially fixed'."),
        Entry("uat-aaai:appC.eq7.rule1", "App. C.1, 'Let …' after Eq. (7), rule 1",
              r"\mathbf{W}'_{i+1,1} = \mathbf{W}'_{i+1,1}\mathbf{W}'_{i,1}", Status.CONVENTION,
              Readings("whether the right-hand side W'_{i,1} is the transformed (cumulative) value or layer i's own"
                       " matrix", {READ_T: res.rule_A(READ_T), READ_O: res.rule_A(READ_O)}),
              note=OCR + "= the DUAT version duat:eq26.rule1. The display of Eq. (7) is missing from the OCR."),
        Entry("uat-aaai:appC.eq7.rule2", "App. C.1, 'Let …' after Eq. (7), rule 2",
              r"\mathbf{b}'_{i+1,3} = \mathbf{W}'_{i+1,1}\mathbf{b}'_{i,1} + \mathbf{b}'_{i+1,3}", Status.PROVED,
              res.rule_c(),
              note=OCR + "differs from the DUAT version ($b'_{i+1,1}$ there): the transformed bias is named "
                         "$b'_{i+1,3}$, but the right-hand side still uses $b'_{i,1}$ while the hypothesis just "
                         "above states $x'_i = (W'_{i,1}x'_0 + b'_{i,3}) + UAT_i^R$. Read $b'_{i,1} = \\tilde{c}_i$."),
        Entry("uat-aaai:appC.eq7.claim1", "App. C.1, text after Eq. (7): 'we can simplify the first part to …'",
              r"(\mathbf{W}'_{i+1,1}\mathbf{x}'_0 + \mathbf{b}'_{i+1,3}) + \mathbf{W}'_{i+1,1}UAT_i^R",
              Status.CONVENTION,
              Readings("whether both occurrences of W'_{i+1,1} are the transformed value set just before, or only the"
                       " first", {"both-transformed": res.claim26(READ_T), "second-original": res.claim26(READ_O)}),
              note=OCR + "as duat:eq26.claim1 with the bias named $b'_{i+1,3}$; compared with the (DUAT version) "
                         "last line of the Eq. (7) chain, whose display is missing here."),
        Entry("uat-aaai:appC.eq8.rule1", "App. C.1, 'Let …' after Eq. (8), rule 1",
              r"\mathbf{W}'_{i+1,2} = \mathbf{W}'_{i+1,2}\mathbf{W}'_{i,1}", Status.CONVENTION,
              Readings("whether the right-hand side W'_{i,1} is the transformed (cumulative) value or layer i's own"
                       " matrix", {READ_T: res.rule_V(READ_T), READ_O: res.rule_V(READ_O)}),
              note=OCR + "= duat:eq27.rule1."),
        Entry("uat-aaai:appC.eq8.rule2", "App. C.1, 'Let …' after Eq. (8), rule 2",
              r"\mathbf{b}'_{i+1,2} = (\mathbf{W}'_{i+1,2}\mathbf{b}'_{i,1}+\mathbf{b}'_{i+1,2}) + "
              r"\mathbf{W}'_{i+1,2}UAT_i^R",
              Status.PROVED, res.rule_beta(), note=OCR + "= duat:eq27.rule2."),
    ]
    return out


# ---------------------------------------------------------------- C.2

def _rule6(reading: str) -> OpaqueIdentity:
    """UAT_{i+1}^R = UAT_i^R + W'_{i+1,3}σ(W'_{i+1,2}x_0 + b_{i+1,2}); UAT_i^R updated (×W'_{i+1,1}) or not."""
    def ov(d):
        out = {}
        for k in range(1, d + 1):
            prev = sympy.S.Zero if k == 1 else S(R_name(k - 1))
            first = W(k, 1) * prev if reading == "updated" else prev
            out[R_name(k)] = first + W(k, 3) * sigma(S(V_name(k)) * x0 + S(beta_name(k)))
        return out
    return semantic(ov)


def _rule8(reading: str) -> OpaqueIdentity:
    return semantic(lambda d: {beta_name(j): (W(j, 2) * printed("b3", j - 1, j, reading) + b(j, 2))
                               + W(j, 2) * S(R_name(j - 1)) for j in range(2, d + 1)})


def _dyn_proxy_all(seed: int) -> tuple[Evidence, ...]:
    d = 3
    names = {f"U{j}": U_name(j, d) for j in range(1, d + 1)}
    names.update({f"A{j}": A_name(j) for j in range(1, d + 1)})
    names.update({f"V{j}": V_name(j) for j in range(1, d + 1)})
    dyn = dependency_proxy(d, DYNAMIC["paper"], names)
    static = sorted(k for k, v in dyn.items() if not v)
    return (Evidence(Level.SYMBOLIC, not static,
                     f"paper block, depth {d}: static entries of the DUAT form: {static} (claim: all W'_{{j,1}},"
                     f" W'_{{j,2}}, W'_{{j,3}} dynamic) — the last layer's W'_{{{d},3}} (FFN output matrix)"
                     " is static"),)


_C2_RULES = [
    ("rule1", r"\mathbf{W}'_{i+1,1} = \mathbf{W}'_{i+1,1}\mathbf{W}_{i,1}", Status.CONVENTION,
     lambda: Readings(tr.UNPRIMED, {READ_T: tr.rule_A(READ_T), READ_O: tr.rule_A(READ_O)}), "= duat:eq32.rule1."),
    ("rule2", r"\mathbf{b}'_{i+1,3} = (\mathbf{W}'_{i+1,1}\mathbf{b}_{i,1} + \mathbf{b}'_{i+1,3})", Status.PROVED,
     lambda: tr.rule_c(), "= duat:eq32.rule2."),
    ("rule3", r"UAT_i^R = \mathbf{W}'_{i+1,1}UAT_i^R", Status.PROVED, lambda: tr.rule_U_all(), "= duat:eq32.rule3."),
    ("rule4", r"\mathbf{W}'_{i+1,2} = \mathbf{W}'_{i+1,2}\mathbf{W}_{i,1}", Status.CONVENTION,
     lambda: Readings(tr.UNPRIMED, {READ_T: tr.rule_V(READ_T), READ_O: tr.rule_V(READ_O)}), "= duat:eq32.rule4."),
    ("rule5",
     r"\mathbf{b}'_{i+1,2} = (\mathbf{W}'_{i+1,2}\mathbf{b}_{i,1} + \mathbf{b}'_{i+1,2}) + \mathbf{W}'_{i+1,2}UAT_i^R",
     Status.PROVED, lambda: tr.rule_beta32(), "= duat:eq32.rule5."),
]


def _c2_entries() -> list[Entry]:
    l0, l1, l2 = tr.eq32_lines()
    first1 = W(ip, 1) * tr.HYP_I1 + b(ip, 3)
    first2 = (W(ip, 1) * Wu(i, 1) * S("x_{0}") + (W(ip, 1) * bu(i, 1) + b(ip, 3))) + W(ip, 1) * tr.Ri
    claim_tex = (r"\mathbf{x}'_{i+1} = (\mathbf{W}'_{i+1,1}\mathbf{x}_0 + \mathbf{b}'_{i+1,3}) + UAT^R_i + "
                 r"\mathbf{W}'_{i,3}\sigma(\mathbf{W}'_{i+1,2}\mathbf{x}_0 + \mathbf{b}'_{i+1,2})")
    out = [
        Entry("uat-aaai:appC.eq9.rule1", "App. C.2, 'Let …' after Eq. (9)",
              r"\mathbf{W}'_{i+1,2} = \mathbf{W}'_{i+1,2}\mathbf{W}'_{i+1,1}", Status.PROVED,
              step(tr.eq30_lines()[2], residual_term(ip, S("x'_{i}")).xreplace(tr.MERGE), tr.np_block),
              note=OCR + "= duat:eq30.rule1 (the display of Eq. (9) is missing; the DUAT version Eq. 30 used)."),
        Entry("uat-aaai:appC.eq9.claim1", "App. C.2, text after Eq. (9): 'so we have …'", tr.EQ31_TEX,
              Status.ERRATUM, tr.eq31(W(i, 3)),
              correction=Correction(tr.EQ31_TEX.replace(r"\mathbf{W}'_{i,3}", r"\mathbf{W}'_{i+1,3}"),
                                    tr.eq31(W(ip, 3))),
              note=OCR + r"the $\sigma-coefficient$ reads '$Wi3' (W'_{i,3})$, as in the DUAT version Eq. 31 and in "
                         "App. C Eq. (11); the general form it is compared with is printed with $W'_{i+1,3}$."),
        Entry("uat-aaai:appC.eq11.step1", "App. C.2, Eq. (11), step 1",
              f"{tr.EQ32_TEX[0]} = {tr.EQ32_TEX[1]}", Status.CONVENTION,
              Readings("whether the b_{i,3} of the stated hypothesis x_i = (W_{i,1}x_0 + b_{i,3}) + UAT_i^R and the"
                       " b_{i,1} substituted in Eq. (11) are the same vector",
                       {"distinct": tr.eq32_step1("distinct"), "b_{i,3}=b_{i,1}": tr.eq32_step1("same")}),
              note=OCR + "= duat:eq32.step1 (same hypothesis with $b_{i,3}$, same $W'_{i,3}$)."),
        Entry("uat-aaai:appC.eq11.step2", "App. C.2, Eq. (11), step 2 (first part)",
              r"\{\mathbf{W}'_{i+1,1}[(\mathbf{W}_{i,1}\mathbf{x}_0 + \mathbf{b}_{i,1}) + UAT_i^R] + "
              r"\mathbf{b}'_{i+1,3}\}"
              r" = [\mathbf{W}'_{i+1,1}\mathbf{W}_{i,1}\mathbf{x}_0 + (\mathbf{W}'_{i+1,1}\mathbf{b}_{i,1} + "
              r"\mathbf{b}'_{i+1,3})] + \mathbf{W}'_{i+1,1}UAT_i^R", Status.PROVED,
              step(first1, first2, lambda a: a["W'_{i+1,1}"] @ (a["W_{i,1}"] @ a["x_{0}"] + a["b_{i,1}"] + a["R_{i}"])
                   + a["b'_{i+1,3}"]),
              note=OCR + r"only the first ($non-\sigma$) part of the last line is legible (it is cut off after "
                         "$W'_{i+1,1}UAT_i^R$]); checked on that part."),
    ]
    for rid, tex, status, make, note in _C2_RULES:
        out.append(Entry(f"uat-aaai:appC.eq11.{rid}", f"App. C.2, 'By setting …' after Eq. (11), {rid}", tex,
                         status, make(), note=OCR + note))
    out += [
        Entry("uat-aaai:appC.eq11.claim1", "App. C.2, 'we get …' after Eq. (11)", claim_tex, Status.ERRATUM,
              semantic(form=tr.claim32_form("printed")),
              correction=Correction(claim_tex.replace(r"\mathbf{W}'_{i,3}", r"\mathbf{W}'_{i+1,3}"),
                                    semantic(form=tr.claim32_form("fixed"))),
              note=OCR + "= duat:eq32.claim1 ($W'_{i,3}$ for $W'_{i+1,3}$)."),
        Entry("uat-aaai:appC.eq11.rule6", "App. C.2, 'In addition, UAT_{i+1}^R = …'",
              r"UAT^R_{i+1} = UAT^R_i + \mathbf{W}'_{i+1,3}"
              r"\sigma(\mathbf{W}'_{i+1,2}\mathbf{x}_0 + \mathbf{b}_{i+1,2})",
              Status.CONVENTION,
              Readings("whether UAT_i^R is the sum already multiplied by W'_{i+1,1} (rule 3) or the old one",
                       {"updated": _rule6("updated"), "old": _rule6("old")}),
              note=OCR + "no DUAT-version counterpart (the DUAT version writes $W'_{i+1,1}UAT_i^R$ explicitly, "
                         r"duat:eq27.rule3). $\sigma's W'_{i+1,2}$, $b_{i+1,2}$ read as the transformed "
                         r"$\tilde{V}_{i+1}$, $\tilde{\beta}_{i+1}$."),
        Entry("uat-aaai:appC.eq11.claim2", "App. C.2, 'So, x_{i+1} = …'",
              r"\mathbf{x}_{i+1} = (\mathbf{W}'_{i+1,1}\mathbf{x}_0+\mathbf{b}_{i+1,3})+UAT^R_{i+1}", Status.PROVED,
              semantic(), note=OCR + "transformed symbols = table values; $x_0$ read as $x'_0$."),
        Entry("uat-aaai:defUATR.part1", "App. C.2, 'UAT^R_{i+1} = …'",
              r"UAT^R_{i+1} = \sum_{j=1}^{i+1}\mathbf{W}'_{j,3}\sigma(\mathbf{W}'_{j,2}\mathbf{x}'_0 + "
              r"\mathbf{b}'_{j,2})",
              Status.PROVED, semantic(form=lambda d: table(d).unfold(table(d).form())),
              note=OCR + "indices agree with the DUAT version B.3 (duat:defUATR.part4), not with its B.2 version."),
        Entry("uat-aaai:appC.eq11.rule7", "App. C.2, 'b'_{j,2} = …' before Eq. (10)",
              r"\mathbf{b}'_{j,2} = (\mathbf{W}'_{j,2}\mathbf{b}'_{j-1,3} + \mathbf{b}'_{j,2}) + "
              r"\mathbf{W}'_{j,2}UAT^R_{j-1}",
              Status.CONVENTION, readings(_rule8),
              note=OCR + "compact form of the DUAT version Eq. 12 ($UAT^R_{j-1}$ instead of the written-out sum); "
                         "$b'_{j-1,3}$ must be the transformed $\\tilde{c}_{j-1}$ (fails at depth 3 otherwise). "
                         "Checked "
                         "for "
                         r"$j \ge 2$."),
        Entry("uat-aaai:appC.eq10", "App. C.2, Eq. (10)",
              r"\mathbf{x}_{i+1} = (\mathbf{W}'_{i+1,1}\mathbf{x}'_0 + \mathbf{b}_{i+1,1}) + \sum_{j=1}^{i+1}"
              r"\mathbf{W}'_{j,3}\sigma(\mathbf{W}'_{j,2}\mathbf{x}'_0 + \mathbf{b}'_{j,2})", Status.PROVED,
              semantic(form=tr.printed_form("b1")),
              note=OCR + "= the DUAT version Eq. 11 (main bias $b_{i+1,1}$, while the text just above names it "
                         "$b_{i+1,3}$); read with the table's meaning. 'Other parameters will also vary with the "
                         r"number of layers $\dots$ we will not detail the specific forms': no parameter list here."),
        Entry("uat-aaai:appC.eq10.claim1", "App. C.2, text after Eq. (10)",
              r"\text{all } \mathbf{W}'_{j,1}, \mathbf{W}'_{j,3}, \mathbf{W}'_{j,2} \text{ parameters for the i-th "
              r"layer, where } j = 1,\ldots,i \text{, are dynamically changing with the input}", Status.PROSE,
              Prose("Qualitative; proxy: symbolic input-dependence of the DUAT-form parameters for the paper's block "
                    r"(symuat.numeric.\texttt{residual\_params}.DYNAMIC['paper']).", _dyn_proxy_all),
              note=OCR + "the list of symbols is partly garbled (\\texttt{W\\} ,, W, and W;.,Q}). The DUAT version "
                         "narrows it "
                         "to $W'_{j,3}$ for i+1 $>$ $j > 1$; here all j, which includes the static last $W'_{i,3}$."),
    ]
    return out


def _entries() -> list[Entry]:
    return [*_c1_entries(), *_c2_entries()]


def entries() -> list[Entry]:
    """The entries of this derivation, each with its Coq theorem where one states it (docs/coq.md)."""
    return linked(_entries())
