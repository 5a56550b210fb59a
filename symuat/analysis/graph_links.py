r"""Feature-to-feature links of an attribution graph: head → head and neuron → head through the held network.

With every dynamic parameter held at the form's input (:func:`~symuat.analysis.frozen.frozen`, ``gates="held"``)
the network is affine.  For a target scalar :math:`t = \langle g_0, x_{out}[p]\rangle` (a logit row of the LM head,
or an output direction) at position :math:`p`, let :math:`g` be :math:`g_0` pulled back through the held final
norm.  On a layout whose residual path is the identity (``pre_ln``, ``parallel``, ``standard``, ``sandwich``,
``sublayer_post_ln``) a unit :math:`u` of layer :math:`k` writes :math:`w_u = W^{out}_k(\text{raw}_u)` into the
stream (raw: :math:`z_u W_{O,u}` for a head, :math:`a_{u}\,W_2[u]` for a neuron; :math:`W^{out}_k` the held post-norm
of its sublayer, or the identity), and the stream reaches every later layer unchanged.  A head :math:`v` of layer
:math:`k' > k` reads :math:`r = W^{in}_{k'}(\text{stream}) + \text{const}` and contributes

.. math::
    D_v = \sum_n H_v[p, n]\,\bigl(r[n] W_{V,v} + b_{V,v}\bigr) W_{O,v}\,\cdot\,(W^{out}_{k'})^{\mathsf T}_p g,

linear in the stream.  The link :math:`u \to v` is the part of :math:`D_v` that :math:`w_u` carries directly,
:math:`\sum_n \langle Q_v[n], w_u[n]\rangle` with :math:`Q_v[n] = H_v[p,n]\,(W^{in}_{k'})^{\mathsf T}_n W_{V,v}
W_{O,v}(W^{out}_{k'})^{\mathsf T}_p g` — exact, not a gradient estimate.  A unit's link to the target itself is
:math:`\langle g, w_u[p]\rangle` (the direct attribution).  ``post_ln`` and ``paper`` put norms or nothing on the
residual path: refused by name.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..errors import UnsupportedError
from ..numeric.head import as_head, direction
from ..numeric.layernorm import LayerNormWeights
from .frozen import _block_norm, frozen
from .sites import run_sites

__all__ = ["LAYOUT_NORMS", "feature_links", "direct_weights"]

#: layout -> the held norm keys (``"n1"``..``"n4"``) read before / written after each sublayer (None: identity)
LAYOUT_NORMS = {
    "pre_ln": {"attn_in": "n1", "attn_out": None, "ffn_in": "n2", "ffn_out": None},
    "parallel": {"attn_in": "n1", "attn_out": None, "ffn_in": "n2", "ffn_out": None},
    "standard": {"attn_in": None, "attn_out": None, "ffn_in": None, "ffn_out": None},
    "sandwich": {"attn_in": "n1", "attn_out": "n2", "ffn_in": "n3", "ffn_out": "n4"},
    "sublayer_post_ln": {"attn_in": None, "attn_out": "n1", "ffn_in": None, "ffn_out": "n2"},
}


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
            raise UnsupportedError(f"feature-to-feature links need a residual path without norms; the {kind!r} "
                                   f"layout has one (layouts with links: {sorted(LAYOUT_NORMS)}); use "
                                   "feature_links=False")
        self.form, self.pos, self.norms = form, pos, LAYOUT_NORMS[kind]
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

    def norm(self, k: int, which: str):
        key = self.norms[which]
        if key is None:
            return None
        return _block_norm(self.form.stack.blocks[k], int(key[1])), self.held[k][key]

    def write(self, unit: tuple) -> np.ndarray:
        """:math:`w_u` (N, M): the unit's write into the residual stream."""
        kind, k, i = unit
        b = self.form.stack.blocks[k]
        if kind == "head":
            raw = self.rec[("head", k, i)] @ b.attention.W_O[b.attention.head_slice(i)]
            nd = self.norm(k, "attn_out")
        else:
            f = b.ffn
            W2 = f.W_down if f.gated else f.W2
            raw = self.rec[("neurons", k)][:, i:i + 1] * W2[i]
            nd = self.norm(k, "ffn_out")
        return raw if nd is None else _lin(nd[0], nd[1], raw)

    def reader(self, unit: tuple) -> np.ndarray:
        """:math:`Q_v` (N, M) of a head ``v``: the target's sensitivity to the stream that ``v`` reads."""
        _, k, h = unit
        a = self.form.stack.blocks[k].attention
        nd = self.norm(k, "attn_out")
        gw = self.g if nd is None else _lin_T(nd[0], nd[1][self.pos:self.pos + 1], self.g[None])[0]
        vec = a.W_V[:, a.kv_slice(h)] @ (a.W_O[a.head_slice(h)] @ gw)
        Q = self.held[k]["H"][h][self.pos][:, None] * vec[None, :]
        ni = self.norm(k, "attn_in")
        return Q if ni is None else _lin_T(ni[0], ni[1], Q)


def direct_weights(form: Any, target: Any, pos: int, units: list) -> np.ndarray:
    r""":math:`\langle g, w_u[p]\rangle` of every unit: its direct contribution to the target (for checks)."""
    held = _Held(form, target, pos)
    return np.array([float(held.write(u)[pos] @ held.g) for u in units])


def feature_links(form: Any, target: Any, pos: int, units: list, threshold: float = 0.0,
                  held: Optional[_Held] = None) -> list:
    r"""``[(u, v, weight)]``: the direct links from every head or neuron ``u`` of ``units`` into every head ``v`` of
    ``units`` in a later layer (module docstring), those with ``|weight| >= threshold`` times the largest."""
    held = held or _Held(form, target, pos)
    writes = {u: held.write(u) for u in units}
    out = []
    for v in units:
        if v[0] != "head":
            continue
        Q = held.reader(v)
        for u in units:
            if u[1] < v[1]:
                out.append((u, v, float(np.vdot(Q, writes[u]))))
    top = max((abs(w) for *_, w in out), default=0.0)
    return [e for e in out if abs(e[2]) >= threshold * top and e[2] != 0.0]
