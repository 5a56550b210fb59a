r"""A size split in two parts: the pruning halves of seed 001 Eq. 14 and "all but the last index".

:func:`halves` gives the sizes of :math:`\Lambda_1` (the first :math:`\lceil N/2\rceil` indices)
and :math:`\Lambda_2` (the rest, empty when :math:`N = 1`); :func:`but_last` gives :math:`N-1`
(e.g. the free columns of a row-stochastic matrix, whose last column is :math:`1-\sum_{k<N-1}`,
seed 001 Eq. 4).  A builder slices with them (``X[:n1, :]``, ``X[n1:, :]``), so at concrete sizes
it is the ordinary pair of ranges.  On tracers of symbolic size (:mod:`symuat.allsizes`) the size
:math:`N` is traced as the concatenation of its two parts and the slices are its blocks: no index
arithmetic is needed.
"""

from __future__ import annotations

from .matrices import check_dim, traceable

__all__ = ["halves", "but_last"]


@traceable
def halves(n: int) -> tuple[int, int]:
    r"""Sizes :math:`(|\Lambda_1|, |\Lambda_2|) = (\lceil n/2\rceil, n-\lceil n/2\rceil)` (seed 001 Eq. 14).

    >>> halves(5), halves(1)
    ((3, 2), (1, 0))
    """
    n = check_dim("n", n)
    first = (n + 1) // 2
    return first, n - first


@traceable
def but_last(n: int) -> int:
    r"""The number :math:`n-1` of indices before the last one (0 when :math:`n = 1`).

    >>> but_last(4), but_last(1)
    (3, 0)
    """
    return check_dim("n", n) - 1
