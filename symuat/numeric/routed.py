r"""A mixture of experts' stacked Linears evaluated on the selected experts only (issue 30, item 4).

The stacked gated FFN of :mod:`symuat.numeric.moe` has :math:`EF + F_{sh}` hidden units per token, of which a
token's router selects :math:`kF + F_{sh}`.  With the 0/1 selection diagonal :math:`S(u)` (1 on the units of
the experts that token :math:`n` selected, and on the shared expert's) the routing diagonal satisfies
:math:`D(u) = D(u)S(u)`, so for any finite activation

.. math::

    W_3'\,D\,\big(\mathrm{act}(W_2'x + b_2') \odot (W_4'x + b_4')\big)
    = W_3'\,D\,\big(\mathrm{act}(S(W_2'x + b_2')) \odot S(W_4'x + b_4')\big),

an exact rewrite: on an unselected unit the right side is :math:`\mathrm{act}(0)\cdot 0 = 0`.  The form uses the
right side.  :class:`RoutedLinear` is :math:`S(I_N\otimes W^{\mathsf T})`, computed block by block on the tokens
that selected each expert (the unselected blocks are exact zeros, never products with zero); :class:`RoutedDown`
is :math:`(I_N\otimes W_d^{\mathsf T})D(u)`, reading only the selected blocks.  A layer's unselected units thus
cost nothing and contribute exactly 0: its :math:`\mathrm{app}` entries there are 0, and ``selected`` says which
units are evaluated.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

from .operators import LinearOperator

__all__ = ["RoutedLinear", "RoutedDown", "expert_blocks"]


def expert_blocks(hidden: int, n_experts: int, shared: int = 0) -> Tuple[Tuple[int, int], ...]:
    r"""The stacked units' ``(start, stop)`` per expert (the shared expert last, when ``shared > 0``).

    >>> expert_blocks(3, 2, 4)
    ((0, 3), (3, 6), (6, 10))
    """
    out = tuple((e * hidden, (e + 1) * hidden) for e in range(n_experts))
    return out + (((n_experts * hidden, n_experts * hidden + shared),) if shared else ())


class _Routed(LinearOperator):
    def __init__(self, W: np.ndarray, blocks: tuple, selected: np.ndarray):
        self.W, self.blocks = W, blocks
        #: ``(N, len(blocks))`` booleans: which expert blocks each token evaluates
        self.selected = selected
        #: per block, the tokens that selected it
        self.rows = tuple(np.flatnonzero(selected[:, b]) for b in range(len(blocks)))
        self.N = selected.shape[0]

    def unit_mask(self) -> np.ndarray:
        r"""The diagonal of :math:`S(u)` as an ``(N, units)`` 0/1 array."""
        return np.repeat(self.selected.astype(np.float64), [t - s for s, t in self.blocks], axis=1)

    def _matvec(self, v):
        return self._matvecs(v[None])[0]


class RoutedLinear(_Routed):
    r""":math:`S(u)\,(I_N \otimes W^{\mathsf T})` for the stacked ``W`` (M × units): token :math:`n`'s block of
    expert :math:`e` is :math:`x_n W_{:,e}` where :math:`n` selected :math:`e`, exactly 0 elsewhere."""

    def __init__(self, W: np.ndarray, blocks: tuple, selected: np.ndarray):
        super().__init__(W, blocks, selected)
        self.shape = (self.N * W.shape[1], self.N * W.shape[0])

    def _matvecs(self, V):
        B, (M, H) = V.shape[0], self.W.shape
        X = V.reshape(B, self.N, M)
        out = np.zeros((B, self.N, H))
        for (s, t), rows in zip(self.blocks, self.rows):
            if rows.size:
                out[:, rows, s:t] = X[:, rows] @ self.W[:, s:t]
        return out.reshape(B, -1)


class RoutedDown(_Routed):
    r""":math:`(I_N \otimes W_d^{\mathsf T})\,D(u)` with the routing gates ``gates`` (N × blocks, zero off the
    selection): only the selected blocks of the input are read."""

    def __init__(self, W: np.ndarray, blocks: tuple, gates: np.ndarray):
        super().__init__(W, blocks, gates != 0)
        self.gates = gates
        self.shape = (self.N * W.shape[1], self.N * W.shape[0])

    def _matvecs(self, V):
        B, (H, M) = V.shape[0], self.W.shape
        Hs = V.reshape(B, self.N, H)
        out = np.zeros((B, self.N, M))
        for b, ((s, t), rows) in enumerate(zip(self.blocks, self.rows)):
            if rows.size:
                out[:, rows] += (Hs[:, rows, s:t] * self.gates[rows, b][:, None]) @ self.W[s:t]
        return out.reshape(B, -1)
