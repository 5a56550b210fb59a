r"""The per-layer Eq. 20 parameters of a DUAT form, recomputed on demand (streaming over layers).

A :class:`~symuat.numeric.DUATForm` keeps each layer's *input* :math:`X_{i-1}` (the one the table produced), not
its parameters: the attention matrices :math:`H_h` of every layer would take :math:`LHN^2` numbers.  Indexing
:class:`LayerParams` recomputes layer :math:`i`'s :class:`~symuat.numeric.ResidualParams` from :math:`X_{i-1}` with
the same code as the evaluation and keeps only the most recently used layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import numpy as np

from .operators import trusted_operators
from .residual_params import _layer_params

__all__ = ["LayerParams"]


class LayerParams(Sequence):
    r"""``params[i]`` (0-based) is layer :math:`i+1`'s :class:`ResidualParams` at its input (module docstring)."""

    def __init__(self, stack, inputs: tuple, mask: Optional[np.ndarray]):
        self._stack, self._inputs, self._mask = stack, inputs, mask
        self._last: tuple = (None, None)

    def __len__(self) -> int:
        return len(self._inputs)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[k] for k in range(*i.indices(len(self))))
        n = len(self)
        k = i + n if isinstance(i, (int, np.integer)) and i < 0 else i
        if not isinstance(k, (int, np.integer)) or not 0 <= k < n:
            raise IndexError(f"layer index {i} out of range for {n} layers")
        if self._last[0] != k:
            s = self._stack
            with trusted_operators():
                p = _layer_params(s.blocks[k], s.kind, s.block_activation(k), self._inputs[k], self._mask,
                                  f" in layer {k + 1}")
            self._last = (k, p)
        return self._last[1]

    def input(self, i: int) -> np.ndarray:
        """:math:`X_{i}` (0-based layer ``i``'s input, ``(N, M)``, after the input transform)."""
        return self._inputs[i]

    def __repr__(self) -> str:
        return f"LayerParams({len(self)} layers, recomputed on demand)"
