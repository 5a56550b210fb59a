r"""Seed 000 (uat-aaai, OCR) main text: §3.1 Eq. 3, §3.3 Eq. 5–6, §3.4 Eq. 7, §3.5 Eq. 11 and its parameter list.

Seed 000 is an OCR text; every statement is reconstructed with the legible versions of
the same display (seed 004 for Eq. 3, 5; seed 001 for Eq. 6, 7, 11, which print the
same formulas) and the OCR glyphs are quoted in each entry's ``note``.  The checks
reuse the identities of the corresponding seed-004/seed-001 entries
(:mod:`derivations.linear`, :mod:`derivations.attention`).

Eq. 11 (the UAT form of an (i+1)-layer Transformer) and the rules printed under it
are checked *semantically* (:mod:`derivations._duat_common`): the printed rule
replaces its rows of the derived substitution table
(:func:`symuat.expansion.substitution_table`), the unfolded form is compared with
the nested Eq. 20 network (:func:`symuat.expansion.nested_form`) at depths 1–3, and
the float level with a plain NumPy Eq. 20 recursion.  A right-hand-side symbol is
read either as the value already transformed by earlier layers (``transformed``)
or as the original layer parameter (``original``).

.. math::

    \mathbf b'_{j,2} = (\mathbf W'_{j,2}\mathbf b'_{j-1,3} + \mathbf b'_{j,2})
        + \mathbf W'_{j,2}\,UAT^R_{j-1},\qquad
    UAT^R_{j-1} = \sum_{k=1}^{j-1}\mathbf W'_{k,3}\sigma(\mathbf W'_{k,2}\mathbf x_0 + \mathbf b'_{k,2}).
"""

from __future__ import annotations

import sympy

from symuat import Entry, Evidence, Level, Prose, Readings, Status
from symuat.expansion import A_name, R_name, U_name, V_name, beta_name
from symuat.numeric.residual_params import DYNAMIC

from ._coq_links import linked
from ._duat_common import (
    INPUT,
    READ_O,
    READ_T,
    S,
    dependency_proxy,
    printed,
    semantic,
    sigma,
    table,
    table_map,
    verbatim,
)
from .attention import reduction
from .linear import diamond_transpose_identity, ffn_identity, method_identity, printed_eq15_identity

__all__ = ["entries"]

x0 = INPUT
_OCR = "The UAT conference version is OCR ({}); transcribed from {}. "


def _ocr(garbled: str, source: str) -> str:
    """The note prefix: the OCR text verbatim, then where the statement is transcribed from."""
    return _OCR.format(verbatim(garbled), source)
_READINGS = ("whether a right-hand-side symbol is the value transformed by the earlier layers or the original "
             "layer parameter")


# ---------------------------------------------------------------- Eq. 11 and its parameter list

def _eq11_form(depth: int) -> sympy.Expr:
    r"""Eq. 11 with its printed symbols read as the table's values (W'_{i+1,1} = Ã, bias = c̃, …), unfolded."""
    m = table_map(depth)
    body = m["A"] * x0 + m["c"] + sum((m[f"U{j}"] * sigma(m[f"V{j}"] * x0 + m[f"beta{j}"])
                                       for j in range(1, depth + 1)), sympy.S.Zero)
    return table(depth).unfold(body)


def _uatr(j: int, reading: str) -> sympy.Expr:
    r"""The printed :math:`UAT^R_{j-1}=\sum_{k<j}W'_{k,3}\sigma(W'_{k,2}x_0+b'_{k,2})`, read in the box of layer j."""
    return sum((printed("W3", k, j, reading) * sigma(printed("W2", k, j, reading) * x0 + printed("b2", k, j, reading))
                for k in range(1, j)), sympy.S.Zero)


def _rule_bias(reading: str):
    """Rule 1: the printed b'_{j,2} replaces β̃_j for every j = 1..L (UAT^R_{j-1} kept as the table's R_{j-1})."""
    def ov(d):
        out = {}
        for j in range(1, d + 1):
            W2 = printed("W2", j, j, reading)  # the layer's own W'_{j,2} under either reading
            out[beta_name(j)] = (W2 * printed("b3", j - 1, j, reading) + printed("b2", j, j,
                                                                                 reading)) + W2 * S(R_name(j - 1))
        return out
    return semantic(ov)


def _rule_uatr(reading: str):
    """Rule 2: the printed sum replaces R_{j-1} for every j = 2..L (R_1 … R_{L-1}, the rows β̃_j use)."""
    return semantic(lambda d: {R_name(j - 1): _uatr(j, reading) for j in range(2, d + 1)})


def _readings(make) -> Readings:
    return Readings(_READINGS, {READ_T: make(READ_T), READ_O: make(READ_O)})


def _dynamic_proxy(seed: int) -> tuple[Evidence, ...]:
    d = 3
    names = {f"{kind}{j}": name(j) for j in range(1, d + 1)
             for kind, name in (("A", A_name), ("V", V_name), ("U", lambda j: U_name(j, d)))}
    dyn = dependency_proxy(d, DYNAMIC["paper"], names)
    static = sorted(k for k, v in dyn.items() if not v)
    return (Evidence(Level.SYMBOLIC, not static,
                     f"paper block, depth {d}: entries of the UAT form that do not depend on x'_0: {static or 'none'} "
                     f"(claim: every W'_{{j,1}}, W'_{{j,2}}, W'_{{j,3}} is dynamic)"),)


_EQ11 = (r"\mathbf{x}_{i+1} = (\mathbf{W}'_{i+1,1}\mathbf{x}_0 + \mathbf{b}_{i+1,1}) + \sum_{j=1}^{i+1} "
         r"\mathbf{W}'_{j,3}\sigma(\mathbf{W}'_{j,2}\mathbf{x}'_0 + \mathbf{b}'_{j,2})")
_RULE1 = (r"\mathbf{b}'_{j,2} = (\mathbf{W}'_{j,2}\mathbf{b}'_{j-1,3} + \mathbf{b}'_{j,2})"
          r" + \mathbf{W}'_{j,2}UAT^R_{j-1}")
_RULE2 = (r"UAT^R_{j-1} = \sum_{k=1}^{j-1}\mathbf{W}'_{k,3}\sigma(\mathbf{W}'_{k,2}\mathbf{x}_0 + "
          r"\mathbf{b}'_{k,2})")


def _eq11_entries() -> list[Entry]:
    ocr = "Xi+1 = (W§+1,1X0 +bit1,1) + Z W},30(W9,2X6 + b9,2)"
    return [
        Entry("uat-aaai:eq11", "§3.5, Eq. 11", _EQ11, Status.PROVED, semantic(form=_eq11_form),
              note=_ocr(ocr, "The DUAT version Eq. 11 (duat:eq11), the same display; = uat-aaai:appC.eq10")
              + r"Read with the table's meaning: $W'_{i+1,1} = \tilde{A}_{i+1}$, the main bias $b_{i+1,1} = "
                r"\tilde{c}_{i+1}$, $W'_{j,3} = \tilde{U}_j^{(i+1)}$, $W'_{j,2} = \tilde{V}_j$, $b'_{j,2} = "
                r"\tilde{\beta}_j$; $x_0$ read as $x'_0$. Nested Eq. 20 network, depths 1-3."),
        Entry("uat-aaai:eq11.rule1", "§3.5, parameter list after Eq. 11, rule 1", _RULE1, Status.CONVENTION,
              _readings(_rule_bias),
              note=_ocr("b}, = (W),b}_ ;5 + b},) + W/ JUAT |", "The UAT conference version App. C.2 "
                                                                      "(uat-aaai:appC.eq11.rule7) and the DUAT "
                                                                      "version Eq. 12")
              + "The range of j is not printed; checked for every j = 1..i+1 of the sum in Eq. 11. Holds when "
                r"$b'_{j-1,3}$ is the transformed $\tilde{c}_{j-1} (\tilde{c}_0 = 0)$; with the original $b'_{j-1,3}$ "
                "it fails (already at depth 1, where $b'_{0,3}$ is undefined). $UAT^R_{j-1}$ is the table's "
                "$R_{j-1}$ (rule 2 defines it)."),
        Entry("uat-aaai:eq11.rule2", "§3.5, parameter list after Eq. 11, rule 2", _RULE2, Status.CONVENTION,
              _readings(_rule_uatr),
              note=_ocr("UATS | = Sut %30 (W oxg + k2)", "The UAT conference version App. C.2 / the DUAT "
                                                                "version B.3 ($UAT^R$)")
              + r"Replaces $R_1$, $\dots$, $R_{L-1}$ (the sums that $\tilde{\beta}_j$ uses) by the printed sum read "
                "in the box of layer j. Holds when $W'_{k,3}$, $W'_{k,2}$, $b'_{k,2}$ are the values transformed by "
                r"layers up to j-1 ($\tilde{U}_k^{(j-1)}$, $\tilde{V}_k$, $\tilde{\beta}_k$); with the original layer "
                "parameters it fails at depth 3 ($R_2$ then lacks $W'_{2,1}$ in front of $W'_{1,3}$). $x_0$ read as "
                "$x'_0$."),
        Entry("uat-aaai:eq11.claim1", "§3.5, text after Eq. 11",
              r"\text{all } \mathbf{W}'_{j,1}, \mathbf{W}'_{j,2}, \mathbf{W}'_{j,3} \text{ parameters in layer } i"
              r"\text{, where } j = 1,\ldots,i \text{, are dynamically adjusted based on the input}", Status.PROSE,
              Prose(r"Qualitative; proxy: symbolic dependence on $x'_0$ of every $\tilde{A}_j$, $\tilde{V}_j$, "
                    r"$\tilde{U}_j^{(3)}$ of the depth-3 DUAT table for the paper's block (dynamic parameters: "
                    r"symuat.numeric.\texttt{residual\_params}.DYNAMIC['paper']).", _dynamic_proxy),
              note=_ocr(";-71, W;-,Q, and ;73", "The UAT conference version App. C.2 "
                                                       "(uat-aaai:appC.eq10.claim1)")
              + "The proxy finds the last layer's $W'_{i,3}$ (the FFN output matrix) static."),
    ]


# ---------------------------------------------------------------- Eq. 3, 5, 6, 7

_EQ6 = (r"FFN(\mathbf{x}) = \mathbf{W}_2 \sigma(\mathbf{W}_1 \mathbf{x} + \mathbf{b}_1) + \mathbf{b}_2"
        r" \rightarrow \mathbf{W}_2' \sigma(\mathbf{W}_1' \mathbf{x}' + \mathbf{b}_1') + \mathbf{b}_2'")
_EQ7 = (r"\mathbf{H} = \text{MultiHead}(\mathbf{Q}, \mathbf{K}, \mathbf{V}) = \text{Concat}\left("
        r"\hat{\mathbf{H}}_{1}, \dots, \hat{\mathbf{H}}_{h}\right) \mathbf{W}_{O} = \hat{\mathbf{H}} \mathbf{W}_{O}")


def _layer_entries() -> list[Entry]:
    return [
        Entry("uat-aaai:eq3", "§3.1, Eq. 3",
              r"\mathbf{y}=T(\mathbf{x}|\mathbf{W})\rightarrow\mathbf{y}^{\prime}=\mathbf{W}^{\prime}\mathbf{x}^{\prime}",
              Status.PROVED, method_identity(),
              note=_ocr("y=TxW) >y =Wx% 3)", "The UAT arXiv version Eq. 3 (uat-arxiv:eq3)")
              + r"Checked for every linear T(X) = A X B: $W' = A \otimes B^{T}$ under row-major "
                r"$\operatorname{vec}_r$; MHA is Eq. 9."),
        Entry("uat-aaai:eq5.step1", "§3.3, Eq. 5, first arrow",
              r"\mathbf{x}_{i+1}=\mathbf{W}_{i}\mathbf{x}^{i}\rightarrow\mathbf{x}_{i+1}^{\prime}"
              r"=\mathbf{W}_{i}^{\prime}\diamond\mathbf{x}_{i}^{\prime}", Status.PROVED, printed_eq15_identity(),
              note=_ocr("Xit1 = Wix' > x| = Wiox) = (W))\" x| (5)", "The UAT arXiv version Eq. 5 "
                                                                           "(uat-arxiv:eq5.step1)")
              + "$W'_i$ is the matrix of Figure 2.c (an image here; the UAT arXiv version App. B.1 Eq. 15 prints it: "
                r"$W_i^{T} \otimes I_M$); $x^i$ read as $x_i$."),
        Entry("uat-aaai:eq5.step2", "§3.3, Eq. 5, second equality",
              r"\mathbf{W}_{i}^{\prime}\diamond\mathbf{x}_{i}^{\prime}=(\mathbf{W}_{i}^{\prime})^{T}\mathbf{x}_{i}^{\prime}",
              Status.PROVED, diamond_transpose_identity(),
              note=_ocr("Wiox) = (W))\" x|", "The UAT arXiv version Eq. 5 (uat-arxiv:eq5.step2)")),
        Entry("uat-aaai:eq6", "§3.3, Eq. 6", _EQ6, Status.PROVED,
              Readings("which axis W_1, W_2 mix (Eq. 5 mixes tokens; a Transformer FFN mixes features)",
                       {"token-mixing": ffn_identity("token"), "feature-mixing": ffn_identity("feature")}),
              note=_ocr("FFEN(x) = Wy0(Wix + by) + by / Wi (WixX + b)) by", "The DUAT version Eq. 6 (duat:eq6)")
              + r"Holds under both readings: $W' = W \otimes I_M$, $b' = b \otimes 1_M$ (tokens) or $W' = I_N \otimes "
                r"W$, $b' = 1_N \otimes b$ (features)."),
        Entry("uat-aaai:eq7", "§3.4, Eq. 7", _EQ7, Status.PROVED, reduction(),
              note=_ocr("H = MultiHead(Q, K, V) … — Concat (Hl, . H,) Wo = HW,", "The DUAT version Eq. 7 "
                                                                                        "(duat:eq7)")
              + r"The ring of $\mathring{H}$ (DUAT version) is not visible in the OCR. MultiHead is the standard "
                r"layer $\sum_h H_h X W_{V,h} W_{O,h}$; the paper's heads see only $x_i$, i.e. block-diagonal $W_V$: "
                r"proved. $\hat{H} = Concat(\hat{H}_1$, $\dots$, $\hat{H}_h$) is the definition of $\hat{H}$."),
    ]


def _entries() -> list[Entry]:
    return [*_layer_entries(), *_eq11_entries()]


def entries() -> list[Entry]:
    """The entries of this derivation, each with its Coq theorem where one states it (docs/coq.md)."""
    return linked(_entries())
