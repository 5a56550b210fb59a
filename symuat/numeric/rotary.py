r"""Rotary position embeddings (RoPE, Su et al. 2021) as per-position rotations of queries and keys.

For position :math:`n` and frequency :math:`\theta_k = \text{base}^{-2k/r}` (:math:`k < r/2`, rotary
dimension :math:`r \le d`), the pairs :math:`(u_k, v_k)` of a query or key row are rotated by the angle
:math:`n\theta_k`:

.. math::

    (u_k, v_k) \mapsto (u_k\cos n\theta_k - v_k\sin n\theta_k,\; v_k\cos n\theta_k + u_k\sin n\theta_k).

``style="half"`` (GPT-NeoX / Llama ``rotate_half``) pairs coordinate :math:`k` with :math:`k + r/2`;
``style="interleaved"`` (GPT-J ``rotate_every_two``) pairs :math:`2k` with :math:`2k+1`.  Coordinates
:math:`r..d-1` are left alone (partial rotary).  The rotation acts on :math:`Q` and :math:`K` only, so it
changes the attention matrices :math:`H_h` and nothing else.

``inv_freq`` overrides :math:`\theta_k` (e.g. scaled RoPE), and ``cos``/``sin`` tables of shape
``(P, r/2)`` override the angles for positions ``< P`` (an importer copies the library's own tables).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ..errors import InvalidValueError, ShapeError
from ..validation import check_positive_dim, check_real_number, frozen_array
from .backend import copy_array, to_numpy

__all__ = ["ROTARY_STYLES", "Rotary", "apply_rotary"]

ROTARY_STYLES = ("half", "interleaved")



@dataclass(frozen=True)
class Rotary:
    r"""Rotary embedding of ``dim`` coordinates of every head (``dim`` even, ``dim <= head_dim``).

    >>> Rotary(4)
    Rotary(dim=4, base=10000.0, style='half')
    """

    dim: int
    base: float = 10000.0
    style: str = "half"
    inv_freq: Optional[np.ndarray] = None
    cos: Optional[np.ndarray] = None
    sin: Optional[np.ndarray] = None

    def __post_init__(self) -> None:
        r = check_positive_dim("rotary dim", self.dim)
        if r % 2:
            raise ShapeError(f"rotary dim must be even, got {r}")
        object.__setattr__(self, "base", check_real_number("rotary base", self.base, positive=True))
        if self.style not in ROTARY_STYLES:
            raise InvalidValueError(f"rotary style must be one of {ROTARY_STYLES}, got {self.style!r}")
        object.__setattr__(self, "inv_freq", frozen_array("rotary inv_freq", self.inv_freq, (r // 2,), optional=True))
        if (self.cos is None) != (self.sin is None):
            raise InvalidValueError("rotary cos and sin tables must be given together")
        object.__setattr__(self, "cos", frozen_array("rotary cos", self.cos, (None, r // 2), optional=True))
        object.__setattr__(self, "sin", frozen_array("rotary sin", self.sin, (None, r // 2), optional=True))

    def __repr__(self) -> str:
        return f"Rotary(dim={self.dim}, base={self.base}, style={self.style!r})"

    def frequencies(self) -> np.ndarray:
        r""":math:`\theta_k = \text{base}^{-2k/r}`, or ``inv_freq`` when given."""
        if self.inv_freq is not None:
            return to_numpy(self.inv_freq)
        return 1.0 / self.base ** (np.arange(0, self.dim, 2, dtype=np.float64) / self.dim)

    def angles(self, N: int) -> Tuple[np.ndarray, np.ndarray]:
        r"""``(cos, sin)`` of :math:`n\theta_k` for positions :math:`n = 0..N-1`, each of shape ``(N, dim/2)`` (NumPy
        arrays on every backend: the angles are computed on the host; a torch caller moves them to its device)."""
        if self.cos is not None:
            if self.cos.shape[0] < N:
                raise ShapeError(f"rotary cos/sin tables cover {self.cos.shape[0]} positions, the input has {N}")
            return to_numpy(self.cos[:N]), to_numpy(self.sin[:N])
        ang = np.arange(N, dtype=np.float64)[:, None] * self.frequencies()[None, :]
        return np.cos(ang), np.sin(ang)


def apply_rotary(Z: np.ndarray, rot: Rotary, angles: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> np.ndarray:
    r"""Rotate the rows of ``Z`` (N, d) — one head's queries or keys — by their positions (module docstring)."""
    N, d = Z.shape
    if rot.dim > d:
        raise ShapeError(f"rotary dim {rot.dim} exceeds the head dimension {d}")
    c, s = rot.angles(N) if angles is None else angles
    h = rot.dim // 2
    out = copy_array(Z)
    if rot.style == "half":
        u, v = Z[:, :h], Z[:, h:rot.dim]
        out[:, :h] = u * c - v * s
        out[:, h:rot.dim] = v * c + u * s
    else:
        u, v = Z[:, 0:rot.dim:2], Z[:, 1:rot.dim:2]
        out[:, 0:rot.dim:2] = u * c - v * s
        out[:, 1:rot.dim:2] = v * c + u * s
    return out
