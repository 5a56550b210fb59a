r"""The DUAT function of one input with its dynamic parameters held: the frozen network (issue 21).

At the input :math:`X_0` of a :class:`~symuat.numeric.duat_form.DUATForm` every dynamic parameter of the paper's
Eq. 20 is a number: the attention matrices :math:`H_h` of every layer and head (softmax, rotary, q/k norms and the
mask all act inside :math:`H_h` only), and the dynamic diagonal :math:`D(X)` of every norm
(LayerNorm :math:`\gamma\odot C_M x\,d + \beta`, RMSNorm :math:`(o+w)\odot x\,d`, :math:`d = 1/\sqrt{\cdot}` per
token).  :class:`Frozen` holds them (``held``).  Optionally it also holds the activation gates:

* plain FFN, :math:`\sigma(z) = g\odot z + r` with :math:`g = \sigma(z)/z` where :math:`z \ne 0` and
  :math:`g = 0,\ r = \sigma(0)` where :math:`z = 0` (so :math:`r = 0` except for a sigmoid at exactly 0);
* gated FFN, the gate branch :math:`a = \mathrm{act}(x W_g + b_g)` is held as a number, so
  :math:`a \odot (x W_u + b_u)` is linear in the up branch.

* mixture of experts (:mod:`symuat.numeric.moe`): the routing diagonal :math:`D(u)` (which experts, with which
  weights) is held in every mode, and the experts' gate branch as for a gated FFN.

With ``gates="held"`` the network is *affine* in its input and in every residual-stream write;
with ``gates="live"`` σ (and the gate branch) is re-applied in every layer: the network with its Eq. 20 parameters
held.  ``gates="eq11"`` is the DUAT function of Eq. 11 itself,
:math:`x' \mapsto \tilde A x' + \tilde c + \sum_j \tilde U_j \sigma(\tilde V_j x' + \tilde\beta_j)` with every
tilde parameter held (:meth:`~symuat.numeric.duat_form.DUATForm.dynamic`); it differs from ``"live"`` away from
:math:`X_0`, because :math:`\tilde\beta_j` carries the earlier layers' nonlinear terms *at* :math:`X_0`.  Every
mode gives ``F(form.X0) == form.output`` (to rounding); ``F(X_b)`` is what input B gives under A's parameters.

Units that can be scaled (ablated with scale 0): ``("head", layer, h)``, ``("neuron", layer, n)`` and, in a
mixture-of-experts layer, ``("expert", layer, e)`` (expert :math:`e`'s columns of the stacked gated FFN, its
routing gate :math:`g_e` held) — 0-based.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np

from ..errors import InvalidValueError, UnsupportedError
from ..numeric.attention import head_attention_weights
from ..numeric.cross import cross_attention
from ..numeric.ffn import activation_function
from ..numeric.layernorm import LayerNormWeights, inverse_rms
from ..numeric.memory import check_memory
from ..numeric.moe import MoEFFNWeights
from ..numeric.norms import IdentityNormWeights

__all__ = ["Frozen", "frozen", "held_bytes", "hold_block", "hold_input", "unit_count"]


def _norm_d(X: np.ndarray, norm: Any) -> np.ndarray:
    if isinstance(norm, IdentityNormWeights):  # an identity "norm": its diagonal is 1 at every input
        return np.ones(X.shape[0])
    Z = X - X.mean(axis=-1, keepdims=True) if isinstance(norm, LayerNormWeights) else X
    return inverse_rms(Z, norm.eps)


def _norm_lin(V: np.ndarray, norm: Any, d: np.ndarray) -> np.ndarray:
    """The norm's linear part at held diagonal ``d`` on a batch ``V`` (..., N, M)."""
    if isinstance(norm, LayerNormWeights):
        return (V - V.mean(axis=-1, keepdims=True)) * d[:, None] * norm.gamma
    return V * d[:, None] * norm.gain


def _norm_const(norm: Any) -> Optional[np.ndarray]:
    return norm.beta if isinstance(norm, LayerNormWeights) else None


class _Mode:
    """How writes reach the residual state: a batch of independent inputs (``full``), or routed slots (``direct``):
    every read is the clean run's, each unit's write goes to its slot, every constant to the last slot (rest)."""

    def __init__(self, reads: Optional[dict] = None, route: Optional[Callable] = None):
        self.reads, self.route = reads, route

    @property
    def direct(self) -> bool:
        return self.reads is not None

    def read(self, key, state, record):
        if self.direct:
            return self.reads[key][None]
        if record is not None:
            record[key] = (state if state.ndim == 2 else state[0]).copy()
        return state

    def const(self, arr, c):
        if c is None:
            return arr
        if self.direct:
            arr[-1] += c
        else:
            arr += c
        return arr

    def add(self, W, unit, value):
        if self.direct:
            slot = self.route(unit)
            W[slot] += value[0]
        else:
            W += value


@dataclass(frozen=True)
class Frozen:
    r"""The frozen DUAT function of one form (module docstring); call it on an (N, M) input."""

    form: Any
    held: Sequence[dict]
    gates: str

    # ---- pieces --------------------------------------------------------------------------------------------------
    def _norm(self, mode, state, norm, d):
        return mode.const(_norm_lin(state, norm, d), _norm_const(norm))

    def _attention(self, mode, k, u, state_shape, scales):
        a, hold = self.form.stack.blocks[k].attention, self.held[k]
        W = np.zeros(state_shape)
        V = u @ a.W_V
        if a.b_V is not None:
            V = V + a.b_V
        for h, H in enumerate(hold["H"]):
            out = np.matmul(H, V[..., a.kv_slice(h)]) @ a.W_O[a.head_slice(h)]
            s = scales.get(("head", k, h), 1.0)
            mode.add(W, ("head", k, h), out if s == 1.0 else s * out)
        return mode.const(W, a.b_O)

    def _ffn(self, mode, k, u, state_shape, scales):
        f, hold = self.form.stack.blocks[k].ffn, self.held[k]
        act = activation_function(self.form.stack.block_activation(k))
        if f.gated:
            up = u @ f.W_up + (0.0 if f.b_up is None else f.b_up)
            pre = u @ f.W_gate + (0.0 if f.b_gate is None else f.b_gate)
            gate = hold["a"] if self.gates == "held" else act(pre if "S" not in hold else hold["S"] * pre)
            if "D" in hold:  # a mixture of experts: the routing diagonal is held in every mode
                gate = hold["D"] * gate
            A, W2, b2 = gate * up, f.W_down, f.b_down
        else:
            z = u @ f.W1 + (0.0 if f.b1 is None else f.b1)
            A = hold["g"] * z + hold["r"] if self.gates == "held" else act(z)
            W2, b2 = f.W2, f.b2
        col = _columns(f, k, scales)
        if col is not None:
            A = A * col
        W = np.zeros(state_shape)
        if mode.direct:
            slots = np.array([mode.route(("neuron", k, n)) for n in range(A.shape[-1])])
            for s in np.unique(slots):
                sel = slots == s
                W[s] += A[0][:, sel] @ W2[sel]
        else:
            W += A @ W2
        return mode.const(W, b2)

    # ---- the forward pass ----------------------------------------------------------------------------------------
    def _run(self, X: np.ndarray, mode: _Mode, scales: dict, record: Optional[dict] = None,
             n_slots: int = 0) -> np.ndarray:
        stack, held = self.form.stack, self.held
        N, M = self.form.X0.shape
        s = 1.0 if stack.input_scale is None else stack.input_scale
        if mode.direct:
            state = np.zeros((n_slots, N, M))
            state[mode.route(("embed",))] += s * X
        else:
            state = s * X
        if stack.position_embeddings is not None:
            state = mode.const(state, stack.position_embeddings[:N])
        if stack.input_norm is not None:
            state = self._norm(mode, state, stack.input_norm, self.form_box["in"])
        kind = stack.kind
        for k, b in enumerate(stack.blocks):
            hd = held[k]

            def n(i, V, key):
                return self._norm(mode, V, _block_norm(b, i), hd[key])

            def mha(V, key="attn"):
                return self._attention(mode, k, mode.read((k, key), V, record), state.shape, scales)

            def ffn(V, key="ffn"):
                return self._ffn(mode, k, mode.read((k, key), V, record), state.shape, scales)

            def cross(V, hd=hd):  # held: a constant (the cross-attention at the form's input)
                return mode.const(np.zeros(state.shape), hd["C"])

            state = _layout(kind, state, mha, ffn, n, None if b.cross is None else cross)
        if stack.final_norm is not None:
            state = self._norm(mode, state, stack.final_norm, self.form_box["final"])
        return state

    @property
    def form_box(self) -> dict:
        return self.held[-1]

    # ---- public --------------------------------------------------------------------------------------------------
    def __call__(self, X: Any, scales: Optional[Dict[tuple, float]] = None) -> np.ndarray:
        """``F(X)`` with every dynamic parameter (and with ``gates="held"`` every gate) at the form's input.

        ``scales`` maps units ``("head", k, h)`` / ``("neuron", k, n)`` / ``("expert", k, e)`` to a factor on their
        write.
        """
        X = np.asarray(X, dtype=float)
        if X.shape[-2:] != self.form.X0.shape:
            raise InvalidValueError(f"frozen: input shape {X.shape} does not end in {self.form.X0.shape}")
        scales = _check_scales(self.form, scales)
        if self.gates == "eq11":
            if scales:
                raise InvalidValueError("frozen: the Eq. 11 function has no heads or neurons to scale (use 'held')")
            return np.stack([self._eq11(x) for x in X.reshape((-1,) + X.shape[-2:])]).reshape(X.shape)
        return self._run(X, _Mode(), scales)

    def _eq11(self, X: np.ndarray) -> np.ndarray:
        form = self.form
        x = X.reshape(-1)
        out = form.A_tilde() @ x + form.c_tilde()
        for j in range(1, form.depth + 1):
            t = form.dynamic(j)
            app = activation_function(form.stack.block_activation(j - 1))(t.V @ x + t.beta)
            if t.P is not None:
                app = app * (t.P @ x + t.gamma)
            out = out + t.U @ app
        return out.reshape(X.shape)

    def reads(self) -> dict:
        """Every sublayer's input at the form's input: ``{(layer, "attn"|"ffn"): (N, M)}`` (clean run)."""
        rec: dict = {}
        self._run(self.form.X0, _Mode(), {}, record=rec)
        return rec

    def direct(self, route: Callable, n_slots: int, scales: Optional[dict] = None,
               reads: Optional[dict] = None) -> np.ndarray:
        """Each unit's write propagated along the residual path only (every read held at the clean run's):
        returns ``(n_slots, N, M)``, unit writes in ``route(unit)``, constants in the last slot.  ``reads`` (from
        :meth:`reads`) saves recomputing the clean run when this is called chunk by chunk."""
        return self._run(self.form.X0, _Mode(self.reads() if reads is None else reads, route),
                         _check_scales(self.form, scales), n_slots=n_slots)


def _columns(f: Any, k: int, scales: dict) -> Optional[np.ndarray]:
    """The factor on each hidden unit of layer ``k``'s FFN ``f`` from the neuron and expert scales (None: all 1)."""
    col = np.array([scales.get(("neuron", k, n), 1.0) for n in range(f.hidden)])
    if isinstance(f, MoEFFNWeights):
        F = f.experts[0].hidden
        for e in range(f.n_experts):
            col[e * F:(e + 1) * F] *= scales.get(("expert", k, e), 1.0)
    return col if np.any(col != 1.0) else None


def unit_count(block: Any, kind: str) -> int:
    """How many heads, hidden units or experts (0 for a dense FFN) ``block`` has."""
    if kind == "head":
        return block.attention.n_heads
    if kind == "expert":
        return block.ffn.n_experts if isinstance(block.ffn, MoEFFNWeights) else 0
    return block.ffn.hidden


def _check_scales(form: Any, scales: Optional[dict]) -> dict:
    scales = dict(scales or {})
    L = form.depth
    for unit, v in scales.items():
        ok = (isinstance(unit, tuple) and len(unit) == 3 and unit[0] in ("head", "neuron", "expert")
              and isinstance(unit[1], (int, np.integer)) and 0 <= unit[1] < L)
        ok = ok and isinstance(unit[2], (int, np.integer)) and 0 <= unit[2] < unit_count(form.stack.blocks[unit[1]],
                                                                                          unit[0])
        if not ok:
            raise InvalidValueError(f"unknown unit {unit!r}; expected ('head', layer, h), ('neuron', layer, n) or, "
                                    "in a mixture-of-experts layer, ('expert', layer, e)")
        if not np.isfinite(float(v)):
            raise InvalidValueError(f"scale of {unit!r} must be finite, got {v!r}")
    return scales


def _layout(kind: str, x: Any, mha: Callable, ffn: Callable, n: Callable, cross: Optional[Callable] = None) -> Any:
    """One block of layout ``kind`` from its sublayers, as :mod:`symuat.numeric.stack` defines the layouts;
    ``n(i, V, key)`` applies norm ``i`` (held under ``key``); ``cross(h)``, a decoder block's cross-attention
    (``pre_ln`` only), is added after the self-attention."""
    if cross is not None:
        if kind != "pre_ln":
            raise UnsupportedError(f"a cross-attention in the {kind!r} layout is not implemented")
        h = x + mha(n(1, x, "n1"))
        h = h + cross(h)
        return h + ffn(n(2, h, "n2"))
    if kind == "paper":
        h = mha(x)
        return h + ffn(h)
    if kind == "standard":
        h = x + mha(x)
        return h + ffn(h)
    if kind == "pre_ln":
        h = x + mha(n(1, x, "n1"))
        return h + ffn(n(2, h, "n2"))
    if kind == "post_ln":
        h = n(1, x + mha(x), "n1")
        return n(2, h + ffn(h), "n2")
    if kind == "parallel":
        return x + mha(n(1, x, "n1")) + ffn(n(2, x, "n2"))
    if kind == "sandwich":
        h = x + n(2, mha(n(1, x, "n1")), "n2")
        return h + n(4, ffn(n(3, h, "n3")), "n4")
    if kind == "sublayer_post_ln":
        h = x + n(1, mha(x), "n1")
        return h + n(2, ffn(h), "n2")
    raise UnsupportedError(f"frozen functions and attributions of the {kind!r} layout are not implemented")


def _block_norm(block: Any, i: int) -> Any:
    """Norm ``i`` of a block: ``ln1``; ``ln2`` (``ln1`` when a parallel block shares it); ``ln3``, ``ln4``."""
    if i == 2:
        return block.ln2 if block.ln2 is not None else block.ln1
    return getattr(block, f"ln{i}")


def hold_input(stack: Any, X: np.ndarray) -> tuple:
    """The input transform at ``X`` with its norm's diagonal held: ``(box, x)``, ``box["in"]`` when there is one."""
    box: dict = {}
    s = 1.0 if stack.input_scale is None else stack.input_scale
    x = s * X
    if stack.position_embeddings is not None:
        x = x + stack.position_embeddings[: X.shape[0]]
    if stack.input_norm is not None:
        box["in"] = _norm_d(x, stack.input_norm)
        c = _norm_const(stack.input_norm)
        x = _norm_lin(x, stack.input_norm, box["in"]) + (0.0 if c is None else c)
    return box, x


def hold_block(stack: Any, k: int, x: np.ndarray, mask: Any, reads: Optional[dict] = None) -> tuple:
    r"""Block ``k`` at its input ``x`` with its dynamic parameters held: ``(held, output)``.

    ``held`` has ``"H"`` (every head's :math:`H_h`), each norm's diagonal (``"n1"``…), and the gates: ``"g"``,
    ``"r"`` (plain FFN), ``"a"`` (gated FFN), and for a mixture of experts also ``"D"``, the routing diagonal
    :math:`D(u)` (:mod:`symuat.numeric.moe`).  ``reads``, when given, receives the sublayers' inputs
    ``{(k, "attn"|"ffn"): u}``.
    """
    b = stack.blocks[k]
    cross = None
    if b.cross is not None:  # held: the cross-attention's output at this input, W'_E(x', e')e' + a_E (a constant)
        def cross(h):
            hd["C"] = cross_attention(b.cross, h, f" in layer {k + 1}")
            return hd["C"]
    act = activation_function(stack.block_activation(k))
    hd: dict = {}

    def norm(i, V, key):
        nrm = _block_norm(b, i)
        hd[key] = _norm_d(V, nrm)
        c = _norm_const(nrm)
        return _norm_lin(V, nrm, hd[key]) + (0.0 if c is None else c)

    def mha(u):
        if reads is not None:
            reads[(k, "attn")] = u
        hd["H"] = [np.asarray(H) for H in head_attention_weights(u, b.attention, mask)]
        a = b.attention
        V = u @ a.W_V + (0.0 if a.b_V is None else a.b_V)
        out = sum(hd["H"][h] @ V[:, a.kv_slice(h)] @ a.W_O[a.head_slice(h)] for h in range(a.n_heads))
        return out + (0.0 if a.b_O is None else a.b_O)

    def ffn(u):
        if reads is not None:
            reads[(k, "ffn")] = u
        f = b.ffn
        if f.gated:
            pre = u @ f.W_gate + (0.0 if f.b_gate is None else f.b_gate)
            if getattr(f, "input_scaled", False):  # Llama 4: the gate's input times the routing weight, held
                hd["S"] = f.input_scales(u)
                pre = hd["S"] * pre
            hd["a"] = act(pre)
            gate = hd["a"]
            if isinstance(f, MoEFFNWeights):
                hd["D"] = f.gates(u)
                gate = hd["D"] * gate
            A = gate * (u @ f.W_up + (0.0 if f.b_up is None else f.b_up))
            return A @ f.W_down + (0.0 if f.b_down is None else f.b_down)
        z = u @ f.W1 + (0.0 if f.b1 is None else f.b1)
        y = act(z)
        nz = z != 0
        hd["g"] = np.where(nz, y / np.where(nz, z, 1.0), 0.0)
        hd["r"] = np.where(nz, 0.0, y)
        return y @ f.W2 + (0.0 if f.b2 is None else f.b2)

    return hd, _layout(stack.kind, x, mha, ffn, norm, cross)


def held_bytes(form: Any) -> int:
    r"""Bytes :func:`frozen` holds: every layer's :math:`H_h` (:math:`HN^2`), gates and reads (:math:`3NF + 3NM`),
    a decoder block's cross-attention output (:math:`NM`) and input-scaled experts' :math:`D_{in}` (:math:`NF`)."""
    N, M = form.X0.shape
    return 8 * sum(b.attention.n_heads * N * N + 3 * N * b.ffn.hidden + 3 * N * M
                   + (N * M if b.cross is not None else 0) + (N * b.ffn.hidden if getattr(b.ffn, "input_scaled", False)
                                                              else 0) for b in form.stack.blocks)


def frozen(form: Any, gates: str = "held") -> Frozen:
    """Hold the dynamic parameters of ``form`` (and, with ``gates="held"``, its activation gates).

    A mixture-of-experts FFN has its routing diagonal :math:`D(u)` held in every mode (which experts, and their
    weights): ``gates="live"`` re-applies only the experts' activations.
    """
    if gates not in ("held", "live", "eq11"):
        raise InvalidValueError(f"gates must be 'held', 'live' or 'eq11', got {gates!r}")
    check_memory(held_bytes(form), f"holding the network's dynamic parameters (N={form.X0.shape[0]})",
                 "for one target use form.attribution(by, target=…, position=…), which holds one layer at a time")
    stack = form.stack
    box, x = hold_input(stack, form.X0)
    held: list = []
    for k in range(stack.depth):
        hd, x = hold_block(stack, k, x, form.attention_mask)
        held.append(hd)
    if stack.final_norm is not None:
        box["final"] = _norm_d(x, stack.final_norm)
    held.append(box)
    return Frozen(form, tuple(held), gates)
