r"""LoRA in the DUAT form: seed 001 Eq. 17–18 (§4.4), seed 000 Eq. 16–17, seed 004 §4.4 (prose only).

Eq. 17, :math:`\mathbf h = W_0\mathbf x + \Delta W\mathbf x` with :math:`\Delta W = BA` of rank r, is an identity.

Eq. 18 claims that a LoRA update of the FFN's Linear maps changes the DUAT form (Eq. 11) to

.. math::
    \mathbf x_{i+1} = (\mathbf W'_{i+1,1}\mathbf x_0 + \mathbf b_{i+1,1}) + \sum_{j=1}^{i+1}
    (\mathbf W'_{j,3} + \Delta\mathbf W_{j+1,3}) + \sigma((\mathbf W'_{j,2} + \Delta\mathbf W_{j+1,2})\mathbf x'_0
    + \mathbf b'_{j,2}),

reading the Eq. 11 symbols as the derived table (:math:`\tilde A_L, \tilde c_L, \tilde U_j, \tilde V_j, \tilde\beta_j`).
What actually changes is *derived* here: the table of :func:`symuat.expansion.substitution_table` is
recomputed with :math:`\mathbf W'_{k,2}\to\mathbf W'_{k,2}+\Delta` (or :math:`\mathbf W'_{k,3}`) and every row
is unfolded and compared with the original (:func:`changed_rows`).  Result (depth 3, every k):

* update of :math:`\mathbf W'_{k,2}`: :math:`\tilde V_k` (by :math:`\Delta\tilde A_{k-1}`, not :math:`\Delta`),
  :math:`\tilde\beta_k` for k ≥ 2 (by :math:`\Delta(\tilde c_{k-1} + R_{k-1})`) and every later
  :math:`\tilde\beta_j`, j > k
  (through :math:`R_{j-1}`), and :math:`R_j` for :math:`j\ge k`;
* update of :math:`\mathbf W'_{k,3}`: :math:`\tilde U^{(i)}_k` for :math:`i\ge k` (by
  :math:`\mathbf W'_{i,1}\cdots\mathbf W'_{k+1,1}\Delta`), every later :math:`\tilde\beta_j`, j > k, and
  :math:`R_j`, j ≥ k.

So Eq. 18 is false as printed (the "+ σ" typo, the index j+1, the missing :math:`\tilde A_{k-1}` and
the unchanged :math:`\tilde\beta_j`); the corrected statement is proved by :func:`corrected_form`.
"""

from __future__ import annotations

import functools
from functools import lru_cache

import sympy

from symuat import Correction, Entry, Evidence, Identity, Level, OpaqueIdentity, Prose, Readings, Status, dims_grid
from symuat.expansion import (
    INPUT,
    A_name,
    R_name,
    SubstitutionTable,
    TableRow,
    U_name,
    V_name,
    beta_name,
    c_name,
    canonical_expand,
    layer_symbols,
    nc_symbol,
    nested_form,
    sigma,
    substitution_table,
)

from ._duat_common import eq20_reference

__all__ = ["delta", "updated_nested", "printed_eq18", "corrected_form", "changed_rows", "eq17", "entries"]

S = nc_symbol


def delta(k: int, which: int) -> sympy.Symbol:
    r"""The LoRA update :math:`\Delta\mathbf W'_{k,which}` (an opaque matrix, e.g. :math:`B A` mapped by Eq. 3)."""
    return S(rf"\Delta W'_{{{k},{which}}}")


def _update_map(depth: int, layers, which=(2, 3)) -> dict:
    out = {}
    for k in layers:
        s = layer_symbols(k)
        for w in which:
            W = s.W2 if w == 2 else s.W3
            out[W] = W + delta(k, w)
    return out


def updated_nested(depth: int, layers=None, which=(2, 3)) -> sympy.Expr:
    """The depth-``depth`` network (Eq. 20 composed) with W'_{k,2}, W'_{k,3} updated in ``layers`` (default: all)."""
    layers = range(1, depth + 1) if layers is None else layers
    return nested_form(depth).xreplace(_update_map(depth, layers, which))


@lru_cache(maxsize=None)
def _table(depth: int) -> SubstitutionTable:
    return substitution_table(depth)


def _unfold(depth: int, expr: sympy.Expr) -> sympy.Expr:
    return _table(depth).unfold(expr)


def _head(depth: int) -> sympy.Expr:
    return S(A_name(depth)) * INPUT + (S(c_name(depth)))


def printed_eq18(reading: str):
    r"""Eq. 18's right-hand side, the Eq. 11 symbols read as the derived table, under one reading of its typos.

    ``as printed``: ":math:`(\tilde U_j + \Delta_{j+1,3}) + \sigma(\dots)`" and index j+1;
    ``product``: "+ σ" read as a product; ``product, index j``: also :math:`\Delta W_{j+1,\cdot}\to\Delta W_{j,\cdot}`.
    """
    def rhs(depth: int) -> sympy.Expr:
        terms = []
        for j in range(1, depth + 1):
            k = j if reading == "product, index j" else j + 1
            U = S(U_name(j, depth)) + delta(k, 3)
            arg = (S(V_name(j)) + delta(k, 2)) * INPUT + S(beta_name(j))
            terms.append(U + sigma(arg) if reading == "as printed" else U * sigma(arg))
        return _unfold(depth, _head(depth) + sympy.Add(*terms))
    return rhs


def _chain(depth: int, j: int) -> sympy.Expr:
    r""":math:`\mathbf W'_{depth,1}\cdots\mathbf W'_{j+1,1}` (1 if j = depth)."""
    return sympy.Mul(*[layer_symbols(m).W1 for m in range(depth, j, -1)])


def corrected_form(depth: int, layers=None, which=(2, 3)) -> sympy.Expr:
    r"""The DUAT form of the updated network, built from the ORIGINAL table's names plus explicit corrections.

    .. math::
        \tilde U^{\Delta(i)}_j = \tilde U^{(i)}_j + \mathbf W'_{i,1}\cdots\mathbf W'_{j+1,1}\Delta_{j,3},\quad
        \tilde V^\Delta_j = \tilde V_j + \Delta_{j,2}\tilde A_{j-1},\quad
        \tilde\beta^\Delta_j = \tilde\beta_j + \mathbf W'_{j,2}(R^\Delta_{j-1} - R_{j-1})
        + \Delta_{j,2}(\tilde c_{j-1} + R^\Delta_{j-1}),

    :math:`R^\Delta_i = \sum_{m\le i}\tilde U^{\Delta(i)}_m\sigma(\tilde V^\Delta_m\mathbf x'_0+\tilde\beta^\Delta_m)`;
    :math:`\tilde A`, :math:`\tilde c` unchanged.  Unfolded with the original table.
    """
    layers = set(range(1, depth + 1) if layers is None else layers)
    d2 = {j: (delta(j, 2) if (j in layers and 2 in which) else sympy.S.Zero) for j in range(1, depth + 1)}
    d3 = {j: (delta(j, 3) if (j in layers and 3 in which) else sympy.S.Zero) for j in range(1, depth + 1)}
    A = {0: sympy.S.One, **{j: S(A_name(j)) for j in range(1, depth + 1)}}
    c = {0: sympy.S.Zero, **{j: S(c_name(j)) for j in range(1, depth + 1)}}
    R = {0: sympy.S.Zero, **{j: S(R_name(j)) for j in range(1, depth + 1)}}
    V, beta, RD = {}, {}, {0: sympy.S.Zero}
    for j in range(1, depth + 1):
        V[j] = S(V_name(j)) + d2[j] * A[j - 1]
        beta[j] = (S(beta_name(j)) + layer_symbols(j).W2 * (RD[j - 1] - R[j - 1]) + d2[j] * (c[j - 1] + RD[j - 1]))
        RD[j] = sympy.Add(*[(S(U_name(m, j)) + _chain(j, m) * d3[m]) * sigma(V[m] * INPUT + beta[m])
                            for m in range(1, j + 1)])
    return _unfold(depth, _head(depth) + RD[depth])


def _reference(layers=None, which=(2, 3)):
    def ref(a, depth):
        upd = dict(a)
        for k in (range(1, depth + 1) if layers is None else layers):
            for w in which:
                upd[f"W'_{{{k},{w}}}"] = a[f"W'_{{{k},{w}}}"] + a.get(rf"\Delta W'_{{{k},{w}}}", 0.0)
        return eq20_reference(upd, depth)
    return ref


def _opaque(rhs, cases=(1, 2, 3), layers=None, which=(2, 3)) -> OpaqueIdentity:
    return OpaqueIdentity(lhs=lambda d: updated_nested(d, layers, which), rhs=rhs, cases=cases,
                          reference=_reference(layers, which), width=3,
                          scope="lhs: the nested network (Eq. 20 composed) with every layer's $W'_{k,2}$, $W'_{k,3}$ "
                                r"replaced by $W'_{k,2} + \Delta W'_{k,2}$, $W'_{k,3} + \Delta W'_{k,3}$.")


def changed_rows(depth: int, k: int, which: int) -> tuple[str, ...]:
    r"""Names of the table rows whose *unfolded value* changes when :math:`\mathbf W'_{k,which}` gets
    :math:`+\Delta`."""
    t = _table(depth)
    upd = _update_map(depth, [k], (which,))
    new = SubstitutionTable(depth, tuple(TableRow(r.name, r.definition.xreplace(upd), r.layer, r.kind) for r in t.rows))
    out = []
    for r in t.rows:
        if r.definition.is_Number:
            continue
        if canonical_expand(new.unfold(S(r.name)) - t.unfold(S(r.name))) != 0:
            out.append(r.name)
    return tuple(out)


def _predicted(depth: int, k: int, which: int) -> set[str]:
    later = {beta_name(j) for j in range(k + 1, depth + 1)} | {R_name(j) for j in range(k, depth + 1)}
    if which == 2:
        return later | {V_name(k)} | ({beta_name(k)} if k > 1 else set())  # β̃_1 = b'_{1,2}: c̃_0 = R_0 = 0
    return later | {U_name(k, i) for i in range(k, depth + 1)}


def _changes_proxy(seed: int) -> tuple[Evidence, ...]:
    depth, out = 3, []
    for which in (2, 3):
        for k in range(1, depth + 1):
            got = changed_rows(depth, k, which)
            out.append(Evidence(Level.SYMBOLIC, set(got) == _predicted(depth, k, which),
                                f"depth {depth}, W'_{{{k},{which}}} += Δ: the table rows whose unfolded value changes "
                                f"are {', '.join(got)}"))
    return tuple(out)


@functools.cache
def eq17() -> Identity:
    r"""Eq. 17 with :math:`\Delta W = BA`: :math:`(W_0 + BA)\mathbf x = W_0\mathbf x + BA\mathbf x`."""
    return Identity(shapes={"W0": ("m", "n"), "B": ("m", "r"), "A": ("r", "n"), "x": ("n", 1)},
                    lhs=lambda W0, B, A, x: (W0 + B * A) * x,
                    rhs=lambda W0, x, B, A: W0 * x + B * A * x,
                    dims=dims_grid(m=(1, 2, 3), n=(1, 2, 3), r=(1, 2)),
                    reference=lambda W0, B, A, x: (W0 + B @ A) @ x, random_dims={"m": 5, "n": 4, "r": 2},
                    scope=r"$h = (W_0 + \Delta W)$ x with $\Delta W$ = BA of rank $\le$ r (Hu et al. 2021).")


_EQ17 = r"\mathbf{h} = \mathbf{W}_0 \mathbf{x} + \Delta \mathbf{W} \mathbf{x}"
_EQ18 = (r"\mathbf{x}_{i+1} = (\mathbf{W}'_{i+1,1}\mathbf{x}_0 + \mathbf{b}_{i+1,1}) + \sum_{j=1}^{i+1} "
         r"(\mathbf{W}'_{j,3} + \Delta \mathbf{W}_{j+1,3}) + \sigma((\mathbf{W}'_{j,2} + \Delta \mathbf{W}_{j+1,2})"
         r"\mathbf{x}'_0 + \mathbf{b}'_{j,2})")
_FIX = (r"\mathbf{x}'_{L} = \tilde A_L\mathbf{x}'_0 + \tilde c_L + \sum_{j=1}^{L}\big(\tilde U^{(L)}_j + "
        r"\mathbf{W}'_{L,1}\cdots\mathbf{W}'_{j+1,1}\Delta\mathbf{W}'_{j,3}\big)\,\sigma\big((\tilde V_j + "
        r"\Delta\mathbf{W}'_{j,2}\tilde A_{j-1})\mathbf{x}'_0 + \tilde\beta^{\Delta}_j\big),\ "
        r"\tilde\beta^{\Delta}_j = \tilde\beta_j + \mathbf{W}'_{j,2}(R^{\Delta}_{j-1} - R_{j-1}) + "
        r"\Delta\mathbf{W}'_{j,2}(\tilde c_{j-1} + R^{\Delta}_{j-1})")
_READ = ("the '+ σ' and the index j+1 of ΔW (Eq. 11 symbols read as the derived table Ã_L, c̃_L, Ũ_j, Ṽ_j, β̃_j; "
         "LoRA applied to W'_{k,2}, W'_{k,3} of every layer k)")
_NOTE18 = (r"Derived (duat:sec4.4.claim1): an update $\Delta$ of layer k's $W'_{k,2}$ changes $\tilde{V}_k$ by "
           r"$\Delta\tilde{A}_{k-1}$ (not by $\Delta$), $\tilde{\beta}_k$ ($k \ge 2$) by $\Delta(\tilde{c}_{k-1} + "
           r"R_{k-1})$ and every later $\tilde{\beta}_j$ (through $R_{j-1}$); an update of $W'_{k,3}$ changes "
           r"$\tilde{U}_k^{(L)}$ by $W'_{L,1}\cdots W'_{k+1,1}\Delta$ and every later $\tilde{\beta}_j$. Eq. 18 is "
           r"right only at depth 1 (with index j). In the paper's block $W'_{k,2} = (I\otimes W_1^{T})W'_{k,1}$ (Eq. "
           r"$30\to 31$), so a LoRA update of the FFN's first Linear enters as $(I\otimes\Delta W_1^{T})W'_{k,1}$: "
           r"input-dependent, not a static low-rank $\Delta$.")


def entries() -> list[Entry]:
    readings = Readings(_READ, {r: _opaque(printed_eq18(r)) for r in ("as printed", "product", "product, index j")})
    fix = Correction(_FIX, _opaque(corrected_form))
    layerwise = Prose("'Fine-tunes the DUAT parameters layer by layer' is qualitative. Proxy: the DUAT table is "
                      "recomputed with one layer's $W'_{k,2}$ or $W'_{k,3}$ updated and every row is compared "
                      "unfolded: the update is NOT confined to layer k's parameters; it changes the biases "
                      r"$\tilde{\beta}_j$ of every later layer $j > k$.", _changes_proxy)
    return [
        Entry("duat:eq17", "§4.4, Eq. 17", _EQ17, Status.PROVED, eq17()),
        Entry("uat-aaai:eq16", "§4.4, Eq. 16", _EQ17, Status.PROVED, eq17(), note="OCR 'h = Wox + $AWx'$."),
        Entry("duat:eq18", "§4.4, Eq. 18", _EQ18, Status.ERRATUM, readings, correction=fix, note=_NOTE18),
        Entry("uat-aaai:eq17", "§4.4, Eq. 17", _EQ18, Status.ERRATUM, readings, correction=fix,
              note="OCR garbled; the same display as the DUAT version Eq. 18, transcribed from there. " + _NOTE18),
        Entry("duat:sec4.4.claim1", "§4.4, text after Eq. 18",
              r"\text{LoRA essentially fine-tunes the DUAT parameters layer by layer for a specific task}",
              Status.PROSE, layerwise),
        Entry("uat-aaai:sec4.4.claim1", "§4.4, text after Eq. 17",
              r"\text{LoRA essentially fine-tunes the UAT parameters layer by layer for a specific task}",
              Status.PROSE, layerwise),
        Entry("uat-arxiv:sec4.4.claim1", "§4.4 and Figure 7",
              r"\text{LoRA fundamentally constitutes a layer-wise fine-tuning }(\mathbf{W}'_{amend})",
              Status.PROSE, layerwise, note="The UAT arXiv version has no LoRA equation; Figure 7 (an image) shows "
                                            "$W'_{amend}$."),
    ]
