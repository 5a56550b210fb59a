r"""Shared helpers for the DUAT ledger entries (seed 001 App. B.2–B.3, §3.3; seed 000 App. C).

Two kinds of printed statements are audited, with two different semantics.

**(a) Derivation steps.**  A printed step :math:`E_{k-1} = E_k` is an algebraic
identity between two consecutive printed expressions, every printed symbol an
opaque noncommutative symbol *exactly as printed* (the paper's overloaded names,
e.g. :math:`\mathbf W'_{i,1}` also meaning a cumulative product, are just
symbols; typos stay in).  :func:`step` builds the :class:`OpaqueIdentity`
``lhs = E_{k-1}``, ``rhs = E_k`` with the single case ``"generic"``; the float
level compares ``E_k`` with a hand-written NumPy evaluation of ``E_{k-1}``.

**(b) Substitution rules.**  A printed rule ("Setting …", "Let …", a parameter
list, a row of a Figure 2 box) *defines* a transformed quantity.  It is checked
semantically by :func:`semantic`: take the mechanically derived substitution
table of :func:`symuat.expansion.substitution_table` for depth ``L``, replace
only the row(s) that the printed rule defines by the printed rule (under a
reading of its right-hand side), unfold the DUAT form
:math:`\tilde A_L\mathbf x'_0 + \tilde c_L + R_L` and compare it with the naive
composition :func:`symuat.expansion.nested_form` of ``L`` residual layers
(Eq. 20).  Cases are depths, smallest first, so the first failing depth is the
smallest counterexample; the float level compares with :func:`eq20_reference`,
a plain NumPy recursion of Eq. 20 that shares no code with the table.

Readings of a right-hand side symbol :math:`\mathbf W'_{m,k}` printed in the
box of layer ``n`` (:func:`printed`):

``transformed`` — the value *before this box*: the transformed (cumulative)
    value left by earlier boxes if layer ``m`` was already transformed
    (:math:`m < n`), the original layer parameter otherwise.  This is the
    Figure 2 caption: "the parameters on the right of the equations indicate
    the original values, while those on the left represent the transformed
    values.  There is no specific order of calculation within each dashed box,
    but there is a top-to-bottom order between boxes";
``original`` — every right-hand side symbol is the original layer parameter.

Within one box (one "Setting …"/"Let …" sentence) the rules are read as
simultaneous substitutions, as the caption says; the in-printed-order reading
is mentioned in the entries' notes where it would matter.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from functools import lru_cache

import numpy as np
import sympy

from symuat import OpaqueIdentity
from symuat.evidence.fields import logistic
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

__all__ = [
    "verbatim",
    "S", "L", "sig", "INPUT", "sigma", "table", "printed", "overridden", "semantic", "step",
    "eq20_reference", "block_reference", "READ_T", "READ_O", "CAPTION",
]

S = nc_symbol
L = layer_symbols
READ_T = "transformed"
READ_O = "original"
CAPTION = ("whether a right-hand side symbol is the value before this box (transformed by earlier boxes; "
           "the Figure 2 caption) or the original layer parameter")


#: The logistic sigma used by the float level (shared with :class:`symuat.evidence.fields.RealField`).
sig = logistic


@lru_cache(maxsize=None)
def table(depth: int) -> SubstitutionTable:
    """The mechanically derived substitution table (cached)."""
    return substitution_table(depth)


@lru_cache(maxsize=None)
def _nested(depth: int) -> sympy.Expr:
    return canonical_expand(nested_form(depth))


def printed(kind: str, m: int, n: int, reading: str) -> sympy.Expr:
    r"""The value of the printed symbol of layer ``m`` (``kind`` in W1, W2, W3, b2, b3) in the box of layer ``n``.

    ``transformed``: for ``m < n`` the value after box ``n - 1`` (:math:`\tilde A_m`, :math:`\tilde V_m`,
    :math:`\tilde U^{(n-1)}_m`, :math:`\tilde c_m`, :math:`\tilde\beta_m`); ``original``: the layer symbol.
    ``m = 0`` gives the box-0 values (:math:`\tilde A_0 = I`, :math:`\tilde c_0 = 0`) under ``transformed``
    and a fresh symbol (the printed :math:`\mathbf b'_{0,3}`) under ``original``.
    """
    if reading == READ_O or m >= n:
        if m == 0:
            return S({"W1": "W'_{0,1}", "W2": "W'_{0,2}", "W3": "W'_{0,3}", "b2": "b'_{0,2}",
                      "b3": "b'_{0,3}"}[kind])
        return getattr(L(m), kind)
    if reading != READ_T:
        raise ValueError(f"unknown reading {reading!r}")
    if m == 0:
        return {"W1": sympy.S.One, "b3": sympy.S.Zero}[kind]
    name = {"W1": A_name(m), "W2": V_name(m), "W3": U_name(m, n - 1), "b2": beta_name(m), "b3": c_name(m)}[kind]
    return S(name)


Overrides = Callable[[int], Mapping[str, sympy.Expr]]


def overridden(depth: int, overrides: Mapping[str, sympy.Expr]) -> SubstitutionTable:
    """The depth-``depth`` table with the rows named in ``overrides`` replaced (layer/box kept)."""
    t = table(depth)
    rows = tuple(TableRow(r.name, sympy.sympify(overrides[r.name]), r.layer, r.kind) if r.name in overrides else r
                 for r in t.rows)
    unknown = set(overrides) - set(t.names)
    if unknown:
        raise KeyError(f"overrides name rows that do not exist at depth {depth}: {sorted(unknown)}")
    return SubstitutionTable(depth, rows)


def duat_form(depth: int, overrides: Mapping[str, sympy.Expr] | None = None) -> sympy.Expr:
    """The DUAT form of depth ``depth`` unfolded to layer symbols, with ``overrides`` applied."""
    t = overridden(depth, overrides or {})
    return t.unfold(t.form())


def eq20_reference(a: Mapping[str, np.ndarray], depth: int) -> np.ndarray:
    """Plain NumPy Eq. 20 recursion x_i = W'_{i,1} x + b'_{i,3} + W'_{i,3} sig(W'_{i,2} x + b'_{i,2})."""
    x = a["x'_{0}"]
    for i in range(1, depth + 1):
        W1, W2, W3 = (a[f"W'_{{{i},{k}}}"] for k in (1, 2, 3))
        x = W1 @ x + a[f"b'_{{{i},3}}"] + W3 @ sig(W2 @ x + a[f"b'_{{{i},2}}"])
    return x


def block_reference(a: Mapping[str, np.ndarray], depth: int) -> np.ndarray:
    """Plain NumPy stack of the paper's Transformer block: h = W'_{i,1} x, x_i = h + W'_{i,3} sig(W'_{i,2} h +
    b'_{i,2}) + b'_{i,3}."""
    x = a["x'_{0}"]
    for i in range(1, depth + 1):
        h = a[f"W'_{{{i},1}}"] @ x
        x = h + a[f"W'_{{{i},3}}"] @ sig(a[f"W'_{{{i},2}}"] @ h + a[f"b'_{{{i},2}}"]) + a[f"b'_{{{i},3}}"]
    return x


def semantic(overrides: Overrides | None = None, cases: tuple[int, ...] = (1, 2, 3),
             form: Callable[[int], sympy.Expr] | None = None, scope: str = "") -> OpaqueIdentity:
    r"""Semantic check of printed substitution rules: nested Eq. 20 network == DUAT form with the rules.

    ``overrides(depth)`` maps table row names to the printed rule (under one reading); ``form(depth)``,
    if given, replaces the table's unfolded DUAT form altogether (for printed *forms* such as Eq. 11).
    """
    def rhs(depth: int) -> sympy.Expr:
        if form is not None:
            return form(depth)
        return duat_form(depth, overrides(depth) if overrides is not None else {})

    return OpaqueIdentity(lhs=_nested, rhs=rhs, cases=tuple(cases), reference=eq20_reference,
                          scope=scope or "Semantic check: the printed rule replaces its row(s) of the derived "
                                         "substitution table; the unfolded DUAT form is compared with the "
                                         "nested Eq. 20 network.")


@functools.cache
def step(lhs: sympy.Expr, rhs: sympy.Expr, reference: Callable[[Mapping[str, np.ndarray]], np.ndarray],
         scope: str = "") -> OpaqueIdentity:
    """A printed derivation step E_{k-1} = E_k (every printed symbol opaque, exactly as printed)."""
    return OpaqueIdentity(lhs=lambda c: lhs, rhs=lambda c: rhs, cases=("generic",),
                          reference=lambda a, c: reference(a), scope=scope)


def table_map(depth: int) -> dict[str, sympy.Expr]:
    r"""The printed symbols of a DUAT form (Eq. 11/33 style) mapped to the table's transformed values.

    Keys: ``A`` (:math:`\mathbf W'_{L,1}`), ``c`` (the main-term bias), ``U{j}``, ``V{j}``, ``beta{j}``.
    """
    t = table(depth)
    out = {"A": t.ref(A_name(depth)), "c": t.ref(c_name(depth))}
    for j in range(1, depth + 1):
        out[f"U{j}"] = S(U_name(j, depth))
        out[f"V{j}"] = S(V_name(j))
        out[f"beta{j}"] = S(beta_name(j))
    return out


def unfold(depth: int, expr: sympy.Expr) -> sympy.Expr:
    """Unfold table names in ``expr`` with the (unmodified) depth-``depth`` table."""
    return table(depth).unfold(expr)


def R_sym(i) -> sympy.Symbol:
    r"""The paper's :math:`UAT^R_i` as an opaque vector symbol (named like the table's :math:`R_i`)."""
    return S(R_name(i) if isinstance(i, int) else f"R_{{{i}}}")


def W(i, k) -> sympy.Symbol:
    r"""The printed :math:`\mathbf W'_{i,k}` (``i`` an int or a string such as ``"i+1"``)."""
    return S(f"W'_{{{i},{k}}}")


def b(i, k) -> sympy.Symbol:
    r"""The printed :math:`\mathbf b'_{i,k}`."""
    return S(f"b'_{{{i},{k}}}")


def Wu(i, k) -> sympy.Symbol:
    r"""The printed *unprimed* :math:`\mathbf W_{i,k}`."""
    return S(f"W_{{{i},{k}}}")


def bu(i, k) -> sympy.Symbol:
    r"""The printed *unprimed* :math:`\mathbf b_{i,k}`."""
    return S(f"b_{{{i},{k}}}")


def readings(make: Callable[[str], OpaqueIdentity], convention: str = CAPTION):
    """A :class:`symuat.Readings` with the ``transformed`` (caption) and ``original`` readings."""
    from symuat import Readings
    return Readings(convention, {READ_T: make(READ_T), READ_O: make(READ_O)})


def dependency_proxy(depth: int, dynamic: frozenset, names: Mapping[str, str]) -> dict[str, bool]:
    """For each table name (label -> name), whether its unfolded value depends on a dynamic layer
    parameter (``dynamic`` ⊂ {W1, W2, W3, b2, b3}) or on the input x'_0 (through a sigma)."""
    t = table(depth)
    dyn_syms = {getattr(L(i), k) for i in range(1, depth + 1) for k in dynamic}
    out = {}
    for label, name in names.items():
        free = t.unfold(S(name)).free_symbols
        out[label] = bool(free & (dyn_syms | {INPUT}))
    return out


_VERBATIM = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "_": r"\_", "^": r"\^{}", "%": r"\%", "$": r"\$",
             "#": r"\#", "&": r"\&", "~": r"\~{}"}


def verbatim(text: str) -> str:
    r"""``text`` (e.g. garbled OCR) as LaTeX text-mode typewriter, every special character escaped.

    >>> verbatim("b}_ %3")
    '\\texttt{b\\}\\_ \\%3}'
    """
    return r"\texttt{" + "".join(_VERBATIM.get(ch, ch) for ch in text) + "}"
