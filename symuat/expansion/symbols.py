r"""Noncommutative symbols of the DUAT expansion (seed 001, App. B.2, Eq. 20).

Every weight :math:`\mathbf W'_{i,k}` of the paper is an *opaque*, possibly
input-dependent matrix, so it is modelled as a noncommutative SymPy symbol:
nothing is assumed about it except that products compose associatively and
distribute over sums.  Vectors (the input :math:`\mathbf x'_0` and the biases
:math:`\mathbf b'_{i,2}, \mathbf b'_{i,3}`) are noncommutative symbols too, so
that ``W * x`` and ``x * W`` are never confused.  The activation
:math:`\sigma` is an uninterpreted (elementwise) function; applied to a
noncommutative argument it is itself noncommutative.

The symbol names are a contract with the numeric evaluators, which bind by
name: ``W'_{i,1}``, ``W'_{i,2}``, ``W'_{i,3}``, ``b'_{i,2}``, ``b'_{i,3}`` for
layer :math:`i \ge 1` and ``x'_{0}`` for the input.

>>> s = layer_symbols(2)
>>> s.W1
W'_{2,1}
>>> (s.W1 * INPUT - INPUT * s.W1) != 0
True
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from symuat.errors import InvalidValueError
from symuat.names import SIGMA
from symuat.validation import check_positive_int

__all__ = [
    "sigma",
    "INPUT",
    "nc_symbol",
    "LayerSymbols",
    "layer_symbols",
    "check_layer_index",
    "check_depth",
    "is_sigma",
]

#: The uninterpreted elementwise activation :math:`\sigma` (:data:`symuat.names.SIGMA`).
sigma = SIGMA


def nc_symbol(name: str) -> sympy.Symbol:
    r"""Return the noncommutative symbol called ``name``.

    Parameters
    ----------
    name : str
        The symbol's name (a LaTeX-like string such as ``"W'_{1,1}"``).

    Returns
    -------
    sympy.Symbol
        ``Symbol(name, commutative=False)``.
    """
    return sympy.Symbol(name, commutative=False)


#: The input vector :math:`\mathbf x'_0`.
INPUT = nc_symbol("x'_{0}")


def check_layer_index(i: object) -> int:
    r"""Validate a layer index :math:`i \ge 1`; raise :class:`InvalidValueError` naming ``i``."""
    return check_positive_int("layer index i", i, InvalidValueError)


def check_depth(depth: object) -> int:
    r"""Validate a network depth :math:`L \ge 1`; raise :class:`InvalidValueError` naming ``depth``."""
    return check_positive_int("depth", depth, InvalidValueError)


@dataclass(frozen=True)
class LayerSymbols:
    r"""The five opaque parameters of residual layer :math:`i` (Eq. 20).

    .. math::
        \mathbf x'_i = (\mathbf W'_{i,1}\mathbf x'_{i-1} + \mathbf b'_{i,3})
        + \mathbf W'_{i,3}\,\sigma(\mathbf W'_{i,2}\mathbf x'_{i-1} + \mathbf b'_{i,2})

    Attributes
    ----------
    layer : int
        The layer index :math:`i`.
    W1, W2, W3 : sympy.Symbol
        Noncommutative matrices :math:`\mathbf W'_{i,1}, \mathbf W'_{i,2}, \mathbf W'_{i,3}`.
    b2, b3 : sympy.Symbol
        Noncommutative vectors :math:`\mathbf b'_{i,2}, \mathbf b'_{i,3}`.
    """

    layer: int
    W1: sympy.Symbol
    W2: sympy.Symbol
    W3: sympy.Symbol
    b2: sympy.Symbol
    b3: sympy.Symbol

    @property
    def matrices(self) -> tuple[sympy.Symbol, ...]:
        """The matrix-valued symbols ``(W1, W2, W3)``."""
        return (self.W1, self.W2, self.W3)

    @property
    def vectors(self) -> tuple[sympy.Symbol, ...]:
        """The vector-valued symbols ``(b2, b3)``."""
        return (self.b2, self.b3)

    @property
    def all(self) -> tuple[sympy.Symbol, ...]:
        """All five symbols, matrices first."""
        return self.matrices + self.vectors

    @property
    def names(self) -> tuple[str, ...]:
        """The binding names of :attr:`all`."""
        return tuple(s.name for s in self.all)


def layer_symbols(i: int | str) -> LayerSymbols:
    r"""Return the symbols :math:`\mathbf W'_{i,1..3}, \mathbf b'_{i,2}, \mathbf b'_{i,3}` of layer ``i``.

    Parameters
    ----------
    i : int or str
        Layer index :math:`i \ge 1`.  A string (e.g. ``"i+1"``) gives the
        symbols of a *generic* layer, used by the induction step.

    Returns
    -------
    LayerSymbols

    Raises
    ------
    InvalidValueError
        If ``i`` is an integer < 1 (or not an integer/str).

    Examples
    --------
    >>> layer_symbols(3).names
    ("W'_{3,1}", "W'_{3,2}", "W'_{3,3}", "b'_{3,2}", "b'_{3,3}")
    """
    if isinstance(i, str):
        tag = i
        index = -1
    else:
        index = check_layer_index(i)
        tag = str(index)
    return LayerSymbols(
        layer=index,
        W1=nc_symbol(f"W'_{{{tag},1}}"),
        W2=nc_symbol(f"W'_{{{tag},2}}"),
        W3=nc_symbol(f"W'_{{{tag},3}}"),
        b2=nc_symbol(f"b'_{{{tag},2}}"),
        b3=nc_symbol(f"b'_{{{tag},3}}"),
    )


def is_sigma(expr: sympy.Basic) -> bool:
    r"""Whether ``expr`` is an application :math:`\sigma(\cdot)` of the activation."""
    return isinstance(expr, sympy.Function) and expr.func == sigma
