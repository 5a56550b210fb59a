r"""The pruning split :math:`\Lambda_1 \cup \Lambda_2 = \{1,\dots,N\}` of seed 001 Eq. 14 as two sizes.

:math:`\Lambda_1` is the first :math:`\lceil N/2\rceil` indices and :math:`\Lambda_2` the rest
(empty when :math:`N = 1`).  :func:`halves` returns their sizes; a builder slices with them
(``X[:n1, :]`` is :math:`X_{\Lambda_1}`, ``X[n1:, :]`` is :math:`X_{\Lambda_2}`), so at concrete
sizes it is the ordinary pair of ranges.  On tracers of symbolic size (:mod:`symuat.allsizes`)
the size :math:`N` is traced as the concatenation of two sizes :math:`\lceil N/2\rceil +
\lfloor N/2\rfloor` and the slices are its blocks: no index arithmetic is needed.
"""

from __future__ import annotations

from .matrices import check_dim, traceable

__all__ = ["halves"]


@traceable
def halves(n: int) -> tuple[int, int]:
    r"""Sizes :math:`(|\Lambda_1|, |\Lambda_2|) = (\lceil n/2\rceil, n-\lceil n/2\rceil)` (seed 001 Eq. 14).

    >>> halves(5), halves(1)
    ((3, 2), (1, 0))
    """
    n = check_dim("n", n)
    first = (n + 1) // 2
    return first, n - first
