r"""Transformer blocks written in opaque block-level symbols, and their Eq. 20 parameters read off mechanically.

For layer :math:`i` (all symbols noncommutative and opaque; a norm at its actual input is the affine map
:math:`L_k x + \beta'_k`, an attention layer :math:`A x + a` with :math:`A = W'_{HVO}` dynamic):

=======================  ======================================
``W'_{i,HVO}``, ``b'_{i,HVO}``  :math:`A`, :math:`a` (Eq. 9–10)
``W'_{i,N1}``, ``b'_{i,N1}``    :math:`L_1`, :math:`\beta'_1`
``W'_{i,N2}``, ``b'_{i,N2}``    :math:`L_2`, :math:`\beta'_2`
``W'_{i,in}``, ``b'_{i,in}``    :math:`F_1` / :math:`F_g` (FFN input / gate projection)
``W'_{i,up}``, ``b'_{i,up}``    :math:`F_u` (gated FFN up projection)
``W'_{i,out}``, ``b'_{i,out}``  :math:`F_2` / :math:`F_d`
=======================  ======================================

:math:`\mathrm{FFN}(u) = F_2\sigma(F_1u + f_1) + f_2` or :math:`F_d\,g(F_gu + f_g, F_uu + f_u) + f_d`.
:func:`block_term` writes each layout of :mod:`symuat.numeric.stack`; :func:`block_eq20` reads the
(gated) Eq. 20 parameters off its canonical expansion; :func:`dynamic_from_symbols` says which of them
depend on the input, using that :math:`A\beta'_1` is static (rows of every :math:`H_h` sum to one, also
with masks, rotary and grouped heads, so :math:`A(\mathbf 1_N\otimes\beta) = \mathbf 1_N\otimes
\sum_h (W_{V,g(h)}W_{O,h})^{\mathsf T}\beta`).
"""

from __future__ import annotations

import sympy

from ..errors import InvalidValueError
from .collect import canonical_expand
from .extended import _arg_parts, _split, gate, is_gate
from .symbols import INPUT, nc_symbol, sigma

__all__ = ["LAYOUTS", "block_symbols", "block_term", "block_eq20", "dynamic_from_symbols", "STATIC_HVO_BIAS"]

LAYOUTS = ("paper", "standard", "pre_ln", "post_ln", "parallel", "sublayer_post_ln")
_PARTS = ("HVO", "N1", "N2", "in", "up", "out")
#: Name of the static vector standing for :math:`A\beta'_1` (see the module docstring).
STATIC_HVO_BIAS = "b'_{{{i},HVO N1}}"


def block_symbols(i: int | str) -> dict[str, tuple[sympy.Symbol, sympy.Symbol]]:
    """``{part: (matrix, vector)}`` for the parts of layer ``i`` (module docstring)."""
    return {p: (nc_symbol(f"W'_{{{i},{p}}}"), nc_symbol(f"b'_{{{i},{p}}}")) for p in _PARTS}


def block_term(layout: str, gated: bool = False):
    r"""The layer function ``(i, x) -> expr`` of ``layout`` (for :func:`~symuat.expansion.extended.derive_table`)."""
    if layout not in LAYOUTS:
        raise InvalidValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")

    def layer(i, x):
        s = block_symbols(i)
        (A, a), (L1, b1), (L2, b2), (Fi, fi), (Fu, fu), (Fo, fo) = (s[p] for p in _PARTS)

        def ffn(u):
            inner = gate(Fi * u + fi, Fu * u + fu) if gated else sigma(Fi * u + fi)
            return Fo * inner + fo

        if layout == "paper":
            h = A * x + a
            return h + ffn(h)
        if layout == "standard":
            h = x + A * x + a
            return h + ffn(h)
        if layout == "pre_ln":
            h = x + A * (L1 * x + b1) + a
            return h + ffn(L2 * h + b2)
        if layout == "post_ln":
            h = L1 * (x + A * x + a) + b1
            return L2 * (h + ffn(h)) + b2
        if layout == "parallel":
            return x + A * (L1 * x + b1) + a + ffn(L2 * x + b2)
        h = x + L1 * (A * x + a) + b1
        return h + L2 * ffn(h) + b2

    return layer


def block_eq20(layout: str, gated: bool = False, i: int | str = "i") -> dict[str, sympy.Expr]:
    r"""The Eq. 20 parameters of one ``layout`` block, read off its canonical expansion.

    Returns ``{"W1", "b3", "W3", "W2", "b2"}`` (plus ``"W4"``, ``"b4"`` when ``gated``): the coefficient of
    :math:`\mathbf x'` outside the nonlinearity, the rest outside it, the coefficient of the application,
    and the linear / remaining parts of its argument(s).

    >>> block_eq20("parallel")["W2"]
    W'_{i,in}*W'_{i,N2}
    """
    expr = canonical_expand(block_term(layout, gated)(i, INPUT))
    lin, bias, apps, rem = _split(expr, frozenset())
    if len(apps) != 1 or rem:
        raise InvalidValueError(f"layout {layout!r}: expected one nonlinear application, got {len(apps)}")
    (app, coeffs), = apps.items()
    out = {"W1": lin, "b3": bias, "W3": sympy.Add(*coeffs)}
    out["W2"], out["b2"] = _arg_parts(app.args[0], frozenset())
    if gated:
        if not is_gate(app):
            raise InvalidValueError("a gated block must apply the gate")
        out["W4"], out["b4"] = _arg_parts(app.args[1], frozenset())
    return out


def dynamic_from_symbols(params: dict[str, sympy.Expr], i: int | str = "i") -> frozenset[str]:
    r"""Names of the parameters that contain a dynamic symbol (:math:`A, L_1, L_2`) once :math:`A\beta'_1`
    is replaced by the static :data:`STATIC_HVO_BIAS`."""
    s = block_symbols(i)
    A, b1 = s["HVO"][0], s["N1"][1]
    dyn = {A, s["N1"][0], s["N2"][0]}
    static = nc_symbol(STATIC_HVO_BIAS.format(i=i))
    out = set()
    for name, e in params.items():
        e = canonical_expand(e).subs(A * b1, static)
        if e.free_symbols & dyn:
            out.add(name)
    return frozenset(out)
