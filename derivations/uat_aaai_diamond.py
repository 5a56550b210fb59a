r"""The Diamond product in seed 000 (uat-aaai, OCR): §3.2, Eq. 4 and the App. A proof chains Eq. (1)–(2).

Seed 000 is an OCR text.  Its OCR renders ◇ as ``o``, ``¢`` or ``oe`` and drops many
superscripts (ᵀ) and subscripts. Seed 004 (:mod:`derivations.diamond`) prints the
same section legibly, so it is used to reconstruct the glyphs. The App. A chains of
seed 000 are **not** seed 004's Eq. 13–14: each is one row shorter.

App. A Eq. (1), as reconstructed (``E1 = … = E8``; the display has 7 rows, the
fourth row being ``E4 = E5``, and the label (1) sits next to it)::

    W1◇[x◇W2] = W1◇[W2ᵀx] = W1ᵀ[W2ᵀx] = W1ᵀW2ᵀx = W12◇x = (W1ᵀW2ᵀ)ᵀ◇x = (W2W1)◇x = W2◇W1◇x
    OCR:  "W o [x 0o Ws]" "=Wji ¢ [ng]" "=W [W;x]" "=WIWlx = Wiox" "—(WiW3z)Tox" "=(WyWj)ox" "=W2 oW, ox"

App. A Eq. (2) (6 rows)::

    [W1◇x]◇W2 = [W1ᵀx]◇W2 = W2ᵀ[W1ᵀx] = W2ᵀW1ᵀ◇x = [W1W2]◇x = W1ᵀ◇W2◇x
    OCR:  "[W1ox] oWy" "=[WTx] o W," "=W [Wix]" "=Wz Wi ox" "=[W; W3] ox" "=WToeW,ox"

The text defines ``W12 = W1ᵀW2ᵀ`` (OCR "whereW, = W{ W7").  Three glyph groups are
ambiguous; each gives one entry per reading (docs/ledger-format.md, ``.reading<R>``): reading 1 is
the glyphs as the OCR shows them, reading 2 the text of seed 004:

* Eq. (1), ``Wiox``: ``W12◇x`` (the ``o`` is ◇, as everywhere else in this OCR) or
  ``W12 x`` (seed 004);
* Eq. (1), last row ``W2 oW, ox``: ``W2◇W1◇x`` (the clean subscript suggests no ᵀ)
  or ``W2ᵀ◇W1◇x`` (ᵀ dropped by the OCR; seed 004's last row and the stated property);
* Eq. (2), ``Wz Wi ox``: ``W2ᵀW1ᵀ◇x`` (no brackets, although the OCR keeps every other
  bracket of this chain) or ``[W2ᵀW1ᵀ]ᵀ◇x`` (seed 004).

Each step is checked under every reading of :data:`symuat.CHAIN_READINGS`, with the
helpers of :mod:`derivations.diamond` (a step is ``proved`` when all chain readings
hold, ``convention`` when some do, ``erratum`` when none does).
"""

from __future__ import annotations

import re

import sympy

from symuat import (
    CHAIN_READINGS,
    Correction,
    Entry,
    Expr,
    Identity,
    Readings,
    Status,
    Step,
    StepTable,
    chain,
    diamond,
    dims_grid,
)
from symuat.algebra.splits import but_last

from ._coq_links import linked
from ._duat_common import verbatim
from .diamond import (
    chain_step,
    eq4_identity,
    left_tn_identity,
    rows_of_result_identity,
    square_identity,
    vector_operand_identity,
)

__all__ = ["entries"]

_OCR = ("The UAT conference version is OCR; reconstructed with the UAT arXiv version (same section). ")
_E = sympy.ImmutableMatrix


def w12(W1: _E, W2: _E) -> _E:
    r"""The printed definition :math:`W_{12} = W_1^T W_2^T`."""
    return W1.T * W2.T


# --- App. A Eq. (1): expressions (LaTeX as reconstructed, value under a chain reading R) ------------------------
_X1 = {
    "E1": Expr(r"\mathbf{W}_{1}\diamond[\mathbf{x}\diamond\mathbf{W}_{2}]",
               lambda W1, x, W2: diamond(W1, diamond(x, W2))),
    "E2": Expr(r"\mathbf{W}_{1}\diamond[\mathbf{W}_{2}^{T}\mathbf{x}]", lambda W1, W2, x: diamond(W1, W2.T * x)),
    "E3": Expr(r"\mathbf{W}_{1}^{T}[\mathbf{W}_{2}^{T}\mathbf{x}]", lambda W1, W2, x: W1.T * (W2.T * x)),
    "E4": Expr(r"\mathbf{W}_{1}^{T}\mathbf{W}_{2}^{T}\mathbf{x}", lambda W1, W2, x: W1.T * W2.T * x),
    "E5◇": Expr(r"\mathbf{W}_{12}\diamond\mathbf{x}", lambda W1, W2, x: diamond(w12(W1, W2), x)),
    "E5": Expr(r"\mathbf{W}_{12}\mathbf{x}", lambda W1, W2, x: w12(W1, W2) * x),
    "E6": Expr(r"(\mathbf{W}_{1}^{T}\mathbf{W}_{2}^{T})^{T}\diamond\mathbf{x}",
               lambda W1, W2, x: diamond((W1.T * W2.T).T, x)),
    "E7": Expr(r"(\mathbf{W}_{2}\mathbf{W}_{1})\diamond\mathbf{x}", lambda W2, W1, x: diamond(W2 * W1, x)),
    "E8": Expr(r"\mathbf{W}_{2}\diamond\mathbf{W}_{1}\diamond\mathbf{x}", lambda R, W2, W1, x: chain(R, W2, W1, x)),
    "E8ᵀ": Expr(r"\mathbf{W}_{2}^{T}\diamond\mathbf{W}_{1}\diamond\mathbf{x}",
                lambda R, W2, W1, x: chain(R, W2.T, W1, x)),
}
# --- App. A Eq. (2) ------------------------------------------------------------------------------------------------
_X2 = {
    "E1": Expr(r"[\mathbf{W}_{1}\diamond\mathbf{x}]\diamond\mathbf{W}_{2}",
               lambda W1, x, W2: diamond(diamond(W1, x), W2)),
    "E2": Expr(r"[\mathbf{W}_{1}^{T}\mathbf{x}]\diamond\mathbf{W}_{2}", lambda W1, x, W2: diamond(W1.T * x, W2)),
    "E3": Expr(r"\mathbf{W}_{2}^{T}[\mathbf{W}_{1}^{T}\mathbf{x}]", lambda W2, W1, x: W2.T * (W1.T * x)),
    "E4": Expr(r"\mathbf{W}_{2}^{T}\mathbf{W}_{1}^{T}\diamond\mathbf{x}", lambda W2, W1, x: diamond(W2.T * W1.T, x)),
    "E4[]": Expr(r"[\mathbf{W}_{2}^{T}\mathbf{W}_{1}^{T}]^{T}\diamond\mathbf{x}",
                 lambda W2, W1, x: diamond((W2.T * W1.T).T, x)),
    "E5": Expr(r"[\mathbf{W}_{1}\mathbf{W}_{2}]\diamond\mathbf{x}", lambda W1, W2, x: diamond(W1 * W2, x)),
    "E6": Expr(r"\mathbf{W}_{1}^{T}\diamond\mathbf{W}_{2}\diamond\mathbf{x}",
               lambda R, W1, W2, x: chain(R, W1.T, W2, x)),
}
#: ``W2ᵀW1ᵀ◇x`` read with ◇ binding first: ``W2ᵀ(W1ᵀ◇x)``.
_E4_DIAMOND_FIRST = Expr(_X2["E4"].tex, lambda W2, W1, x: W2.T * diamond(W1.T, x))

_W12_DEF = r"\quad(\mathbf{W}_{12}=\mathbf{W}_{1}^{T}\mathbf{W}_{2}^{T})"
_LEFT_NN = (r"Holds only if $A\diamond B$ means the ordinary product AB and the chain is read left to right (left-NN).")
_LEFT_TN = (r"Holds only if a chain is read left to right with $A\diamond B = A^{T}B$ (left-TN).")


def _precedence(lk: str, rk: str) -> Readings:
    """A step of Eq. (2) with ``W2ᵀW1ᵀ◇x`` on one side: product first, or ◇ first (no chain is involved)."""
    tn = next(r for r in CHAIN_READINGS if r.name == "left-TN")
    diamond_first = dict(_X2, E4=_E4_DIAMOND_FIRST)
    return Readings("whether juxtaposition or ◇ binds first in W2ᵀW1ᵀ◇x",
                    {"product-first": square_identity(_X2[lk].build, _X2[rk].build, tn),
                     "diamond-first": square_identity(diamond_first[lk].build, diamond_first[rk].build, tn)})


def _ref(place: str) -> str:
    eq = place.split(".")[1][2:]
    return f"App. A, Eq. ({eq}), " + ", ".join(re.sub(r"(\d+)$", r" \1", p) for p in place.split(".")[2:])


def _table(exprs: dict[str, Expr], suffix=None) -> StepTable:
    return StepTable("uat-aaai", exprs, claim=lambda lhs, rhs: chain_step(lhs.build, rhs.build), ref=_ref,
                     correct=lambda lhs, rhs: left_tn_identity(lhs.build, rhs.build), note=_OCR, suffix=suffix)


def _appendix_a() -> list[Entry]:
    """The App. A chains Eq. (1) and (2), one :class:`symuat.Step` per printed ``=`` (and reading)."""
    eq1 = [
        Step("appA.eq1.step1", "E1", "E2", Status.PROVED, None, ""),
        Step("appA.eq1.step2", "E2", "E3", Status.PROVED, None, ""),
        Step("appA.eq1.step3", "E3", "E4", Status.PROVED, None, ""),
        Step("appA.eq1.step4.reading1", "E4", "E5◇", Status.ERRATUM, ("E4", "E5"),
         r"Reading 1 of 'WIWlx = Wiox': the 'o' is $\diamond$ (as everywhere in this OCR). With the printed $W_{12} = "
         r"W_{1}^{T}W_{2}^{T}$, $W_{12}\diamond x = W_{2}W_{1}x \ne W_{1}^{T}W_{2}^{T}x$. The UAT arXiv version "
         "prints $W_{12}$ x here (uat-arxiv:eq13.step3), which is the correction."),
        Step("appA.eq1.step4.reading2", "E4", "E5", Status.PROVED, None,
         "Reading 2 of 'WIWlx = Wiox' (the UAT arXiv version: $W_{1}^{T}W_{2}^{T}x = W_{12}$ x): the printed "
         "definition of $W_{12}$."),
        Step("appA.eq1.step5.reading1", "E5◇", "E6", Status.ERRATUM, ("E5", "E6"),
         r"Reading 1 ($W_{12}\diamond x$): with $W_{12} = W_{1}^{T}W_{2}^{T}$, $W_{12}\diamond x = W_{2}W_{1}x$ while "
         r"$(W_{1}^{T}W_{2}^{T})^{T}\diamond x = W_{1}^{T}W_{2}^{T}x$. Steps 4 and 5 of this reading cancel ($E_{4} = "
         "E_{6}$ holds), so the slip, if printed, does not affect the chain's end point."),
        Step("appA.eq1.step5.reading2", "E5", "E6", Status.PROVED, None,
             "Reading 2 ($W_{12}$ x, the UAT arXiv version uat-arxiv:eq13.step4)."),
        Step("appA.eq1.step6", "E6", "E7", Status.PROVED, None, "= uat-arxiv:eq13.step5."),
        Step("appA.eq1.step7.reading1", "E7", "E8", Status.CONVENTION, None,
         _LEFT_NN + r" Reading 1 of the last row 'W2 oW, $ox'$ (no $^{T}$): the chain then ends at $W_{2}\diamond "
                    r"W_{1}\diamond x$ (= uat-arxiv:eq13.step6), not at the stated property $W_{2}^{T}\diamond "
                    r"W_{1}\diamond x$ (uat-aaai:sec3.2.claim4, which holds only under left-TN), so no single reading "
                    "makes the chain prove the property."),
        Step("appA.eq1.step7.reading2", "E7", "E8ᵀ", Status.CONVENTION, None,
         _LEFT_TN + " Reading 2 of the last row: $^{T}$ dropped by the OCR, the row is the UAT arXiv version's last "
                    r"row $W_{2}^{T}\diamond W_{1}\diamond x$. The UAT arXiv version reaches it through "
                    r"$W_{2}\diamond W_{1}\diamond x$ (uat-arxiv:eq13.step7, an erratum); this shorter chain skips "
                    "that row, as Eq. (2) does, and is then consistent under left-TN."),
    ]
    eq2 = [
        Step("appA.eq2.step1", "E1", "E2", Status.PROVED, None, "= uat-arxiv:eq14.step1."),
        Step("appA.eq2.step2", "E2", "E3", Status.PROVED, None, "= uat-arxiv:eq14.step2."),
        Step("appA.eq2.step3.reading1", "E3", "E4", Status.ERRATUM, ("E3", "E4[]"), claim=_precedence("E3", "E4"), note=
         "Reading 1 of 'Wz Wi $ox'$ (no brackets: the OCR keeps every other bracket of this chain): "
         r"$W_{2}^{T}W_{1}^{T}\diamond x$ is $W_{1}W_{2}x$ (product first) or $W_{2}^{T}W_{1}x (\diamond$ first), "
         r"never $W_{2}^{T}W_{1}^{T}x$. Correction: the UAT arXiv version's $[W_{2}^{T}W_{1}^{T}]^{T}\diamond x$."),
        Step("appA.eq2.step3.reading2", "E3", "E4[]", Status.PROVED, None,
         r"Reading 2 (the UAT arXiv version: $[W_{2}^{T}W_{1}^{T}]^{T}\diamond x$, brackets and outer $^{T}$ lost by "
         "the OCR) = uat-arxiv:eq14.step3."),
        Step("appA.eq2.step4.reading1", "E4", "E5", Status.ERRATUM, ("E4[]", "E5"), claim=_precedence("E4", "E5"), note=
         r"Reading 1 ($W_{2}^{T}W_{1}^{T}\diamond x$): neither precedence gives $[W_{1}W_{2}]\diamond x = "
         "W_{2}^{T}W_{1}^{T}x$. Steps 3 and 4 of this reading cancel ($E_{3} = E_{5}$ holds)."),
        Step("appA.eq2.step4.reading2", "E4[]", "E5", Status.PROVED, None, "Reading 2 = uat-arxiv:eq14.step4."),
        Step("appA.eq2.step5", "E5", "E6", Status.CONVENTION, None,
         _LEFT_TN + r" the UAT arXiv version inserts $W_{1}\diamond W_{2}\diamond x$ between these rows "
                    "(uat-arxiv:eq14.step5-6: left-NN, then an erratum); the UAT conference version goes directly to "
                    r"$W_{1}^{T}\diamond W_{2}\diamond x$, which is right under left-TN."),
    ]
    w12_printed = _table(_X1, suffix=lambda step: _W12_DEF if "E5" in (step.lhs[:2], step.rhs[:2]) else "")
    return [*w12_printed.entries(eq1), *_table(_X2).entries(eq2)]


def _last_row() -> Identity:
    r"""The only legible row of Eq. 4 (its last): :math:`(W\diamond x)_n = w_{1,n}x_1 + \dots + w_{m,n}x_m`."""
    return Identity(
        shapes={"W": ("m", "n"), "x": ("m", 1)},
        lhs=lambda W, x, n: diamond(W, x)[but_last(n):, :],
        rhs=lambda W, n, x: W[:, but_last(n):].T * x,  # column n of W times x: w_{1,n}x_1 + ... + w_{m,n}x_m
        dims=dims_grid(m=(1, 2, 3), n=(1, 2, 3)),
        reference=lambda W, x: (W.T @ x)[-1:, 0], random_dims={"m": 4, "n": 3},
    )


def _sec32() -> list[Entry]:
    arx = "Same statement as {}; the UAT conference version's OCR prints {}."
    return [
        Entry("uat-aaai:eq4", "§3.2, Eq. 4 (last row only)",
              r"\mathbf{W}\diamond\mathbf{x}=\left(\begin{array}{c}\vdots\\ w_{1,n}x_{1}+w_{2,n}x_{2}+\cdots "
              r"w_{mn}x_{m}\end{array}\right)", Status.PROVED, _last_row(),
              note="Eq. 4 is a display the OCR lost except its last row ('W1,nT1 + $W_{2} nT2 + o$ WmnTm', i.e. "
                   r"$w_{1,n}x_1 + w_{2,n}x_2 + \cdots w_{mn}x_m$); only that row is transcribed and checked (as "
                   r"$(W\diamond x)_n$). The UAT arXiv version's first row has an index slip (uat-arxiv:eq4, erratum) "
                   "that cannot be confirmed or excluded here."),
        Entry("uat-aaai:sec3.2.claim1", "§3.2, definition of the Diamond product",
              r"\mathbf{W}\in\mathbb{R}^{(m,n)},\ \mathbf{x}\in\mathbb{R}^{(m,1)},\ "
              r"\mathbf{y}=\mathbf{W}\diamond\mathbf{x},\ \mathbf{y}\in\mathbb{R}^{(m,1)}",
              Status.ERRATUM, rows_of_result_identity("m"),
              correction=Correction(r"\mathbf{y}\in\mathbb{R}^{(n,1)}", rows_of_result_identity("n")),
              note=arx.format("uat-arxiv:sec3.2.claim1", verbatim("y € ROm:1)")) + " Checked as the number of rows of "
                                                                         r"$W\diamond x$."),
        Entry("uat-aaai:sec3.2.claim2", "§3.2", r"\mathbf{W}\diamond\mathbf{x}=\mathbf{x}\diamond\mathbf{W}",
              Status.CONVENTION,
              Readings("which operand of ◇ plays the vector",
                       {"vector-operand": vector_operand_identity("vector-operand"),
                        "positional": vector_operand_identity("positional")}),
              note=arx.format("uat-arxiv:sec3.2.claim2",
                              verbatim("Wox=x0oW")) + " True when the column vector always plays x; "
                                                                       r"read positionally ($x\diamond W = x^{T}W$) "
                                                                       "the sides differ in shape."),
        Entry("uat-aaai:sec3.2.claim3", "§3.2", r"\mathbf{W}\diamond\mathbf{x}=\mathbf{W}^{T}\mathbf{x}",
              Status.PROVED, eq4_identity(lambda W, x: W.T * x),
              note=arx.format("uat-arxiv:sec3.2.claim3", verbatim("W ox = WTx"))),
        Entry("uat-aaai:sec3.2.claim4", "§3.2 and App. A (first sentence), first property",
              r"\mathbf{W}_{1}\diamond[\mathbf{x}\diamond\mathbf{W}_{2}]=\mathbf{W}_{2}^{T}\diamond\mathbf{W}_{1}\diamond\mathbf{x}",
              Status.CONVENTION, chain_step(_X1["E1"].build, _X1["E8ᵀ"].build),
              note=arx.format("uat-arxiv:sec3.2.claim6", verbatim("W1 o [xo W3] = WIT oW ox")) + " " + _LEFT_TN),
        Entry("uat-aaai:sec3.2.claim5", "§3.2 and App. A (first sentence), second property",
              r"[\mathbf{W}_{1}\diamond\mathbf{x}]\diamond\mathbf{W}_{2}=\mathbf{W}_{1}^{T}\diamond\mathbf{W}_{2}\diamond\mathbf{x}",
              Status.CONVENTION, chain_step(_X2["E1"].build, _X2["E6"].build),
              note=arx.format("uat-arxiv:sec3.2.claim7", verbatim("[W;ox]oWy = WTo W, ox")) + " " + _LEFT_TN),
    ]


def _entries() -> list[Entry]:
    return [*_sec32(), *_appendix_a()]


def entries() -> list[Entry]:
    """The entries of this derivation, each with its Coq theorem where one states it (docs/coq.md)."""
    return linked(_entries())
