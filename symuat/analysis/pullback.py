r"""Reverse mode through the held network: one target's exact attribution to every part at once (issue 32).

With every dynamic parameter held (:mod:`symuat.analysis.frozen`, ``gates="held"``: the attention matrices
:math:`H_h`, the norms' diagonals :math:`D(X)`, the activation slopes and gates, the routing diagonal of a mixture
of experts) the network is affine, :math:`F(X) = \mathcal A X + F(0)`.  For one target
:math:`t = \langle w, F(X)_n\rangle` (a logit: :math:`w = U_v`; or any direction of the output) at one token
:math:`n`, the *pullback* :math:`G = \mathcal A^{\mathsf T}(e_n w^{\mathsf T})` is one vector–Jacobian product,
computed layer by layer backwards; each held layer is linear in its input:

* a norm at held diagonal :math:`d`: :math:`V \mapsto \gamma\odot C_M V d` has the transpose
  :math:`G \mapsto C_M(\gamma\odot G)\,d` (:math:`C_M` centring, LayerNorm only);
* attention at held :math:`H_h`: :math:`u \mapsto \sum_h H_h u W_{V,h} W_{O,h}` has the transpose
  :math:`G \mapsto \sum_h H_h^{\mathsf T} G W_{O,h}^{\mathsf T} W_{V,h}^{\mathsf T}`;
* an FFN at held slopes :math:`g` (gated: held gate :math:`a`, and routing :math:`D`):
  :math:`G \mapsto (g\odot G W_2^{\mathsf T}) W_1^{\mathsf T}`.

Then source :math:`s`'s part is :math:`\langle G_s, X_{0,s}\rangle` and every constant :math:`c` injected on the way
(biases, norm shifts, position embeddings) adds :math:`\langle G, c\rangle` to ``rest``
(:math:`= F(0)`'s target, computed, not taken as a difference).  ``direct=True`` pulls back along the residual path
only (every sublayer's read held at its clean value: :meth:`~symuat.analysis.frozen.Frozen.direct`); a head's,
neuron's or expert's part is then :math:`\langle G, \text{its write}\rangle`.

Layer by layer: block :math:`k`'s held parameters are recomputed from its input (``form.params.input(k)``), used
and dropped, so the working memory is one layer's, as in the form's streaming evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, List, Optional

import numpy as np

from ._bar import bar
from .frozen import _block_norm, _layout, _norm_const, _norm_d, hold_block, hold_input

__all__ = ["Pullback", "pullback", "pullback_bytes"]


@dataclass(frozen=True)
class Pullback:
    r"""The pullback of one target: ``source`` :math:`\langle G_s, X_{0,s}\rangle` per token (total, or the
    ``embed`` write's share per token when ``direct``), per layer ``heads`` (H,) and ``neurons`` (F,) (direct
    only), and ``rest``, the target of every constant."""

    source: np.ndarray
    heads: Optional[List[np.ndarray]]
    neurons: Optional[List[np.ndarray]]
    rest: float


def _norm_T(G: np.ndarray, norm: Any, d: np.ndarray) -> np.ndarray:
    r"""The transpose of the held norm's linear part: :math:`G \mapsto C_M(\gamma\odot G)d` (RMS: no centring)."""
    w = getattr(norm, "gamma", None)
    if w is None:
        return G * d[:, None] * norm.gain
    V = G * w * d[:, None]
    return V - V.mean(axis=-1, keepdims=True)


def _dot(G: np.ndarray, c: Any) -> float:
    """``<G, 1 c^T>`` (a bias on every row), or 0 without ``c``."""
    return 0.0 if c is None else float(G.sum(0) @ c)


class _Var:
    """A node of one block's graph (:func:`_graph`): the layouts of :mod:`~symuat.analysis.frozen` traced."""

    __slots__ = ("nodes", "i")

    def __init__(self, nodes: list, kind: str, args: tuple = (), extra: Any = None):
        self.nodes, self.i = nodes, len(nodes)
        nodes.append((kind, args, extra))

    def __add__(self, other: "_Var") -> "_Var":
        return _Var(self.nodes, "add", (self.i, other.i))


@lru_cache(maxsize=None)
def _graph(kind: str, cross: bool = False) -> tuple:
    """``(nodes, out)``: the block layout ``kind`` as a list of ``(kind, inputs, extra)``; node 0 is the input.
    ``cross``: a decoder block's cross-attention, held a constant (a ``"cross"`` node passes no gradient)."""
    nodes: list = []
    x = _Var(nodes, "in")
    out = _layout(kind, x, lambda V: _Var(nodes, "attn", (V.i,)), lambda V: _Var(nodes, "ffn", (V.i,)),
                  lambda i, V, key: _Var(nodes, "norm", (V.i,), (i, key)),
                  (lambda V: _Var(nodes, "cross", (V.i,))) if cross else None)
    return tuple(nodes), out.i


def _acc(grads: dict, i: int, G: np.ndarray) -> None:
    grads[i] = G if i not in grads else grads[i] + G


def _gate(hd: dict) -> np.ndarray:
    return hd["a"] * hd["D"] if "D" in hd else hd["a"]


def _attn_back(a: Any, H: list, G: np.ndarray) -> tuple:
    GO = G @ a.W_O.T
    dV = np.zeros((G.shape[0], a.W_V.shape[1]))
    for h in range(a.n_heads):
        dV[:, a.kv_slice(h)] += H[h].T @ GO[:, a.head_slice(h)]
    return dV @ a.W_V.T, _dot(G, a.b_O) + _dot(dV, a.b_V)


def _ffn_back(f: Any, hd: dict, G: np.ndarray) -> tuple:
    if f.gated:
        dup = _gate(hd) * (G @ f.W_down.T)
        return dup @ f.W_up.T, _dot(G, f.b_down) + _dot(dup, f.b_up)
    dA = G @ f.W2.T
    dz = hd["g"] * dA
    return dz @ f.W1.T, _dot(G, f.b2) + float(np.sum(dA * hd["r"])) + _dot(dz, f.b1)


def _attn_direct(a: Any, H: list, u: np.ndarray, G: np.ndarray) -> tuple:
    rows = np.flatnonzero(np.any(G != 0, axis=1))
    V = u @ a.W_V + (0.0 if a.b_V is None else a.b_V)
    GO = G[rows] @ a.W_O.T
    parts = np.array([np.sum((H[h][rows] @ V[:, a.kv_slice(h)]) * GO[:, a.head_slice(h)])
                      for h in range(a.n_heads)])
    return parts, _dot(G, a.b_O)


def _ffn_direct(f: Any, hd: dict, u: np.ndarray, G: np.ndarray) -> tuple:
    rows = np.flatnonzero(np.any(G != 0, axis=1))
    u = u[rows]
    if f.gated:
        A = _gate(hd)[rows] * (u @ f.W_up + (0.0 if f.b_up is None else f.b_up))
        return (A * (G[rows] @ f.W_down.T)).sum(0), _dot(G, f.b_down)
    z = u @ f.W1 + (0.0 if f.b1 is None else f.b1)
    A = hd["g"][rows] * z + hd["r"][rows]
    return (A * (G[rows] @ f.W2.T)).sum(0), _dot(G, f.b2)


def _block_back(stack: Any, k: int, hd: dict, reads: dict, G: np.ndarray, direct: bool, out: dict) -> tuple:
    """Pull ``G`` back through block ``k``: ``(G at its input, rest)``; ``direct`` fills ``out["heads"|"neurons"]``."""
    b = stack.blocks[k]
    nodes, last = _graph(stack.kind, b.cross is not None)
    grads = {last: G}
    rest = 0.0
    for i in range(len(nodes) - 1, 0, -1):
        g = grads.pop(i, None)
        if g is None:
            continue
        kind, args, extra = nodes[i]
        if kind == "add":
            for j in args:
                _acc(grads, j, g)
        elif kind == "cross":  # held: the constant W'_E e' + a_E, the target's share goes to the rest
            rest += float(np.sum(g * hd["C"]))
        elif kind == "norm":
            nrm = _block_norm(b, extra[0])
            rest += _dot(g, _norm_const(nrm))
            _acc(grads, args[0], _norm_T(g, nrm, hd[extra[1]]))
        elif direct:
            if kind == "attn":
                out["heads"], r = _attn_direct(b.attention, hd["H"], reads[(k, "attn")], g)
            else:
                out["neurons"], r = _ffn_direct(b.ffn, hd, reads[(k, "ffn")], g)
            rest += r
        else:
            gu, r = _attn_back(b.attention, hd["H"], g) if kind == "attn" else _ffn_back(b.ffn, hd, g)
            rest += r
            _acc(grads, args[0], gu)
    return grads.get(0, np.zeros_like(G)), rest


def _inputs(form: Any) -> list:
    """Every block's input: the form's own (``form.params.input``), else one held forward pass."""
    params = form.params
    if hasattr(params, "input"):
        return [params.input(k) for k in range(form.depth)]
    _, x = hold_input(form.stack, form.X0)
    xs = []
    for k in range(form.depth):
        xs.append(x)
        _, x = hold_block(form.stack, k, x, form.attention_mask)
    return xs


def pullback_bytes(form: Any) -> int:
    r"""Estimated peak working bytes of :func:`pullback` (one layer held at a time): every head's :math:`H_h` and
    its scores (:math:`3HN^2`), the FFN's hidden arrays (:math:`6NF`) and :math:`(L + 16)` arrays of :math:`NM`."""
    N, M = form.X0.shape
    heads = max(b.attention.n_heads for b in form.stack.blocks)
    hidden = max(b.ffn.hidden for b in form.stack.blocks)
    return 8 * (3 * heads * N * N + 6 * N * hidden + (form.depth + 16) * N * M)


def pullback(form: Any, w: np.ndarray, position: int, direct: bool = False, show: bool = False) -> Pullback:
    r"""The pullback of :math:`t = \langle w, F(X_0)_{position}\rangle` through the held network (module doc)."""
    stack = form.stack
    N, M = form.X0.shape
    L = form.depth
    G = np.zeros((N, M))
    G[position] = w
    rest = 0.0
    heads: List[Any] = [None] * L
    neurons: List[Any] = [None] * L
    inputs = _inputs(form)
    with bar(not show, "reverse mode", L) as step:
        for k in range(L - 1, -1, -1):
            reads: dict = {}
            hd, x = hold_block(stack, k, inputs[k], form.attention_mask, reads)
            if k == L - 1 and stack.final_norm is not None:
                rest += _dot(G, _norm_const(stack.final_norm))
                G = _norm_T(G, stack.final_norm, _norm_d(x, stack.final_norm))
            out: dict = {}
            G, r = _block_back(stack, k, hd, reads, G, direct, out)
            rest += r
            heads[k], neurons[k] = out.get("heads"), out.get("neurons")
            del hd, reads, x
            step(f"layer {k}")
    box, _ = hold_input(stack, form.X0)
    if stack.input_norm is not None:
        rest += _dot(G, _norm_const(stack.input_norm))
        G = _norm_T(G, stack.input_norm, box["in"])
    if stack.position_embeddings is not None:
        rest += float(np.sum(G * stack.position_embeddings[:N]))
    s = 1.0 if stack.input_scale is None else stack.input_scale
    source = np.einsum("nm,nm->n", s * G, form.X0)
    return Pullback(source, heads if direct else None, neurons if direct else None, rest)
