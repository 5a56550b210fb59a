r"""The path expansion of an attention-only stack, applied numerically (never an :math:`NM\times NM` matrix).

The terms come from :func:`symuat.expansion.path_expansion`; each :math:`A_p\otimes B_p`
is applied to :math:`\mathbf x'_0` with :class:`~symuat.numeric.operators.Kron`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import sympy

from ..errors import InvalidValueError, ShapeError, UnsupportedError
from ..expansion.paths import PathTerm
from .operators import IdentityOperator, Kron

__all__ = ["path_contributions", "apply_paths"]


def _factors(expr: sympy.Expr, what: str) -> tuple[float, tuple[sympy.Symbol, ...]]:
    """Split a product into a scalar coefficient and its noncommutative symbols, in order."""
    coeff, factors = 1.0, []
    for arg in sympy.Mul.make_args(expr):
        if arg.is_Number:
            coeff *= float(arg)
        elif arg.is_Symbol and not arg.is_commutative:
            factors.append(arg)
        elif arg.is_Pow and arg.args[0].is_Symbol and arg.args[1].is_Integer and arg.args[1] > 0:
            factors.extend([arg.args[0]] * int(arg.args[1]))
        else:
            raise UnsupportedError(f"{what}: cannot apply the factor {arg} of {expr} (expected a product of "
                                   f"opaque matrices)")
    return coeff, tuple(factors)


def _lookup(bindings: Mapping[str, Any], symbol: sympy.Symbol) -> np.ndarray:
    if symbol.name not in bindings:
        raise InvalidValueError(f"bindings: no matrix bound to {symbol.name!r}")
    arr = np.asarray(bindings[symbol.name], dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ShapeError(f"bindings[{symbol.name!r}] must be a square matrix, got shape {arr.shape}")
    return arr


def path_contributions(terms: Sequence[PathTerm], bindings: Mapping[str, Any], x: Any) -> tuple[np.ndarray, ...]:
    r"""Each term applied to :math:`\mathbf x'`: :math:`(A_p\otimes B_p)\mathbf x'`.

    Each term is applied with :class:`~symuat.numeric.operators.Kron`, never as an :math:`NM\times NM` matrix.

    Parameters
    ----------
    terms : sequence of PathTerm
    bindings : mapping
        Symbol name (``"H^{(l)}_{h}"`` -> :math:`N\times N`, ``"W_{OV}^{(l)}_{h}"`` -> :math:`M\times M`) to array.
    x : (N*M,) array
        :math:`\mathbf x'_0 = \operatorname{vec}_r(X_0)`.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or not np.all(np.isfinite(x)):
        raise InvalidValueError(f"x must be a finite 1-D vector, got shape {x.shape}")
    split = [(t, _factors(t.attention_product, "attention_product"), _factors(t.ov_product, "ov_product"))
             for t in terms]
    lefts = [f for _, (_, fa), _ in split for f in fa]
    if not lefts:
        N = None
    else:
        N = _lookup(bindings, lefts[0]).shape[0]
        if x.shape[0] % N:
            raise ShapeError(f"x has length {x.shape[0]}, not a multiple of N={N} (from {lefts[0].name!r})")
    out = []
    for t, (ca, fa), (cb, fb) in split:
        if not fa and not fb:
            out.append(ca * cb * x)
            continue
        if N is None:
            raise ShapeError("cannot infer N: no term has an attention factor")
        M = x.shape[0] // N
        A = [_lookup(bindings, s) for s in fa] or [IdentityOperator(N)]
        B = [_lookup(bindings, s) for s in fb] or [IdentityOperator(M)]
        out.append(ca * cb * Kron(A, B).matvec(x))
    return tuple(out)


def apply_paths(terms: Sequence[PathTerm], bindings: Mapping[str, Any], x: Any) -> np.ndarray:
    r""":math:`\sum_p (A_p\otimes B_p)\mathbf x'`: the path expansion applied to :math:`\mathbf x'_0`.

    See :func:`path_contributions`.
    """
    parts = path_contributions(terms, bindings, x)
    if not parts:
        raise InvalidValueError("terms must contain at least one PathTerm")
    return np.sum(parts, axis=0)
