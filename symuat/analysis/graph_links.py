r"""Feature-to-feature links of an attribution graph: head → head and neuron → head through the held network.

With every dynamic parameter held at the form's input (:func:`~symuat.analysis.frozen.frozen`, ``gates="held"``)
the network is affine.  For a target scalar :math:`t = \langle g_0, x_{out}[p]\rangle` (a logit row of the LM head,
or an output direction) at position :math:`p`, let :math:`g` be :math:`g_0` pulled back through the held final
norm.  A unit :math:`u` of layer :math:`k` adds its raw write (:math:`z_u W_{O,u}` for a head, :math:`a_u\,W_2[u]`
for a neuron) at its sublayer's output; the residual path carries it, token by token, to the stream entering every
later layer :math:`k'`: :math:`C_{k\to k'}(\text{raw}_u)`, with :math:`C` the product of the held norms' linear
parts on that path (each row :math:`n` scaled by its held diagonal :math:`d[n]`; a LayerNorm's shift
:math:`\beta` is a constant, not part of the map).  On ``pre_ln``, ``parallel``, ``standard``, ``sandwich`` and
``sublayer_post_ln`` the path is the sublayer's held post-norm (or nothing) and then the identity; on ``post_ln``
(BERT) it is every norm in between — the block's own ``n1``, ``n2`` after an attention write, ``n2`` after an FFN
write, then ``n1``, ``n2`` of every layer crossed.  A head :math:`v` of layer :math:`k' > k` reads
:math:`r = W^{in}_{k'}(\text{stream}) + \text{const}` and contributes

.. math::
    D_v = \sum_n H_v[p, n]\,\bigl(r[n] W_{V,v} + b_{V,v}\bigr) W_{O,v}\,\cdot\,C_{k'\to out}^{\mathsf T} g\,[p],

linear in the stream.  The link :math:`u \to v` is the part of :math:`D_v` that :math:`u`'s write carries directly,
:math:`\sum_n \langle Q_v[n], C_{k\to k'}(\text{raw}_u)[n]\rangle` with :math:`Q_v[n] = H_v[p,n]\,
(W^{in}_{k'})^{\mathsf T}_n W_{V,v} W_{O,v}\,C_{k'\to out}^{\mathsf T} g\,[p]` — exact, not a gradient estimate.
A unit's link to the target itself is :math:`\langle C_{k\to out}^{\mathsf T} g\,[p], \text{raw}_u[p]\rangle` (the
direct attribution), so the graph's error node stays the exact remainder.  ``paper`` has no residual path around
attention: refused by name.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..errors import UnsupportedError
from ..numeric.head import as_head, direction
from ..numeric.layernorm import LayerNormWeights
from .frozen import _block_norm, frozen
from .sites import run_sites

__all__ = ["LAYOUT_NORMS", "RESIDUAL_NORMS", "feature_links", "direct_weights"]

#: layout -> the held norm keys (``"n1"``..``"n4"``) read before / written after each sublayer (None: identity)
LAYOUT_NORMS = {
    "pre_ln": {"attn_in": "n1", "attn_out": None, "ffn_in": "n2", "ffn_out": None},
    "parallel": {"attn_in": "n1", "attn_out": None, "ffn_in": "n2", "ffn_out": None},
    "standard": {"attn_in": None, "attn_out": None, "ffn_in": None, "ffn_out": None},
    "sandwich": {"attn_in": "n1", "attn_out": "n2", "ffn_in": "n3", "ffn_out": "n4"},
    "sublayer_post_ln": {"attn_in": None, "attn_out": "n1", "ffn_in": None, "ffn_out": "n2"},
    "post_ln": {"attn_in": None, "attn_out": None, "ffn_in": None, "ffn_out": None},
}
#: layouts whose residual path itself passes through norms: the held norms after a sublayer's write in its own
#: block, and those of every block crossed
RESIDUAL_NORMS = {"post_ln": {"attn": ("n1", "n2"), "ffn": ("n2",), "block": ("n1", "n2")}}


def _lin(norm: Any, d: np.ndarray, V: np.ndarray) -> np.ndarray:
    """A held norm's linear part on rows ``V`` (…, M) with per-row diagonal ``d``."""
    if isinstance(norm, LayerNormWeights):
        return (V - V.mean(axis=-1, keepdims=True)) * d[..., None] * norm.gamma
    return V * d[..., None] * norm.gain


def _lin_T(norm: Any, d: np.ndarray, G: np.ndarray) -> np.ndarray:
    """Its transpose: :math:`C(d\\gamma\\odot g)` (LayerNorm, :math:`C` the centring) or :math:`d\\,w\\odot g`."""
    if isinstance(norm, LayerNormWeights):
        S = G * d[..., None] * norm.gamma
        return S - S.mean(axis=-1, keepdims=True)
    return G * d[..., None] * norm.gain


class _Held:
    def __init__(self, form: Any, target: Any, pos: int):
        kind = form.stack.kind
        if kind not in LAYOUT_NORMS:
            raise UnsupportedError(f"feature-to-feature links need a residual path around attention; the {kind!r} "
                                   f"layout has none (layouts with links: {sorted(LAYOUT_NORMS)}); use "
                                   "feature_links=False")
        self.form, self.pos, self.norms = form, pos, LAYOUT_NORMS[kind]
        self.residual = RESIDUAL_NORMS.get(kind)
        self.held = frozen(form, "held").held
        _, self.rec = run_sites(form.stack, form.X0, form.attention_mask, held=self.held,
                                record={("head",), ("neurons",)})
        if isinstance(target, (int, np.integer)) and not isinstance(target, bool):
            g = direction(as_head(form.unembedding), form.output[pos:pos + 1], int(target))[0]  # the head held
        else:
            g = np.asarray(target, dtype=float)
        if form.stack.final_norm is not None:
            g = _lin_T(form.stack.final_norm, self.held[-1]["final"][pos:pos + 1], g[None])[0]
        self.g = g
        self._carried: dict = {}

    def norm(self, k: int, which: str):
        key = self.norms[which]
        if key is None:
            return None
        return self._held_norm(k, key)

    def _held_norm(self, k: int, key: str):
        return _block_norm(self.form.stack.blocks[k], int(key[1])), self.held[k][key]

    def path(self, k: int, sub: str, to: int) -> list:
        """The held norms ``(norm, d)`` that a write at sublayer ``sub`` (``"attn"``/``"ffn"``) of layer ``k``
        passes through, in order, to the stream entering layer ``to`` (``L``: the last block's output)."""
        if self.residual is None:
            nd = self.norm(k, f"{sub}_out")
            return [] if nd is None else [nd]
        out = [self._held_norm(k, key) for key in self.residual[sub]]
        for j in range(k + 1, to):
            out += [self._held_norm(j, key) for key in self.residual["block"]]
        return out

    def raw(self, unit: tuple) -> np.ndarray:
        """The unit's raw write (N, M) at its sublayer's output."""
        kind, k, i = unit
        b = self.form.stack.blocks[k]
        if kind == "head":
            return self.rec[("head", k, i)] @ b.attention.W_O[b.attention.head_slice(i)]
        f = b.ffn
        return self.rec[("neurons", k)][:, i:i + 1] * (f.W_down if f.gated else f.W2)[i]

    def carried(self, unit: tuple, to: int) -> np.ndarray:
        r""":math:`C_{k\to to}(\text{raw}_u)` (N, M): what the unit's write adds to the stream entering ``to``."""
        key = (unit, to)
        if key not in self._carried:
            V = self.raw(unit)
            for norm, d in self.path(unit[1], "attn" if unit[0] == "head" else "ffn", to):
                V = _lin(norm, d, V)
            self._carried[key] = V
        return self._carried[key]

    def write(self, unit: tuple) -> np.ndarray:
        """:math:`w_u` (N, M): the unit's write as it enters the next layer's stream."""
        return self.carried(unit, unit[1] + 1)

    def to_target(self, k: int, sub: str) -> np.ndarray:
        r""":math:`C^{\mathsf T} g\,[p]` (M,): the target's sensitivity to a write at sublayer ``sub`` of layer
        ``k``, at position ``p``."""
        G = self.g[None]
        for norm, d in reversed(self.path(k, sub, self.form.depth)):
            G = _lin_T(norm, d[self.pos:self.pos + 1], G)
        return G[0]

    def target_weight(self, unit: tuple) -> float:
        """The unit's direct contribution to the target."""
        gw = self.to_target(unit[1], "attn" if unit[0] == "head" else "ffn")
        return float(self.raw(unit)[self.pos] @ gw)

    def reader(self, unit: tuple) -> np.ndarray:
        """:math:`Q_v` (N, M) of a head ``v``: the target's sensitivity to the stream that ``v`` reads."""
        _, k, h = unit
        a = self.form.stack.blocks[k].attention
        vec = a.W_V[:, a.kv_slice(h)] @ (a.W_O[a.head_slice(h)] @ self.to_target(k, "attn"))
        Q = self.held[k]["H"][h][self.pos][:, None] * vec[None, :]
        ni = self.norm(k, "attn_in")
        return Q if ni is None else _lin_T(ni[0], ni[1], Q)


def direct_weights(form: Any, target: Any, pos: int, units: list) -> np.ndarray:
    r""":math:`\langle g, w_u[p]\rangle` of every unit: its direct contribution to the target (for checks)."""
    held = _Held(form, target, pos)
    return np.array([held.target_weight(u) for u in units])


def feature_links(form: Any, target: Any, pos: int, units: list, threshold: float = 0.0,
                  held: Optional[_Held] = None) -> list:
    r"""``[(u, v, weight)]``: the direct links from every head or neuron ``u`` of ``units`` into every head ``v`` of
    ``units`` in a later layer (module docstring), those with ``|weight| >= threshold`` times the largest."""
    held = held or _Held(form, target, pos)
    out = []
    for v in units:
        if v[0] != "head":
            continue
        Q = held.reader(v)
        for u in units:
            if u[1] < v[1]:
                out.append((u, v, float(np.vdot(Q, held.carried(u, v[1])))))
    top = max((abs(w) for *_, w in out), default=0.0)
    return [e for e in out if abs(e[2]) >= threshold * top and e[2] != 0.0]
