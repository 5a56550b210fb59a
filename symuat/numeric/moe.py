r"""A mixture-of-experts FFN as one wide gated FFN with dynamic diagonal routing gates (``ext`` MoE entries).

For a token row :math:`u` the router picks the top-:math:`k` experts :math:`S(u)` of
:math:`p(u) = \operatorname{softmax}(u W_r)` and weighs them by

.. math::

    g_e(u) = \rho\,\frac{p_e(u)}{Z(u)}\,[e \in S(u)],\qquad
    Z(u) = \sum_{e' \in S(u)} p_{e'}(u)\ \text{(renormalised, ``norm_topk_prob``) or } 1\ \text{(raw)},

with a routed scaling :math:`\rho` (``routing="softmax"``).  PhiMoE's SparseMixer (``routing="sparsemixer"``,
evaluation mode, :math:`k = 2`) picks the best expert :math:`i_1 = \arg\max_e l_e` of the logits :math:`l = uW_r`
and weighs it by a softmax over the experts whose logits lie within a relative distance :math:`2\varepsilon` of
:math:`l_{i_1}`, :math:`g_{i_1} = \operatorname{softmax}(l_e : (l_{i_1}-l_e)/\max(|l_e|, l_{i_1}) \le
2\varepsilon)_{i_1}`; then the same with :math:`i_1` removed gives :math:`i_2` and :math:`g_{i_2}`.
GPT-OSS adds a router bias (:math:`l = uW_r + b_r`), gate and up biases inside the experts, and clamps the up
branch: its factor is :math:`\operatorname{clamp}(y - t, -c, c) + t` of the up pre-activation :math:`y` (``up_clamp``
:math:`= (c, t)`, the shift :math:`t` already in the up bias).  The clamp is a per-unit factor
:math:`\kappa(y) = (\operatorname{clamp}(y-t,-c,c)+t)/y`, exactly 1 where it does not engage, and is held in
:math:`D(u)` with the routing weight.
DeepSeek-V3 (``routing="sigmoid"``) scores :math:`p = \mathrm{sigmoid}(uW_r)`, *chooses* by :math:`p + c`
(``choice_bias``, its ``e_score_correction_bias``) and weighs by :math:`p`; both DeepSeeks may limit the choice to the
best ``topk_group`` of ``n_group`` expert groups (``groups``: a group scores its best expert, V2's ``"max"``, or the
sum of its best two, V3's ``"top2"``); V3 renormalises with :math:`Z + 10^{-20}` (``norm_eps``).
Llama 4 (``input_scaled``) multiplies each selected expert's *input* by its routing weight: since
:math:`W(g u) = g\,W u`, :math:`\mathrm{FFN}_e(g_e u) = g_e\,W_{d,e}^{\mathsf T}(\mathrm{act}(g_e W_{g,e}^{\mathsf T} u)
\odot W_{u,e}^{\mathsf T}u)`: the same stacked gated FFN with :math:`D(u)` before the down projection, and the gate
branch's pre-activation scaled by the same weights (the diagonal :math:`D_{in}(u)`, 1 on the shared expert's units),
:math:`W'_2 = D_{in}(u)\,S(u)F_g\cdots` and :math:`b'_2` with it, both dynamic (the held network of
:mod:`symuat.analysis.frozen` holds :math:`D_{in}(u)` with :math:`D(u)`; ledger: ``ext:moe.input-scaled*``).
A shared expert has the gate :math:`s(u) = \mathrm{sigmoid}(u\,w_s)` (Qwen2-MoE)
or 1.  Then :math:`\mathrm{MoE}(u) = \sum_e g_e(u)\,\mathrm{FFN}_e(u) + s(u)\,\mathrm{FFN}_{sh}(u)`.  Stacking the
experts' columns, this is the gated FFN :math:`W_d^{\mathsf T} D(u)\,(\mathrm{act}(W_g^{\mathsf T}u)\odot
W_u^{\mathsf T}u)` whose down projection is preceded by the diagonal :math:`D(u)` repeating :math:`g_e(u)` over
expert :math:`e`'s hidden units (and :math:`s(u)` over the shared expert's).  :math:`D` — the *choice* of experts
as much as their weights — is a dynamic parameter: on :math:`x'` it makes :math:`W'_3` (and :math:`b'_3`) dynamic.
A non-selected expert's units have gate 0, so its weights do not enter the value; the form does not evaluate them
at all: its operators (:meth:`MoEFFNWeights.operators`, :mod:`symuat.numeric.routed`) compute each token's
selected experts only, and the unselected units are exact zeros of the form.

On the torch backend the gates :math:`D(u)` are computed on the host with NumPy (:func:`unit_gates_host`) from a
copy of :math:`u` and moved to :math:`u`'s device: the discrete top-:math:`k` choice is the NumPy backend's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ..errors import InvalidValueError, ShapeError
from ..names import logistic
from ..validation import check_positive_dim, check_real_number
from ._arrays import frozen
from .backend import device_of, is_numpy, namespace, to_numpy
from .ffn import GatedFFNWeights, _op
from .operators import Compose, Diagonal
from .routed import RoutedDown, RoutedLinear, expert_blocks

__all__ = ["MoEFFNWeights", "routing_gates", "clamp_factors", "ROUTINGS"]

#: How the router turns its logits into gates (module docstring).
ROUTINGS = ("softmax", "sparsemixer", "sigmoid")


@dataclass(frozen=True)
class MoEFFNWeights:
    r"""Experts (gated FFNs without biases), the router :math:`W_r` (:math:`M\times E`), ``top_k``,
    ``normalize`` (renormalised top-k weights), ``scaling`` :math:`\rho`, an optional ``shared`` expert and its
    sigmoid gate vector ``shared_gate`` (:math:`M`; ``None``: gate 1); a ``router_bias`` (:math:`E`), and the up
    branch's ``up_clamp`` :math:`(c, t)` (module docstring).  Experts may have gate and up biases, not a down bias."""

    experts: Tuple[GatedFFNWeights, ...]
    router: np.ndarray
    top_k: int
    normalize: bool = True
    scaling: float = 1.0
    shared: Optional[GatedFFNWeights] = None
    shared_gate: Optional[np.ndarray] = None
    activation: Optional[str] = "silu"
    routing: str = "softmax"
    jitter_eps: float = 0.0
    router_bias: Optional[np.ndarray] = None
    up_clamp: Optional[Tuple[float, float]] = None
    choice_bias: Optional[np.ndarray] = None
    groups: Optional[Tuple[int, int, str]] = None
    norm_eps: float = 0.0
    input_scaled: bool = False

    gated = True

    def __post_init__(self) -> None:
        experts = tuple(self.experts)
        if not experts or not all(isinstance(e, GatedFFNWeights) for e in experts):
            raise InvalidValueError("experts must be a non-empty sequence of GatedFFNWeights")
        parts = experts + (() if self.shared is None else (self.shared,))
        M, F = experts[0].width, experts[0].hidden
        for i, e in enumerate(parts):
            if e.width != M or (e is not self.shared and e.hidden != F):
                raise ShapeError(f"expert {i} has shape ({e.width}, {e.hidden}), expected ({M}, {F})")
            if e.b_down is not None:
                raise InvalidValueError(f"expert {i} has a down-projection bias: it would be added whatever the "
                                        "routing weight; give it as a hidden unit held at 1 instead")
            if e.activation not in (None, self.activation):
                raise InvalidValueError(f"expert {i} has activation {e.activation!r}, the MoE {self.activation!r}")
        object.__setattr__(self, "experts", experts)
        object.__setattr__(self, "router", frozen("router", self.router, (M, len(experts))))
        k = check_positive_dim("top_k", self.top_k)
        if k > len(experts):
            raise ShapeError(f"top_k={k} exceeds the {len(experts)} experts")
        object.__setattr__(self, "normalize", bool(self.normalize))
        if self.routing not in ROUTINGS:
            raise InvalidValueError(f"routing must be one of {ROUTINGS}, got {self.routing!r}")
        if self.routing == "sparsemixer" and (k != 2 or self.normalize or self.scaling != 1.0):
            raise InvalidValueError(f"routing='sparsemixer' picks exactly 2 experts with their own weights: needs "
                                    f"top_k=2, normalize=False, scaling=1 (got {k}, {self.normalize}, {self.scaling})")
        eps = check_real_number("jitter_eps", self.jitter_eps)
        if eps < 0:
            raise InvalidValueError(f"jitter_eps must be >= 0, got {eps}")
        object.__setattr__(self, "jitter_eps", eps)
        object.__setattr__(self, "scaling", check_real_number("scaling", self.scaling, positive=True))
        if self.shared_gate is not None:
            if self.shared is None:
                raise InvalidValueError("shared_gate needs a shared expert")
            object.__setattr__(self, "shared_gate", frozen("shared_gate", self.shared_gate, (M,)))
        E = len(experts)
        for name in ("router_bias", "choice_bias"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, frozen(name, getattr(self, name), (E,)))
        if self.groups is not None:
            n_group, topk_group, rule = self.groups
            if (not isinstance(n_group, int) or not isinstance(topk_group, int) or n_group < 1 or E % n_group
                    or not 1 <= topk_group <= n_group or rule not in ("max", "top2")
                    or (rule == "top2" and E // n_group < 2) or k > topk_group * (E // n_group)):
                raise InvalidValueError(f"groups=(n_group, topk_group, rule) needs n_group dividing the {E} experts, "
                                        f"1 <= topk_group <= n_group, rule 'max' or 'top2' and top_k={k} experts in "
                                        f"the kept groups; got {self.groups!r}")
            object.__setattr__(self, "groups", (n_group, topk_group, rule))
        if self.routing == "sparsemixer" and (self.choice_bias is not None or self.groups is not None):
            raise InvalidValueError("routing='sparsemixer' has no choice bias or expert groups")
        eps_n = check_real_number("norm_eps", self.norm_eps)
        if eps_n < 0:
            raise InvalidValueError(f"norm_eps must be >= 0, got {eps_n}")
        object.__setattr__(self, "norm_eps", eps_n)
        if not isinstance(self.input_scaled, (bool, np.bool_)):
            raise InvalidValueError(f"input_scaled must be a bool, got {self.input_scaled!r}")
        object.__setattr__(self, "input_scaled", bool(self.input_scaled))
        if self.input_scaled and (self.b_gate_given() or self.up_clamp is not None or self.shared_gate is not None):
            raise InvalidValueError("input_scaled (Llama 4's experts, whose input is scaled by the routing weight) "
                                    "takes no gate or up biases, up clamp or shared-expert gate")
        if self.up_clamp is not None:
            c, t = (check_real_number(f"up_clamp[{j}]", v) for j, v in enumerate(self.up_clamp))
            if not (c > 0 and abs(t) <= c):
                raise InvalidValueError(f"up_clamp=(limit, shift) needs limit > 0 and |shift| <= limit (a clamped "
                                        f"unit at 0 would have no finite factor), got {self.up_clamp!r}")
            object.__setattr__(self, "up_clamp", (c, t))
        cat = {name: np.concatenate([getattr(e, name) for e in parts], axis=0 if name == "W_down" else 1)
               for name in ("W_gate", "W_up", "W_down")}
        for name in ("b_gate", "b_up"):
            if any(getattr(e, name) is not None for e in parts):
                cat[name] = np.concatenate([np.zeros(e.hidden) if getattr(e, name) is None else getattr(e, name)
                                            for e in parts])
            else:
                object.__setattr__(self, f"_{name}", None)
        for name, W in cat.items():
            W.setflags(write=False)
            object.__setattr__(self, f"_{name}", W)

    def b_gate_given(self) -> bool:
        """Whether any expert (or the shared one) has a gate or up bias."""
        parts = self.experts + (() if self.shared is None else (self.shared,))
        return any(e.b_gate is not None or e.b_up is not None for e in parts)

    def input_scales(self, U: np.ndarray) -> np.ndarray:
        r""":math:`D_{in}(U)` (``input_scaled``): each token's routing weight on its experts' units, 1 on the shared
        expert's, ``(N, EF + F_{sh})`` (module docstring); on torch chosen on the host, as :func:`unit_gates`."""
        G, _ = routing_gates(self, U) if is_numpy(U) else _host_routing(self, to_numpy(U))
        D = _per_unit(self, G, None if self.shared is None else np.ones(U.shape[0]))
        return D if is_numpy(U) else namespace(U).asarray(D, device=device_of(U))

    # the stacked gated FFN (the experts' columns side by side, the shared expert last)
    W_gate = property(lambda self: self._W_gate)
    W_up = property(lambda self: self._W_up)
    W_down = property(lambda self: self._W_down)
    b_gate = property(lambda self: self._b_gate)
    b_up = property(lambda self: self._b_up)
    b_down = None

    def gates(self, U: np.ndarray) -> np.ndarray:
        r"""The routing diagonal :math:`D(U)` per token and stacked hidden unit (:func:`unit_gates`)."""
        return unit_gates(self, U)

    def block_gates(self, U: np.ndarray) -> np.ndarray:
        r"""Each token's gate per expert block, ``(N, E)`` or ``(N, E + 1)`` with the shared expert last."""
        G, s = routing_gates(self, U)
        return G if s is None else np.concatenate([G, s[:, None]], axis=1)

    def operators(self, U: np.ndarray) -> dict:
        r"""``{"in", "up", "out"}: (operator, bias)`` on :math:`x'` at the FFN input ``U`` (N×M):
        :math:`S(U)(I_N\otimes W_g^{\mathsf T})`, :math:`S(U)(I_N\otimes W_u^{\mathsf T})` and
        :math:`(I_N\otimes W_d^{\mathsf T})D(U)`, evaluated on the selected experts only (zero biases).  On another
        backend (torch), and for experts with biases or a clamped up branch (GPT-OSS), every expert is evaluated
        and the unselected ones are gated by exact zeros: the same values."""
        N = U.shape[0]
        if self.input_scaled:  # Llama 4: the held dense form with the gate branch scaled by D_in(U)
            gate, zero = _op(N, self.W_gate, None)
            down, bias = _op(N, self.W_down, None)
            scale = self.input_scales(U).reshape(-1)
            return {"in": (Compose([Diagonal(scale), gate]), zero), "up": _op(N, self.W_up, None),
                    "out": (Compose([down, Diagonal(self.gates(U).reshape(-1))]), bias), "in_scale": scale}
        if not is_numpy(U) or self.b_gate is not None or self.b_up is not None or self.up_clamp is not None:
            # another backend (torch), or experts with biases or a clamped up branch (GPT-OSS: per-unit factors in
            # D(u)): the held dense form, every expert evaluated and the unselected ones gated by exact zeros
            down, bias = _op(N, self.W_down, None)
            return {"in": _op(N, self.W_gate, self.b_gate), "up": _op(N, self.W_up, self.b_up),
                    "out": (Compose([down, Diagonal(self.gates(U).reshape(-1))]), bias)}
        blocks = expert_blocks(self.experts[0].hidden, self.n_experts, 0 if self.shared is None else self.shared.hidden)
        G = self.block_gates(U)
        sel = G != 0
        zero = np.zeros(N * self.hidden)
        return {"in": (RoutedLinear(self._W_gate, blocks, sel), zero),
                "up": (RoutedLinear(self._W_up, blocks, sel), zero),
                "out": (RoutedDown(self._W_down, blocks, G), np.zeros(N * self.width))}

    @property
    def n_experts(self) -> int:
        return len(self.experts)

    @property
    def width(self) -> int:
        return self.router.shape[0]

    @property
    def hidden(self) -> int:
        """Stacked hidden size :math:`EF + F_{sh}`."""
        return self._W_gate.shape[1]

    def __repr__(self) -> str:
        return (f"MoEFFNWeights(width={self.width}, experts={self.n_experts}, top_k={self.top_k}, "
                f"hidden={self.experts[0].hidden}, normalize={self.normalize}, scaling={self.scaling}, "
                f"shared={self.shared is not None}, routing={self.routing!r})")


def routing_gates(w: MoEFFNWeights, U: np.ndarray) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    r"""``(G, s)``: the routing weights :math:`g_e(u_n)` as an ``(N, E)`` array (zero off the top-k) and the shared
    expert's gates :math:`s(u_n)` (``None`` without a shared expert)."""
    return _routing(w, U, w.router, w.shared_gate, w.router_bias, w.choice_bias)


def _routing(w: MoEFFNWeights, U: np.ndarray, router: np.ndarray, shared_gate: Optional[np.ndarray],
             router_bias: Optional[np.ndarray], choice_bias: Optional[np.ndarray]) -> tuple:
    logits = U @ router if router_bias is None else U @ router + router_bias
    if w.routing == "sparsemixer":
        G = _sparsemixer(logits, w.jitter_eps)
        return G, (None if w.shared is None else (np.ones(U.shape[0]) if shared_gate is None
                                                  else logistic(U @ shared_gate)))
    if w.routing == "sigmoid":
        p = logistic(logits)
    else:
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
    choice = p if choice_bias is None else p + choice_bias
    if w.groups is not None:
        choice = _group_limited(choice, *w.groups)
    top = np.argsort(-choice, axis=1, kind="stable")[:, : w.top_k]
    rows = np.arange(U.shape[0])[:, None]
    wt = p[rows, top]
    if w.normalize:
        wt = wt / (wt.sum(axis=1, keepdims=True) + w.norm_eps)
    G = np.zeros_like(p)
    G[rows, top] = w.scaling * wt
    if w.shared is None:
        return G, None
    s = np.ones(U.shape[0]) if shared_gate is None else logistic(U @ shared_gate)
    return G, s


def _group_limited(choice: np.ndarray, n_group: int, topk_group: int, rule: str) -> np.ndarray:
    r"""The choice scores with the experts outside each row's best ``topk_group`` groups at :math:`-\infty`; a
    group's score is its best expert's (``"max"``, DeepSeek-V2) or the sum of its best two (``"top2"``, V3)."""
    N, E = choice.shape
    g = choice.reshape(N, n_group, E // n_group)
    score = g.max(axis=2) if rule == "max" else np.sort(g, axis=2)[:, :, -2:].sum(axis=2)
    keep = np.argsort(-score, axis=1, kind="stable")[:, :topk_group]
    mask = np.zeros((N, n_group), bool)
    mask[np.arange(N)[:, None], keep] = True
    return np.where(np.repeat(mask, E // n_group, axis=1), choice, -np.inf)


def _sparsemixer(logits: np.ndarray, eps: float) -> np.ndarray:
    r"""SparseMixer's two gates per row (module docstring), zero elsewhere."""
    N = logits.shape[0]
    rows = np.arange(N)
    G = np.zeros_like(logits)
    masked = logits.copy()
    for _ in range(2):
        i = np.argmax(masked, axis=1)
        m = masked[rows, i][:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            drop = ((m - logits) / np.maximum(np.abs(logits), m)) > 2 * eps
        z = np.where(drop, -np.inf, masked)
        z = np.exp(z - z.max(axis=1, keepdims=True))
        G[rows, i] = z[rows, i] / z.sum(axis=1)
        masked[rows, i] = -np.inf
    return G


def unit_gates(w: MoEFFNWeights, U: np.ndarray) -> np.ndarray:
    r"""The diagonal :math:`D(U)` as an ``(N, EF + F_{sh})`` array: each token's gate on each stacked hidden unit."""
    if not is_numpy(U):  # another backend (torch): the discrete top-k choice on the host (module docstring)
        D = namespace(U).asarray(unit_gates_host(w, to_numpy(U)), device=device_of(U))
        return D if w.up_clamp is None else D * clamp_factors(w, U)  # the clamp's factors on the device
    D = _per_unit(w, *routing_gates(w, U))
    if w.up_clamp is not None:
        D = D * clamp_factors(w, U)
    return D


def unit_gates_host(w: MoEFFNWeights, U: np.ndarray) -> np.ndarray:
    r""":func:`unit_gates` with NumPy on the host, from a host copy ``U`` of the routed input: the router's weights are
    read back from their backend (:math:`M\times E`, small), so the top-k choice is the NumPy backend's own; an up
    clamp's factors are not included (:func:`unit_gates` multiplies them in on the device)."""
    return _per_unit(w, *_host_routing(w, U))


def _per_unit(w: MoEFFNWeights, G: np.ndarray, shared: Optional[np.ndarray]) -> np.ndarray:
    """Per-expert weights ``G`` (N, E) and the shared expert's (N,) as one value per stacked hidden unit."""
    D = np.repeat(G, w.experts[0].hidden, axis=1)
    return D if shared is None else np.concatenate([D, np.repeat(shared[:, None], w.shared.hidden, axis=1)], axis=1)


def _host_routing(w: MoEFFNWeights, U: np.ndarray) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """:func:`routing_gates` of a host copy ``U`` with the router's weights read back from their backend."""
    return _routing(w, U, *(to_numpy(a) for a in (w.router, w.shared_gate, w.router_bias, w.choice_bias)))


def clamp_factors(w: MoEFFNWeights, U: np.ndarray) -> np.ndarray:
    r"""The up clamp's factor :math:`\kappa(y)` per token and stacked unit (module docstring): 1 where
    :math:`|y - t| \le c`, else :math:`(\pm c + t)/y`."""
    c, t = w.up_clamp
    Y = U @ w.W_up if w.b_up is None else U @ w.W_up + w.b_up
    if not is_numpy(Y):  # torch: the same factors out of place (the discarded branch never divides by a hit y)
        xp = namespace(Y)
        hit = xp.abs(Y - t) > c
        return xp.where(hit, (xp.clip(Y - t, min=-c, max=c) + t) / xp.where(hit, Y, xp.ones_like(Y)),
                        xp.ones_like(Y))
    out = np.ones_like(Y)
    hit = np.abs(Y - t) > c
    if hit.any():
        out[hit] = (np.clip(Y[hit] - t, -c, c) + t) / Y[hit]  # |y - t| > c >= |t|: y != 0
    return out
