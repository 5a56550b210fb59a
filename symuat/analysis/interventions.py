r"""Ablate or scale one part of a DUAT form, frozen and re-computed (issue 21).

A unit is ``("head", layer, h)``, ``("neuron", layer, n)`` (a dense FFN's), ``("expert", layer, e)`` (a
mixture of experts' routed expert, :mod:`symuat.numeric.moe`), ``("source", s)`` (0-based) or ``("term", name)``
(a key of ``form.token_terms()``).  Scaling it by :math:`\lambda` (ablation: :math:`\lambda = 0`) is evaluated twice:

``frozen``
    In the frozen network (:mod:`symuat.numeric.frozen`, ``gates="held"``): every :math:`H_h`, norm diagonal and
    activation gate stays at the form's input, so the change is linear in :math:`\lambda`.  A term of Eq. 11 is
    one summand with its parameters held, so scaling it changes the output by :math:`(\lambda-1)t`.
In a mixture-of-experts layer the routing diagonal :math:`D(u)` (which experts each token uses, and their weights)
is one of the held parameters: an expert scaled frozen keeps its routing gate :math:`g_e(u)` and every later
layer's routing.

``frozen_direct`` (heads, neurons and experts)
    The same, but every other unit reads what it read at :math:`X_0` (circuit-tracer's freezing): only the unit's
    own write, along the residual path, changes — so it equals ``output - (1 - scale) * part`` of the
    ``"head"`` / ``"neuron"`` attribution.
``recomputed``
    Through symuat's own forward pass (:func:`~symuat.numeric.duat_form.duat_form`) with the unit's write scaled
    (head: rows of :math:`W_O`; neuron: row of :math:`W_2`/:math:`W_d`; expert: its down projection, so its
    weighted output :math:`g_e(u)\,\mathrm{FFN}_e(u)`; source: row :math:`s` of :math:`X_0`): every downstream
    dynamic parameter responds, the routing of later layers included.  A term is no unit of the forward pass:
    ``recomputed`` is None.

``dynamic_share`` :math:`= \langle e_r - e_f, e_r\rangle / \lVert e_r\rVert^2` with the effects
:math:`e = \text{output} - \text{ablated}`: the signed share of the actual effect that comes through the changes
of downstream dynamic parameters (attention patterns, gates, norms); ``1 - dynamic_share`` is the frozen share.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..errors import InvalidValueError, UnsupportedError
from ..numeric.duat_form import duat_form
from ..numeric.moe import MoEFFNWeights
from .frozen import frozen, unit_count

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
    elif isinstance(unit, tuple) and len(unit) == 3 and unit[0] in ("head", "neuron", "expert"):
        k, i = unit[1], unit[2]
        if isinstance(k, (int, np.integer)) and 0 <= k < form.depth and isinstance(i, (int, np.integer)):
            b = form.stack.blocks[k]
            moe = isinstance(b.ffn, MoEFFNWeights)
            if unit[0] == "expert" and not moe:
                raise UnsupportedError(f"unit {unit!r}: layer {k} has a dense FFN, it has no experts (use "
                                       "('neuron', layer, n))")
            if unit[0] == "neuron" and moe:
                raise UnsupportedError(f"unit {unit!r}: layer {k} is a mixture of experts, its hidden units are "
                                       "gated per token by the router; intervene on ('expert', layer, e) instead")
            if 0 <= i < unit_count(b, unit[0]):
                return unit
    raise InvalidValueError(f"unknown unit {unit!r}: expected ('head', layer, h), ('neuron', layer, n), "
                            f"('expert', layer, e), ('source', s) or ('term', name) within the form's shape")


def scaled_stack(stack: Any, unit: tuple, scale: float) -> Any:
    """``stack`` with one head's (rows of ``W_O``), neuron's (row of ``W_2``/``W_d``) or routed expert's (its
    ``W_d``) write scaled."""
    kind, k, i = unit
    b = stack.blocks[k]
    if kind == "expert":
        f = b.ffn
        experts = list(f.experts)
        experts[i] = dataclasses.replace(experts[i], W_down=scale * np.asarray(experts[i].W_down))
        b = dataclasses.replace(b, ffn=dataclasses.replace(f, experts=tuple(experts)))
    elif kind == "head":
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

