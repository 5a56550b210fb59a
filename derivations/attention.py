r"""MHA as a matrix–vector product: seed 001 Eq. 7, 8 (steps 3–4), 9, 10, Figures 5–6, App. A Figure 1;
seed 004 §3.4 Eq. 6, 8 and App. B.2; seed 000 §3.4 and App. B.

The attention matrices :math:`H_i` are parameters (symbols), so every identity is
polynomial and checked at all three levels.  The left-hand sides are the paper's
layer computed directly (:class:`~symuat.layers.attention.PaperMultiHeadAttention`,
and a NumPy copy for the float level); the right-hand sides are the matrices derived
by :class:`~symuat.layers.attention.MultiHeadAttention` after the reduction
:meth:`~symuat.layers.attention.PaperMultiHeadAttention.as_standard`.

The paper writes every map as :math:`(W')^T x'` and later renames :math:`(W')^T` to
:math:`W'` (Eq. 10).  Where a printed product of such matrices depends on which of the
two is meant, the entry is a :class:`~symuat.Readings` with both.
"""

from __future__ import annotations

import functools

import numpy as np

from symuat import Correction, Entry, Identity, Readings, Status, diamond, dims_grid, vec_r
from symuat.algebra.families import family_of, family_shapes
from symuat.algebra.matrices import identity_matrix, kron, unvec_r
from symuat.errors import ShapeError
from symuat.layers.attention import PaperMultiHeadAttention

from ._coq_links import linked

__all__ = ["entries", "composition", "figure5", "head_block", "kron_transpose", "output_projection", "reduction",
           "value_form", "values_definition", "whole_layer"]

_GRID = dims_grid(h=(1, 2), N=(1, 2), m=(1, 2), d=(1, 2))
_SQUARE = dims_grid(h=(1, 2), N=(1, 2), m=(1, 2))  # head value width d = m (the paper's M/h -> M/h)
_RANDOM = {"h": 2, "N": 3, "m": 2, "d": 3}
_SCOPE = ("$H_i$ are free symbol matrices (parameters); every entry is a polynomial identity, so the grid covers "
          r"every index pattern with up to 2 heads, N, m, $d \le 2$.")


def _shapes(d):
    h, N, m = d["h"], d["N"], d["m"]
    dv = d.get("d", m)
    return {"X": (N, h * m), "WO": (h * dv, h * m), **family_shapes("H", h, N, N), **family_shapes("WV", h, m, dv)}


def _paper(e, d) -> PaperMultiHeadAttention:
    return PaperMultiHeadAttention(family_of(e, "H", d["h"]), family_of(e, "WV", d["h"]), e["WO"])


def _np_heads(a, d) -> np.ndarray:
    """Concat(H_i x_i W_Vi) in NumPy, the paper's Eq. 8 read directly."""
    h, m = d["h"], d["m"]
    return np.hstack([a[f"H{i + 1}"] @ a["X"][:, i * m:(i + 1) * m] @ a[f"WV{i + 1}"] for i in range(h)])


def _np_mha(a, d) -> np.ndarray:
    return (_np_heads(a, d) @ a["WO"]).reshape(-1)


def _identity(lhs, rhs, reference, square=False) -> Identity:
    return Identity(shapes=_shapes, lhs=lhs, rhs=rhs, dims=_SQUARE if square else _GRID, reference=reference,
                    random_dims={"h": 2, "N": 3, "m": 2} if square else _RANDOM, scope=_SCOPE)


def _x(e):
    return vec_r(e["X"])


# --- the identities -------------------------------------------------------------------------------

@functools.cache
def reduction() -> Identity:
    r"""Eq. 7: the paper's MHA (heads see x_i only) equals the standard MHA with W_V = diag(W_V1..W_Vh)."""
    return _identity(lambda e, d: _paper(e, d).apply(e["X"]),
                     lambda e, d: _paper(e, d).as_standard().apply(e["X"]),
                     lambda a, d: _np_mha(a, d))


def head_block() -> Identity:
    r"""Eq. 8 last step: H_i[x_i W_Vi] is the i-th column block of unvec_r(W'_HV x') (Figure 5)."""
    def derived(e, d):
        Hhat = unvec_r(_paper(e, d).as_standard().W_HV() * _x(e), d["N"], d["h"] * d.get("d", d["m"]))
        return Hhat[:, :d.get("d", d["m"])]
    return _identity(lambda H1, X, WV1, m: H1 * (X[:, :m] * WV1), derived,
                     lambda H1, X, m, WV1: H1 @ X[:, :m] @ WV1)


def values_definition() -> Identity:
    r"""Eq. 8 step 3: H_i V_i = H_i[x_i W_Vi] with V_i := x_i W_Vi (printed inside Attention(...))."""
    def V1(X, WV1, m):
        return X[:, :m] * WV1
    return _identity(lambda H1, X, WV1, m: H1 * V1(X, WV1, m), lambda H1, X, m, WV1: H1 * (X[:, :m] * WV1),
                     lambda H1, X, m, WV1: H1 @ (X[:, :m] @ WV1))


@functools.cache
def figure5(transpose_output: bool = False) -> Identity:
    r"""Figure 5: (W'_HV)^T x' = Ĥ' with (W'_HV)^T the derived W_HV; ``transpose_output``: the text's (Ĥ')^T."""
    def lhs(e, d):
        out = vec_r(_paper(e, d).concat(e["X"]))
        return out.T if transpose_output else out
    return _identity(lhs, lambda e, d: _paper(e, d).as_standard().W_HV() * _x(e),
                     lambda a, d: _np_heads(a, d).reshape(-1))


@functools.cache
def output_projection(printed_rhs_is_input: bool = False) -> Identity:
    r"""Figure 6.b: (W'_O)^T Ĥ' = H̊', (W'_O)^T = I_N ⊗ W_O^T; ``printed_rhs_is_input``: the printed '= Ĥ''."""
    def Hhat(e, d):
        return _paper(e, d).concat(e["X"])
    lhs = (lambda e, d: vec_r(Hhat(e, d))) if printed_rhs_is_input else (lambda e, d: vec_r(Hhat(e, d) * e["WO"]))
    ref = (lambda a, d: _np_heads(a, d).reshape(-1)) if printed_rhs_is_input else _np_mha
    return _identity(lhs, lambda e, d: _paper(e, d).as_standard().W_O_prime() * vec_r(Hhat(e, d)), ref,
                     square=True)


@functools.cache
def whole_layer(closed_form: bool = False) -> Identity:
    r"""Eq. 9/10: H̊' = W'_HVO x' with W'_HVO = W'_O W'_HV (Eq. 9) or Σ_h H_h ⊗ (W_Vh W_Oh)^T (Eq. 10)."""
    def rhs(e, d):
        std = _paper(e, d).as_standard()
        return (std.W_HVO_closed_form() if closed_form else std.W_HVO()) * _x(e)
    return _identity(lambda e, d: vec_r(_paper(e, d).apply(e["X"])), rhs, _np_mha)


def _literal_product(e, d, order: str):
    std = _paper(e, d).as_standard()
    HV_paper, O_paper = std.W_HV().T, std.W_O_prime().T  # the paper's W': (W')^T x' is the map
    if order == "paper-literal":       # W'_HVO = W'_O W'_HV, then (W'_HVO)^T x'
        return (O_paper * HV_paper).T * _x(e)
    if order == "renamed":             # W' stands for the map itself (Eq. 10 renaming)
        return std.W_O_prime() * std.W_HV() * _x(e)
    if order == "diamond-TN":          # seed 004: W'_HVO = W'_WH^T ◇ W'_O with A ◇ B = A^T B, then W'_HVO ◇ x'
        A = HV_paper.T
        return diamond(A.T * O_paper, _x(e))
    if order == "diamond-NN":          # A ◇ B = A B
        return diamond(HV_paper.T * O_paper, _x(e))
    raise ValueError(order)


@functools.cache
def composition(order: str) -> Identity:
    return _identity(lambda e, d: vec_r(_paper(e, d).apply(e["X"])), lambda e, d: _literal_product(e, d, order),
                     _np_mha, square=True)


@functools.cache
def value_form(transposed: bool) -> Identity:
    r"""App. A Fig. 1 caption W'_HV x' = Ĥ': W'_HV is Figure 5's matrix (``transposed``) or the renamed map."""
    def rhs(e, d):
        W = _paper(e, d).as_standard().W_HV()
        return (W.T if transposed else W) * _x(e)
    return _identity(lambda e, d: vec_r(_paper(e, d).concat(e["X"])), rhs,
                     lambda a, d: _np_heads(a, d).reshape(-1), square=True)


def kron_transpose() -> Identity:
    r"""App. A Fig. 1.d.3→d.4: [H'_i W'_Vi]^T x'_i = (H'_i)^T [W'_Vi]^T x'_i, H' = H^T ⊗ I_m, W' = I_N ⊗ W_V."""
    def lifts(H1, WV1, N, m):
        return kron(H1.T, identity_matrix(m)), kron(identity_matrix(N), WV1)

    def lhs(H1, WV1, X, N, m):
        Hp, Wp = lifts(H1, WV1, N, m)
        return (Hp * Wp).T * vec_r(X[:, :m])

    def rhs(H1, WV1, X, N, m):
        Hp, Wp = lifts(H1, WV1, N, m)
        if Hp.shape[1] != Wp.T.shape[0]:
            raise ShapeError(f"(H')^T is {Hp.T.shape} and (W'_V)^T is {Wp.T.shape}: the product is undefined")
        return Hp.T * Wp.T * vec_r(X[:, :m])
    return lhs, rhs


def _kron_transpose(dims, random_dims) -> Identity:
    lhs, rhs = kron_transpose()
    return Identity(shapes=_shapes, lhs=lhs, rhs=rhs, dims=dims, random_dims=random_dims,
                    reference=lambda H1, X, m, WV1: H1 @ X[:, :m] @ WV1, scope=_SCOPE)


# --- the ledger -----------------------------------------------------------------------------------

_EQ7 = (r"\mathbf{\mathring{H}} = \text{MultiHead}(\mathbf{Q}, \mathbf{K}, \mathbf{V}) = \text{Concat}\left("
        r"\mathbf{\hat{H}}_{1}, \dots, \mathbf{\hat{H}}_{h}\right) \mathbf{W}_{O} = \mathbf{\hat{H}} \mathbf{W}_{O}")
_EQ9 = r"\mathring{\mathbf{H}}' = (\mathbf{W}'_{HVO})^T \mathbf{x}'"
_EQ10 = r"\mathring{\mathbf{H}}' = \mathbf{W}' \mathbf{x}'"
_FIG5 = r"(\mathbf{W}'_{HV})^T\mathbf{x}' = \hat{\mathbf{H}}'"
_FIG6 = (r"(\mathbf{W}'_{HVO})^T\mathbf{x}' = \mathring{\mathbf{H}}',\quad "
         r"\mathbf{W}'_{HVO} = \mathbf{W}'_O\mathbf{W}'_{HV}")
_CONV = "which matrix W' names: the paper's (W')^T x' form (Fig. 5-6) or the map itself after the Eq. 10 renaming"
_RENAMED_NOTE = (r"Literally, $(W'_{HV})^T x' = \hat{H}'$ and $(W'_O)^T \hat{H}' = \mathring{H}'$ give $\mathring{H}' "
                 "= (W'_{HV} W'_O)^T x'$, so the product in the transposed notation is $W'_{HV} W'_O$; $W'_O "
                 "W'_{HV}$ is right only for the maps themselves ($y' = W'x'$, the Eq. 10 renaming). Closed form: "
                 r"$\sum_h H_h \otimes(W_{Vh} W_{Oh})^T$.")


def _readings(**named) -> Readings:
    return Readings(_CONV, named)


def _entries() -> list[Entry]:
    eq7_note = (r"MultiHead is read as the standard layer $\sum_h H_h X W_{V,h} W_{O,h}$ with $H_h$ parameters; the "
                r"paper's heads see only $x_i$ ($X$ split by columns), which is the standard layer with block-diagonal "
                r"$W_V = \operatorname{diag}(W_{V,1}, \dots, W_{V,h})$: proved. $\hat{H}$ is the concatenation (its "
                "definition).")
    fig6_lit = composition("paper-literal")
    return [
        Entry("duat:eq7", "Eq. 7", _EQ7, Status.PROVED, reduction(), note=eq7_note),
        Entry("duat:eq8.step3", "Eq. 8, third equality",
              r"\mathbf{H}_{i}\mathbf{V}_{i} = \mathbf{H}_{i}[\mathbf{x}_{i}\mathbf{W}_{Vi}]",
              Status.PROVED, values_definition(), note="$V_i$ := $x_i W_{Vi}$ is printed inside Attention(...) of "
                                                       "Eq. 8."),
        Entry("duat:eq8.step4", "Eq. 8, last equality",
              r"\mathbf{H}_{i}[\mathbf{x}_{i}\mathbf{W}_{Vi}] = \hat{\mathbf{H}}_{i}", Status.PROVED, head_block(),
              note=r"$\hat{H}_i$ is taken as the i-th column block of $unvec_r(W'_{HV} x')$ (Figure 5), checked for "
                   "$i = 1$."),
        Entry("duat:eq9", "Eq. 9", _EQ9, Status.PROVED, whole_layer(),
              note=r"$(W'_{HVO})^T$ is the paper's name for the map, = $I_N\otimes W_O^T \cdot\sum_h H_h\otimes(P_h "
                   r"W_V^T)$. The text writes $x \in R^{(NM,1)}$ for $x'$; $W'_{HVO} \in R^{(NM,NM)}$ needs $W_O$ to "
                   "map back to width M (as here)."),
        Entry("duat:eq10", "Eq. 10", _EQ10, Status.PROVED, whole_layer(closed_form=True),
              note=r"$W'$ := $(W'_{HVO})^T = \sum_h H_h \otimes(W_{Vh} W_{Oh})^T$, the closed form the paper leaves "
                   "uncomputed."),
        Entry("duat:fig5", "Figure 5 caption", _FIG5, Status.PROVED, figure5(),
              note=r"($W'_{HV})^T = \sum_h H_h \otimes(P_h W_V^T$) for the block-diagonal $W_V$ of the paper's heads. "
                   "Figure 5 is an image; the worked example is "
                   r"symuat.layers.\texttt{attention\_figures}.\texttt{figure5\_example}."),
        Entry("duat:sec3.2.claim1", "§3.2, text before Figure 5",
              r"(\mathbf{W}'_{HV})^T\mathbf{x}' = (\hat{\mathbf{H}}')^T", Status.ERRATUM, figure5(True),
              correction=Correction(_FIG5, figure5()),
              note=r"$\hat{H}'$ is a column vector, so $(\hat{H}')^T$ is a row: the two sides agree only for $N\cdot "
                   "M = 1$."),
        Entry("duat:fig6.part1", "§3.2, text on Figure 6.b",
              r"(\mathbf{W}'_O)^T\hat{\mathbf{H}}' = \hat{\mathbf{H}}'", Status.ERRATUM,
              output_projection(printed_rhs_is_input=True),
              correction=Correction(r"(\mathbf{W}'_O)^T\hat{\mathbf{H}}' = \mathring{\mathbf{H}}',\ "
                                    r"(\mathbf{W}'_O)^T = \mathbf{I}_N\otimes\mathbf{W}_O^T", output_projection()),
              note=r"As printed the output projection maps $\hat{H}'$ to itself; Figure 6's caption and the UAT arXiv "
                   r"version print $\mathring{H}'$ on the right (a hat/ring slip). The same sentence prints "
                   r"$(W'_{HVO})^T x' = \hat{H}'$."),
        Entry("duat:fig6", "§3.2 and Figure 6 caption", _FIG6, Status.CONVENTION,
              _readings(**{"paper-literal": fig6_lit, "renamed": composition("renamed")}), note=_RENAMED_NOTE),
        Entry("duat:appA.fig1", "App. A, Figure 1 caption",
              r"\mathbf{W}'_{HV}\mathbf{x}'=\hat{\mathbf{H}}'", Status.CONVENTION,
              _readings(**{"as-figure5": value_form(True), "renamed": value_form(False)}),
              note=r"Figure 5 prints $(W'_{HV})^T x' = \hat{H}'$ for the same matrix; the caption drops the "
                   "transpose, which is right only after the Eq. 10 renaming."),
        Entry("duat:appA.fig1.part1", "App. A, Figure 1.d.3 → 1.d.4",
              r"[\mathbf{H}'_i\mathbf{W}'_{Vi}]^T\mathbf{x}'_i = (\mathbf{H}'_i)^T[\mathbf{W}'_{Vi}]^T\mathbf{x}'_i",
              Status.CONVENTION,
              Readings("head value width d = m (W_Vi square) or d != m",
                       {"d=m": _kron_transpose(_SQUARE, {"h": 2, "N": 3, "m": 2}),
                        "d!=m": _kron_transpose(dims_grid(h=(1,), N=(1, 2), m=(1, 2), d=(3,)),
                                                {"h": 1, "N": 2, "m": 2, "d": 3})}),
              note=r"Figure 1.d is an image: $H'_i = H_i^T \otimes I_m$ and $W'_{Vi} = I_N \otimes W_{Vi}$ are the "
                   r"lifts that make Fig. 1.d.3 true. $[AB]^T = A^T B^T$ holds here only because $H^T\otimes I$ and "
                   r"$I\otimes W_V$ commute, which needs $W_{Vi}$ square ($d = m$, the paper's setting); for $d \ne "
                   "m$ the right side is undefined."),
        # seed 004 (arXiv HTML)
        Entry("uat-arxiv:eq6", "§3.4, Eq. 6",
              r"\mathring{\mathbf{H}}=\operatorname{MultiHead}(\mathbf{Q},\mathbf{K},\mathbf{V})"
              r"=\operatorname{Concat}\left(\hat{\mathbf{H}}_{1},\ldots,\hat{\mathbf{H}}_{h}\right)\mathbf{W}_{O}",
              Status.PROVED, reduction(), note=eq7_note),
        Entry("uat-arxiv:eq8", "§3.4, Eq. 8",
              r"\mathring{\mathbf{H}}=(\mathbf{W}_{HVO}^{\prime})^{T}(\mathbf{x}_{i})^{\prime}", Status.PROVED,
              whole_layer(), note=r"$\mathring{H}$ stands for its vectorisation (the text says $\mathring{H} \in "
                                  "R^{(NM,1)}$); $x_i$ is the layer input here, not a head slice."),
        Entry("uat-arxiv:sec3.4.claim1", "§3.4, text before Eq. 8",
              r"\mathbf{W}_{HVO}^{\prime}\diamond\mathbf{x}^{\prime}=\mathring{\mathbf{H}}^{\prime},\quad "
              r"\mathbf{W}_{HVO}^{\prime}=\mathbf{W}_{WH}^{T}\diamond\mathbf{W}_{O}^{\prime}", Status.CONVENTION,
              Readings("the meaning of A◇B for two matrices (symuat.CHAIN_READINGS)",
                       {"A◇B=A^T B": composition("diamond-TN"), "A◇B=AB": composition("diamond-NN")}),
              note=r"$W_{WH}$ is read as $W'_{WH}$ (Figure 4: $W'_{WH} \diamond x' = \hat{H}'$; Figure 5.b: $\hat{H}' "
                   r"\diamond W'_O = \mathring{H}'$)."),
        Entry("uat-arxiv:appB.fig1", "App. B.2, Figure 1 caption",
              r"\mathbf{W}_{WH}^{\prime}\mathbf{x}^{\prime}=\hat{\mathbf{H}}^{\prime}", Status.CONVENTION,
              _readings(**{"as-figure4 (W'_WH ◇ x')": value_form(True), "renamed": value_form(False)}),
              note=r"§3.4 prints $W'_{WH} \diamond x' = \hat{H}'$ (= $(W'_{WH})^T x'$); the caption drops the "
                   r"$\diamond$."),
        # seed 000 (OCR)
        Entry("uat-aaai:eq9", "§3.4, Eq. 9", _EQ9, Status.PROVED, whole_layer(),
              note="OCR prints 'H' = (Wiyo)'x'; transcribed from the DUAT version Eq. 9, which is the same display."),
        Entry("uat-aaai:eq10", "§3.4, Eq. 10", _EQ10, Status.PROVED, whole_layer(closed_form=True),
              note="OCR prints 'H = W'¥/'; transcribed from the DUAT version Eq. 10."),
        Entry("uat-aaai:appB.fig1", "App. B, Figure 1 caption",
              r"\mathbf{W}'_{HV}\mathbf{x}'=\hat{\mathbf{H}}'", Status.CONVENTION,
              _readings(**{"as-figure4 (W'_HV ◇ x')": value_form(True), "renamed": value_form(False)}),
              note="OCR prints 'W, $x' = H''$; the subscript is lost, read as $W'_{HV}$ as in the DUAT version App. "
                   "A."),
    ]


def entries() -> list[Entry]:
    """The entries of this derivation, each with its Coq theorem where one states it (docs/coq.md)."""
    return linked(_entries())
