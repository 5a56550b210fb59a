r"""Substitution tables beyond the paper: gated FFNs, any block written in opaque symbols, input and final boxes.

The paper's table (:mod:`symuat.expansion.table`) is derived from Eq. 20.  Here the same mechanical
derivation runs on any *layer function* ``layer(i, x)`` that returns an expression in opaque
(noncommutative) symbols containing exactly one nonlinear application per layer, either
:math:`\sigma(a)` or the uninterpreted two-argument gate :math:`g(a, b)` (a gated FFN,
:math:`g(a, b) = \mathrm{act}(a)\odot b`).  The gated Eq. 20 is

.. math::
    \mathbf x'_i = \mathbf W'_{i,1}\mathbf x'_{i-1} + \mathbf b'_{i,3}
    + \mathbf W'_{i,3}\,g(\mathbf W'_{i,2}\mathbf x'_{i-1} + \mathbf b'_{i,2},\
    \mathbf W'_{i,4}\mathbf x'_{i-1} + \mathbf b'_{i,4}).

Box :math:`i` substitutes the named depth-:math:`(i-1)` form
:math:`\tilde A_{i-1}\mathbf x'_0 + \tilde c_{i-1} + R_{i-1}`, expands (also inside the arguments of
:math:`\sigma` and :math:`g`), unfolds :math:`R_{i-1}` outside the
nonlinearities only (Lemma 1, Eq. 19) and reads off :math:`\tilde A_i, \tilde c_i, \tilde U^{(i)}_j` and the
new application's arguments: :math:`\tilde V_i\mathbf x'_0 + \tilde\beta_i` and, for a gate,
:math:`\tilde P_i\mathbf x'_0 + \tilde\gamma_i`.  Optional boxes: an input transform
(box 0 :math:`\tilde A_0 = \mathbf W'_{0,1}`, :math:`\tilde c_0 = \mathbf b'_{0,3}` instead of :math:`I, 0`) and a
final affine box (a final norm, :math:`\mathbf W'_{L+1,1}\mathbf x'_L + \mathbf b'_{L+1,3}`, no new term).

>>> t = derive_table(2, gated_residual_term)
>>> t.table.definition(P_name(2))
W'_{2,4}*\tilde{A}_{1}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy

from ..errors import DerivationError
from .collect import canonical_expand, split_term
from .symbols import INPUT, check_depth, is_sigma, layer_symbols, nc_symbol, sigma
from .table import A_name, R_name, SubstitutionTable, TableRow, U_name, V_name, beta_name, c_name

__all__ = [
    "gate", "is_gate", "is_application", "P_name", "gamma_name", "gated_symbols", "gated_residual_term",
    "plain_residual_term", "affine_term", "INPUT_TRANSFORM", "ExtendedTable", "derive_table", "application",
    "encode_gate",
]

#: The uninterpreted two-argument gate :math:`g(a, b)` (a gated FFN: :math:`\mathrm{act}(a)\odot b`).
gate = sympy.Function("gate")

#: Box 0 of a stack with an input transform: :math:`\mathbf x'_{(0)} = \mathbf W'_{0,1}\mathbf x'_0 + \mathbf b'_{0,3}`.
INPUT_TRANSFORM = (nc_symbol("W'_{0,1}"), nc_symbol("b'_{0,3}"))

LayerFn = Callable[[object, sympy.Expr], sympy.Expr]


def is_gate(expr: sympy.Basic) -> bool:
    """Whether ``expr`` is an application :math:`g(\\cdot,\\cdot)` of the gate."""
    return isinstance(expr, sympy.Function) and expr.func == gate


def is_application(expr: sympy.Basic) -> bool:
    """Whether ``expr`` is a nonlinear application (:math:`\\sigma` or the gate)."""
    return is_sigma(expr) or is_gate(expr)


def P_name(i: int) -> str:
    r"""Name of :math:`\tilde P_i` (the gate's second, linear argument)."""
    return rf"\tilde{{P}}_{{{i}}}"


def gamma_name(i: int) -> str:
    r"""Name of :math:`\tilde\gamma_i`."""
    return rf"\tilde{{\gamma}}_{{{i}}}"


def gated_symbols(i: int | str) -> tuple[sympy.Symbol, sympy.Symbol]:
    r""":math:`(\mathbf W'_{i,4}, \mathbf b'_{i,4})`, the up projection of a gated layer."""
    s = layer_symbols(i)
    tag = s.W1.name[4:-3]
    return nc_symbol(f"W'_{{{tag},4}}"), nc_symbol(f"b'_{{{tag},4}}")


def plain_residual_term(i: int | str, x: sympy.Expr) -> sympy.Expr:
    r"""Eq. 20: :math:`\mathbf W'_{i,1}x + \mathbf b'_{i,3}
    + \mathbf W'_{i,3}\sigma(\mathbf W'_{i,2}x + \mathbf b'_{i,2})`."""
    s = layer_symbols(i)
    return s.W1 * x + s.b3 + s.W3 * sigma(s.W2 * x + s.b2)


def gated_residual_term(i: int | str, x: sympy.Expr) -> sympy.Expr:
    r"""The gated Eq. 20 (module docstring).

    >>> gated_residual_term(1, INPUT)
    W'_{1,1}*x'_{0} + W'_{1,3}*gate(W'_{1,2}*x'_{0} + b'_{1,2}, W'_{1,4}*x'_{0} + b'_{1,4}) + b'_{1,3}
    """
    s = layer_symbols(i)
    W4, b4 = gated_symbols(i)
    return s.W1 * x + s.b3 + s.W3 * gate(s.W2 * x + s.b2, W4 * x + b4)


def affine_term(i: int | str, x: sympy.Expr) -> sympy.Expr:
    r"""An affine box (a final norm): :math:`\mathbf W'_{i,1}x + \mathbf b'_{i,3}`."""
    s = layer_symbols(i)
    return s.W1 * x + s.b3


def application(j: int, gated: bool) -> sympy.Expr:
    r"""The named application of box :math:`j`: :math:`\sigma(\tilde V_j\mathbf x'_0 + \tilde\beta_j)` or
    :math:`g(\tilde V_j\mathbf x'_0 + \tilde\beta_j,\ \tilde P_j\mathbf x'_0 + \tilde\gamma_j)`."""
    a = nc_symbol(V_name(j)) * INPUT + nc_symbol(beta_name(j))
    if not gated:
        return sigma(a)
    return gate(a, nc_symbol(P_name(j)) * INPUT + nc_symbol(gamma_name(j)))


def encode_gate(expr: sympy.Expr, K: sympy.Symbol) -> sympy.Expr:
    r"""Replace every :math:`g(a, b)` by :math:`\sigma(a + Kb)` (inside out).

    With :math:`K` a fresh opaque matrix the map is injective on canonical expansions (the terms of
    :math:`Kb` are exactly those that start with :math:`K`), so an identity between expressions in
    :math:`g` holds iff its encoding holds; the encoding only uses :math:`\sigma`, which the exact and
    float evidence levels can evaluate.
    """
    return sympy.sympify(expr).replace(gate, lambda a, b: sigma(a + K * b))


def _split(expr: sympy.Expr, remainders: frozenset):
    """Read linear / bias / application / remainder coefficients off an expanded expression."""
    linear, bias, apps, rem = [], [], {}, {}
    for term in sympy.Add.make_args(expr):
        if term == 0:
            continue
        coeff, last = split_term(term)
        if any(f == INPUT for f in sympy.Mul.make_args(coeff)):
            raise DerivationError(f"term {term} is not affine in {INPUT} at top level")
        if last == INPUT:
            linear.append(coeff)
        elif last is not None and is_application(last):
            apps.setdefault(last, []).append(coeff)
        elif last is not None and last in remainders:
            rem.setdefault(last, []).append(coeff)
        else:
            bias.append(term)
    return sympy.Add(*linear), sympy.Add(*bias), apps, rem


def _arg_parts(arg: sympy.Expr, remainders: frozenset) -> tuple[sympy.Expr, sympy.Expr]:
    """``(linear, everything else)`` of an (expanded) application argument."""
    lin, bias, apps, rem = _split(arg, remainders)
    rest = [bias] + [sympy.Add(*c) * r for r, c in rem.items()] + [sympy.Add(*c) * a for a, c in apps.items()]
    return lin, sympy.Add(*rest)


@dataclass(frozen=True)
class ExtendedTable:
    r"""A derived table with its shape: ``table`` (boxes ``0..table.depth``), ``gated``, the boxes that
    add a term (``nonlinear``), whether box 0 is an input transform and whether the last box is affine."""

    table: SubstitutionTable
    gated: bool
    nonlinear: tuple[int, ...]
    input_transform: bool
    final_affine: bool

    @property
    def depth(self) -> int:
        """Number of boxes after box 0 (layers, plus one for a final affine box)."""
        return self.table.depth

    def form(self) -> sympy.Expr:
        r"""The DUAT form of the last box in named symbols."""
        return self.table.form()

    def application(self, j: int) -> sympy.Expr:
        """The named application of nonlinear box ``j``."""
        return application(j, self.gated)


def _box(i: int, defs: dict, layer: LayerFn, gated: bool, old: tuple[int, ...]) -> tuple[list, bool]:
    def ref(name: str) -> sympy.Expr:  # fold numeric definitions (box 0 without input transform)
        return defs[name] if defs[name].is_Number else nc_symbol(name)

    A_prev, c_prev, R_prev = ref(A_name(i - 1)), ref(c_name(i - 1)), ref(R_name(i - 1))
    R_def = defs[R_name(i - 1)]
    old_apps = {application(j, gated): j for j in old}
    remainders = frozenset({R_prev}) if isinstance(R_prev, sympy.Symbol) else frozenset()
    expanded = canonical_expand(layer(i, A_prev * INPUT + c_prev + R_prev))
    lin, bias, apps, rem = _split(expanded, remainders)
    for r, coeffs in rem.items():  # Lemma 1 (Eq. 19): M * R is a sum of terms
        for term_coeff, app in ((c, a) for a, cs in _split(canonical_expand(sympy.Add(*coeffs) * R_def),
                                                             frozenset())[2].items() for c in cs):
            apps.setdefault(app, []).append(term_coeff)
    new = [a for a in apps if a not in old_apps]
    if len(new) > 1:
        raise DerivationError(f"box {i}: expected at most one new nonlinear term, found {len(new)}")
    rows = [TableRow(A_name(i), lin, i, "matrix"), TableRow(c_name(i), bias, i, "vector")]
    rows += [TableRow(U_name(j, i), sympy.Add(*apps.get(application(j, gated), [])), i, "matrix") for j in old]
    if new:
        app = new[0]
        if is_gate(app) != gated:
            raise DerivationError(f"box {i}: a {'gate' if gated else 'sigma'} table met {app.func}")
        rows.append(TableRow(U_name(i, i), sympy.Add(*apps[app]), i, "matrix"))
        V, beta = _arg_parts(app.args[0], remainders)
        rows += [TableRow(V_name(i), V, i, "matrix"), TableRow(beta_name(i), beta, i, "vector")]
        if gated:
            P, gam = _arg_parts(app.args[1], remainders)
            rows += [TableRow(P_name(i), P, i, "matrix"), TableRow(gamma_name(i), gam, i, "vector")]
    terms = old + ((i,) if new else ())
    R_i = sympy.Add(*(nc_symbol(U_name(j, i)) * application(j, gated) for j in terms))
    rows.append(TableRow(R_name(i), R_i, i, "vector"))
    return rows, bool(new)


def derive_table(depth: int, layer: LayerFn = plain_residual_term, *, gated: bool | None = None,
                 input_transform: bool = False, final: LayerFn | None = None) -> ExtendedTable:
    r"""Derive the substitution table of ``depth`` layers ``layer(i, x)`` (plus optional boxes).

    Parameters
    ----------
    depth : int
        Number of layers :math:`L \ge 1`.
    layer : callable ``(i, x) -> sympy.Expr``
        One layer in opaque symbols with one :math:`\sigma` or gate application
        (:func:`plain_residual_term`, :func:`gated_residual_term`, or a block written out).
    gated : bool, optional
        Whether the applications are gates; default: detected from ``layer(1, x'_0)``.
    input_transform : bool
        Box 0 is :data:`INPUT_TRANSFORM` instead of :math:`\tilde A_0 = I, \tilde c_0 = 0`.
    final : callable, optional
        An affine box appended as box :math:`L+1` (e.g. :func:`affine_term`).

    Raises
    ------
    DerivationError
        If a box does not collect into DUAT shape.
    """
    depth = check_depth(depth)
    if gated is None:
        gated = any(is_gate(a) for a in sympy.sympify(layer(1, INPUT)).atoms(sympy.Function))
    T, t = INPUT_TRANSFORM if input_transform else (sympy.S.One, sympy.S.Zero)
    rows = [TableRow(A_name(0), T, 0, "matrix"), TableRow(c_name(0), t, 0, "vector"),
            TableRow(R_name(0), sympy.S.Zero, 0, "vector")]
    defs = {r.name: r.definition for r in rows}
    nonlinear: tuple[int, ...] = ()
    boxes = [(i, layer) for i in range(1, depth + 1)] + ([(depth + 1, final)] if final is not None else [])
    for i, fn in boxes:
        box, added = _box(i, defs, fn, gated, nonlinear)
        if fn is layer and not added:
            raise DerivationError(f"layer {i} adds no nonlinear term")
        if fn is final and added:
            raise DerivationError("the final box must be affine")
        nonlinear += (i,) if added else ()
        defs.update((r.name, r.definition) for r in box)
        rows.extend(box)
    return ExtendedTable(SubstitutionTable(boxes[-1][0], tuple(rows)), gated, nonlinear, input_transform,
                         final is not None)
