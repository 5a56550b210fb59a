r"""The general residual term of seed 001 (App. B.2, Eq. 20) and its naive composition.

.. math::
    \mathbf x'_i = (\mathbf W'_{i,1}\mathbf x'_{i-1} + \mathbf b'_{i,3})
    + \mathbf W'_{i,3}\,\sigma(\mathbf W'_{i,2}\mathbf x'_{i-1} + \mathbf b'_{i,2})
    \qquad \text{(Eq. 20)}

A Transformer block reduces to the same term (Eq. 28-31), so everything in
:mod:`symuat.expansion` applies to both residual CNNs and ViTs.

>>> residual_term(1, INPUT)
W'_{1,1}*x'_{0} + W'_{1,3}*sigma(W'_{1,2}*x'_{0} + b'_{1,2}) + b'_{1,3}
"""

from __future__ import annotations

import sympy

from .symbols import INPUT, check_depth, layer_symbols, sigma

__all__ = ["residual_term", "nested_form"]


def residual_term(i: int | str, x_prev: sympy.Expr) -> sympy.Expr:
    r"""Apply residual layer ``i`` (Eq. 20) to the symbolic vector ``x_prev``.

    .. math::
        (\mathbf W'_{i,1} x + \mathbf b'_{i,3})
        + \mathbf W'_{i,3}\,\sigma(\mathbf W'_{i,2} x + \mathbf b'_{i,2})

    Parameters
    ----------
    i : int or str
        Layer index :math:`i \ge 1` (a string such as ``"i+1"`` for a generic layer).
    x_prev : sympy.Expr
        The layer's input :math:`\mathbf x'_{i-1}` (noncommutative, vector-valued).

    Returns
    -------
    sympy.Expr
        The unexpanded expression of Eq. 20.

    Raises
    ------
    InvalidValueError
        If ``i`` is an integer < 1.
    """
    s = layer_symbols(i)
    x_prev = sympy.sympify(x_prev)
    return (s.W1 * x_prev + s.b3) + s.W3 * sigma(s.W2 * x_prev + s.b2)


def nested_form(depth: int) -> sympy.Expr:
    r"""The naive composition :math:`\mathbf x'_L = f_L(f_{L-1}(\cdots f_1(\mathbf x'_0)))`.

    Each :math:`f_i` is Eq. 20.  The unexpanded tree has size :math:`O(L)` as a
    DAG but :math:`O(2^L)` as a tree (``x'_{i-1}`` occurs twice in layer ``i``);
    expanding it is exponential.  Meant for comparison and benchmarks only.

    Parameters
    ----------
    depth : int
        Number of layers :math:`L \ge 1`.

    Returns
    -------
    sympy.Expr

    Raises
    ------
    InvalidValueError
        If ``depth`` < 1.
    """
    depth = check_depth(depth)
    x = INPUT
    for i in range(1, depth + 1):
        x = residual_term(i, x)
    return x
