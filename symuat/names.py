r"""The paper's symbols as objects: the activation :math:`\sigma` and the names of the DUAT expansion.

One :math:`\sigma` (:data:`SIGMA`, uninterpreted in symbolic work) and one concrete
logistic function (:func:`logistic`, used by the float level and every NumPy reference).
"""

from __future__ import annotations

import numpy as np
import sympy

__all__ = ["SIGMA", "logistic"]

#: The paper's activation :math:`\sigma`, an uninterpreted (elementwise) function in symbolic work.
SIGMA = sympy.Function("sigma")


def logistic(x):
    r"""The concrete :math:`\sigma` of the float level, :math:`1/(1+e^{-x}) = \tfrac12(1+\tanh(x/2))`.

    The tanh form is exact and cannot overflow (``1/(1+exp(800))`` warns; this does not).

    >>> float(logistic(0.0)), float(logistic(-800.0)), float(logistic(800.0))
    (0.5, 0.0, 1.0)
    """
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=float)))
