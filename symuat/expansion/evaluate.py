r"""Numeric evaluation of the DUAT substitution table with operators (seed 001, Eq. 11 / Eq. 33).

The *derived* table (not a hand-written copy of it) is evaluated at concrete
bindings of the layer symbols:

.. math::
    \mathbf x'_L = \underbrace{\tilde A_L\mathbf x'_0}_{\texttt{linear\_term}}
    + \underbrace{\tilde c_L}_{\texttt{bias\_term}}
    + \sum_{j=1}^{L}\underbrace{\tilde U^{(L)}_j
      \sigma(\tilde V_j\mathbf x'_0 + \tilde\beta_j)}_{\texttt{sigma\_terms[j-1]}}.

Matrices are *operators* (anything with ``.shape`` and ``.matvec(v)``); a
product of operators is never formed.  Every matrix-valued expression is
applied right to left to a vector, and every vector-valued sub-expression
(keyed by its SymPy expression, e.g. ``\tilde{A}_{3}*x'_{0}`` or
``\tilde{U}_{1}^{(4)}*sigma(...)``) is computed once.  Vector rows are
evaluated in table order, so recursion stays shallow and the cost is
:math:`O(L^2)` mat-vecs for depth :math:`L`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np
import sympy

from symuat.errors import InvalidValueError, ShapeError
from symuat.expansion.symbols import INPUT, is_sigma, layer_symbols, nc_symbol
from symuat.expansion.symbols import sigma as sigma_fn
from symuat.expansion.table import A_name, SubstitutionTable, U_name, V_name, beta_name, c_name

__all__ = ["FormTerms", "TableEvaluator", "evaluate_form"]


@dataclass(frozen=True)
class FormTerms:
    r"""The terms of the DUAT form evaluated at one input.

    Attributes
    ----------
    linear_term : numpy.ndarray
        :math:`\tilde A_L\mathbf x'_0`.
    bias_term : numpy.ndarray
        :math:`\tilde c_L`.
    sigma_terms : tuple of numpy.ndarray
        :math:`\tilde U^{(L)}_j\sigma(\tilde V_j\mathbf x'_0 + \tilde\beta_j)`, :math:`j = 1..L`.
    total : numpy.ndarray
        The sum of all terms, i.e. :math:`\mathbf x'_L`.
    """

    linear_term: np.ndarray
    bias_term: np.ndarray
    sigma_terms: tuple
    total: np.ndarray


def _is_operator(obj: Any) -> bool:
    return hasattr(obj, "matvec") and hasattr(obj, "shape")


class TableEvaluator:
    r"""Evaluate vector-valued expressions over a :class:`SubstitutionTable`.

    Parameters
    ----------
    table : SubstitutionTable
    bindings : Mapping[str, object]
        ``W'_{i,k}`` -> operator (``.shape``, ``.matvec``); ``b'_{i,k}`` and
        ``x'_{0}`` -> 1-D finite numpy vectors; for every layer ``1..depth``.
    sigma : callable
        Elementwise activation, numpy vector -> numpy vector.

    Raises
    ------
    InvalidValueError
        Missing or unknown binding names, a vector that is not 1-D finite, a
        matrix binding without ``matvec``, a non-callable ``sigma``.
    """

    def __init__(self, table: SubstitutionTable, bindings: Mapping[str, Any], sigma: Callable) -> None:
        if not callable(sigma):
            raise InvalidValueError(f"sigma must be callable, got {sigma!r}")
        self.table = table
        self.sigma = sigma
        self._values: dict = {}
        expected = {INPUT.name: "vector"}
        for i in range(1, table.depth + 1):
            s = layer_symbols(i)
            expected.update({m.name: "operator" for m in s.matrices})
            expected.update({v.name: "vector" for v in s.vectors})
        missing = sorted(set(expected) - set(bindings))
        unknown = sorted(set(bindings) - set(expected))
        if missing:
            raise InvalidValueError(f"bindings: missing names {missing}")
        if unknown:
            raise InvalidValueError(f"bindings: unknown names {unknown} for a depth-{table.depth} table")
        for name, kind in expected.items():
            value = bindings[name]
            if kind == "operator":
                if not _is_operator(value):
                    raise InvalidValueError(f"bindings[{name!r}] must have .shape and .matvec, "
                                            f"got {type(value).__name__}")
                self._values[nc_symbol(name)] = value
            else:
                arr = np.asarray(value, dtype=float)
                if arr.ndim != 1:
                    raise InvalidValueError(f"bindings[{name!r}] must be a 1-D vector, got shape {arr.shape}")
                if not np.all(np.isfinite(arr)):
                    raise InvalidValueError(f"bindings[{name!r}] contains NaN or inf")
                self._values[nc_symbol(name)] = arr
        self._memo: dict = {}
        for row in table.rows:  # warm the cache in table order (keeps recursion shallow)
            if row.kind == "vector" and row.layer > 0:
                self.vector(row.symbol)

    def vector(self, expr: sympy.Expr) -> np.ndarray:
        """Numeric value of the vector-valued expression ``expr`` (memoised)."""
        if expr in self._memo:
            return self._memo[expr]
        if expr.is_Number:
            if expr != 0:
                raise InvalidValueError(f"a bare number {expr} is not a vector")
            value = np.zeros(1)  # the zero vector; broadcasts against any width
        elif expr.is_Add:
            parts = [self.vector(t) for t in expr.args]
            value = parts[0]
            for p in parts[1:]:
                value = value + p
        elif expr.is_Mul:
            c_part, nc_part = expr.args_cnc()
            if not nc_part:
                raise InvalidValueError(f"{expr} is not a vector")
            value = self._apply_product(nc_part[:-1], nc_part[-1])
            scale = sympy.Mul(*c_part)
            if not scale.is_Number:
                raise InvalidValueError(f"non-numeric scalar {scale} in {expr}")
            if scale != 1:
                value = float(scale) * value
        elif is_sigma(expr):
            value = np.asarray(self.sigma(self.vector(expr.args[0])), dtype=float)
        elif isinstance(expr, sympy.Symbol) and expr in self._values:
            value = self._values[expr]
            if _is_operator(value):
                raise InvalidValueError(f"{expr} is a matrix, used where a vector is expected")
        elif isinstance(expr, sympy.Symbol) and expr.name in self.table.names:
            value = self.vector(self.table.definition(expr.name))
        else:
            raise InvalidValueError(f"cannot evaluate {expr!r} as a vector")
        self._memo[expr] = value
        return value

    def _apply_product(self, factors: list, vec_expr: sympy.Expr) -> np.ndarray:
        """Apply ``factors[0] * ... * factors[-1]`` to ``vec_expr``, right to left, memoising each step."""
        key = vec_expr
        value = self.vector(vec_expr)
        for f in reversed(factors):
            new_key = f * key
            if new_key in self._memo:
                value = self._memo[new_key]
            else:
                value = self._apply(f, key, value)
                self._memo[new_key] = value
            key = new_key
        return value

    def _apply(self, op: sympy.Expr, key: sympy.Expr, v: np.ndarray) -> np.ndarray:
        """Apply the matrix-valued expression ``op`` to the vector ``v`` (whose expression is ``key``)."""
        if op.is_Pow and op.exp.is_Integer and op.exp > 0:
            return self._apply_product([op.base] * int(op.exp), key)
        if isinstance(op, sympy.Symbol) and op in self._values:
            A = self._values[op]
            if not _is_operator(A):
                raise InvalidValueError(f"{op} is a vector, used where a matrix is expected")
            if v.ndim != 1 or A.shape[1] != v.shape[0]:
                raise ShapeError(f"{op} has shape {tuple(A.shape)}, applied to a vector of shape {v.shape}")
            return np.asarray(A.matvec(v), dtype=float)
        if isinstance(op, sympy.Symbol) and op.name in self.table.names:
            return self._apply_defn(self.table.definition(op.name), key)
        return self._apply_defn(op, key)

    def _apply_defn(self, op: sympy.Expr, key: sympy.Expr) -> np.ndarray:
        if op.is_Number:
            return float(op) * self.vector(key)
        if op.is_Add:
            return sum(self._apply_defn(t, key) for t in op.args)
        if op.is_Mul:
            c_part, nc_part = op.args_cnc()
            scale = sympy.Mul(*c_part)
            if not scale.is_Number:
                raise InvalidValueError(f"non-numeric scalar {scale} in {op}")
            return float(scale) * self._apply_product(nc_part, key)
        return self._apply(op, key, self.vector(key))


def evaluate_form(table: SubstitutionTable, bindings: Mapping[str, Any], sigma: Callable = np.tanh) -> FormTerms:
    r"""Evaluate the table's DUAT form (Eq. 11 / Eq. 33) at concrete bindings.

    Parameters
    ----------
    table : SubstitutionTable
        A (derived or modified) substitution table of depth :math:`L`.
    bindings : Mapping[str, object]
        Layer symbol name -> operator (``W'_{i,k}``) or 1-D vector
        (``b'_{i,k}``); ``x'_{0}`` -> the input vector.
    sigma : callable, default numpy.tanh
        Elementwise activation.

    Returns
    -------
    FormTerms

    Raises
    ------
    InvalidValueError, ShapeError
        See :class:`TableEvaluator`.
    """
    ev = TableEvaluator(table, bindings, sigma)
    L = table.depth
    linear = ev.vector(table.ref(A_name(L)) * INPUT)
    bias = ev.vector(table.ref(c_name(L)))
    terms = tuple(
        ev.vector(nc_symbol(U_name(j, L)) * sigma_fn(nc_symbol(V_name(j)) * INPUT + nc_symbol(beta_name(j))))
        for j in range(1, L + 1)
    )
    total = linear + bias + sum(terms, np.zeros_like(linear))
    return FormTerms(linear, bias, terms, total)
