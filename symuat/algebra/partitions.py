r"""Every partition :math:`\Lambda_1 \cup \Lambda_2 = \{1,\dots,N\}` of seed 001 Eq. 14, numbered by a dimension.

A claim about *every* partition of :math:`N` indices is stated with a second dimension
:math:`P`: partition number :math:`P` puts index :math:`j` (0-based) in :math:`\Lambda_1` iff bit
:math:`j` of :math:`(P-1) \bmod 2^N` is set, so :math:`P = 1,\dots,2^N` runs through all of them.
:func:`partition_indicator` is the 0/1 column :math:`\mathbb 1_{\Lambda_1}`; with it
:math:`\sum_{j\in\Lambda_1} t_j = \mathbf 1_{\Lambda_1}^{\mathsf T} t` needs no loop.  On tracers of
symbolic size (:mod:`symuat.allsizes`) the indicator is an *arbitrary* vector of :math:`N` entries.
"""

from __future__ import annotations

import sympy

from .matrices import check_dim, traceable

__all__ = ["partition_indicator"]


@traceable
def partition_indicator(n: int, p: int) -> sympy.ImmutableMatrix:
    r"""The indicator column of :math:`\Lambda_1` in partition number ``p`` of ``n`` indices.

    >>> partition_indicator(3, 6).T  # (6 - 1) mod 8 = 0b101: indices 0 and 2
    Matrix([[1, 0, 1]])
    """
    n, p = check_dim("n", n), check_dim("p", p)
    mask = (p - 1) % 2 ** n
    return sympy.ImmutableMatrix(n, 1, lambda j, _: mask >> j & 1)
