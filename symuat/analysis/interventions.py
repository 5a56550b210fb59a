r"""Ablate or scale one part of a DUAT form, frozen and re-computed (issue 21).

A unit is ``("head", layer, h)``, ``("neuron", layer, n)`` (0-based), ``("source", s)`` or ``("term", name)`` (a
key of ``form.token_terms()``).  Scaling it by :math:`\lambda` (ablation: :math:`\lambda = 0`) is evaluated twice:

``frozen``
    In the frozen network (:mod:`symuat.numeric.frozen`, ``gates="held"``): every :math:`H_h`, norm diagonal and
    activation gate stays at the form's input, so the change is linear in :math:`\lambda`.  A term of Eq. 11 is
    one summand with its parameters held, so scaling it changes the output by :math:`(\lambda-1)t`.
``frozen_direct`` (heads and neurons)
    The same, but every other unit reads what it read at :math:`X_0` (circuit-tracer's freezing): only the unit's
    own write, along the residual path, changes — so it equals ``output - (1 - scale) * part`` of the
    ``"head"`` / ``"neuron"`` attribution.
``recomputed``
    Through symuat's own forward pass (:func:`~symuat.numeric.duat_form.duat_form`) with the unit's write scaled
    (head: rows of :math:`W_O`; neuron: row of :math:`W_2`/:math:`W_d`; source: row :math:`s` of :math:`X_0`):
    every downstream dynamic parameter responds.  A term is no unit of the forward pass: ``recomputed`` is None.

``dynamic_share`` :math:`= \langle e_r - e_f, e_r\rangle / \lVert e_r\rVert^2` with the effects
:math:`e = \text{output} - \text{ablated}`: the signed share of the actual effect that comes through the changes
of downstream dynamic parameters (attention patterns, gates, norms); ``1 - dynamic_share`` is the frozen share.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..errors import InvalidValueError
from ..numeric.duat_form import duat_form
from .frozen import frozen

__all__ = ["Intervention", "intervene", "scaled_stack"]


@dataclass(frozen=True)
class Intervention:
    """One unit scaled by ``scale``: the frozen and (when possible) re-computed outputs and effects."""

    unit: tuple
    scale: float
    frozen: np.ndarray
    recomputed: Optional[np.ndarray]
    output: np.ndarray
    frozen_direct: Optional[np.ndarray] = None

    @property
    def frozen_effect(self) -> np.ndarray:
        return self.output - self.frozen

    @property
    def recomputed_effect(self) -> Optional[np.ndarray]:
        return None if self.recomputed is None else self.output - self.recomputed

    @property
    def dynamic_share(self) -> Optional[float]:
        """Signed share of the re-computed effect due to downstream dynamic parameters (module docstring)."""
        e = self.recomputed_effect
        if e is None:
            return None
        nn = float(np.vdot(e, e))
        if nn == 0.0:
            return 0.0
        return float(np.vdot(e - self.frozen_effect, e)) / nn


def _check_unit(form: Any, unit: Any) -> tuple:
    if isinstance(unit, tuple) and len(unit) == 2 and unit[0] == "source":
        if isinstance(unit[1], (int, np.integer)) and 0 <= unit[1] < form.X0.shape[0]:
            return unit
    elif isinstance(unit, tuple) and len(unit) == 2 and unit[0] == "term":
        names = list(form.token_terms())
        if unit[1] in names:
            return unit
        raise InvalidValueError(f"unknown unit {unit!r}: valid term names are {names}")
    elif isinstance(unit, tuple) and len(unit) == 3 and unit[0] in ("head", "neuron"):
        k, i = unit[1], unit[2]
        if isinstance(k, (int, np.integer)) and 0 <= k < form.depth and isinstance(i, (int, np.integer)):
            b = form.stack.blocks[k]
            if 0 <= i < (b.attention.n_heads if unit[0] == "head" else b.ffn.hidden):
                return unit
    raise InvalidValueError(f"unknown unit {unit!r}: expected ('head', layer, h), ('neuron', layer, n), "
                            f"('source', s) or ('term', name) within the form's shape")


def scaled_stack(stack: Any, unit: tuple, scale: float) -> Any:
    """``stack`` with one head's (rows of ``W_O``) or neuron's (row of ``W_2``/``W_d``) write scaled."""
    kind, k, i = unit
    b = stack.blocks[k]
    if kind == "head":
        a = b.attention
        W = np.array(a.W_O)
        W[a.head_slice(i)] *= scale
        b = dataclasses.replace(b, attention=dataclasses.replace(a, W_O=W))
    else:
        f = b.ffn
        name = "W_down" if f.gated else "W2"
        W = np.array(getattr(f, name))
        W[i] *= scale
        b = dataclasses.replace(b, ffn=dataclasses.replace(f, **{name: W}))
    blocks = list(stack.blocks)
    blocks[k] = b
    return dataclasses.replace(stack, blocks=tuple(blocks))


def intervene(form: Any, unit: Any, scale: float = 0.0) -> Intervention:
    """Scale ``unit`` by ``scale`` (0 = ablate), frozen and re-computed by :func:`~symuat.numeric.duat_form`
    (module docstring)."""
    unit = _check_unit(form, unit)
    scale = float(scale)
    if not np.isfinite(scale):
        raise InvalidValueError(f"scale must be finite, got {scale!r}")
    out = form.output
    if unit[0] == "term":
        t = form.token_terms()[unit[1]]
        return Intervention(unit, scale, out + (scale - 1.0) * t, None, out)
    F = frozen(form, "held")
    if unit[0] == "source":
        X = np.array(form.X0)
        X[unit[1]] *= scale
        fr = F(X)
        re = duat_form(form.stack, X, form.attention_mask).output
        direct = None
    else:
        fr = F(form.X0, {unit: scale})
        direct = F.direct(lambda u: 0, 2, {unit: scale}).sum(0)
        re = duat_form(scaled_stack(form.stack, unit, scale), form.X0, form.attention_mask).output
    return Intervention(unit, scale, fr, re, out, direct)

