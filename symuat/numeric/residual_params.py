r"""Per-layer parameters of the general residual term (seed 001, Eq. 20).

Every block of :mod:`symuat.numeric.stack` is written, at its actual input
:math:`x' = x'_{i-1} = \operatorname{vec}_r(X_{i-1})`, as

.. math::

    x'_i = \big(W'_{i,1} x'_{i-1} + b'_{i,3}\big) + W'_{i,3}\,\sigma\big(W'_{i,2} x'_{i-1} + b'_{i,2}\big)
    \qquad\text{(Eq. 20)}.

Notation (all operators act on length-:math:`NM` row-major vectors):

* :math:`A = W'_{HVO}(U) = \sum_h H_h(U) \otimes (W_{V,h}W_{O,h})^{\mathsf T}`,
  :math:`a = \mathbf 1_N \otimes (W_O^{\mathsf T} b_V + b_O)`
  — MHA at its actual argument :math:`U` (Eq. 9–10; :math:`A` dynamic, :math:`a` static; with attention sinks
  :math:`a` and :math:`A\beta'_1` are dynamic, ``ext:attention-sink.mv-form``, and :math:`b'_3`, :math:`b'_2` with
  them);
* :math:`F_1 = I_N \otimes W_1^{\mathsf T}`, :math:`f_1 = \mathbf 1_N \otimes b_1`,
  :math:`F_2 = I_N \otimes W_2^{\mathsf T}`, :math:`f_2 = \mathbf 1_N \otimes b_2` — FFN (Eq. 29; static);
* :math:`L_k = (D(V) \otimes \operatorname{diag}\gamma_k)(I_N \otimes C_M)`,
  :math:`\beta'_k = \mathbf 1_N\otimes\beta_k`
  — LayerNorm :math:`k` at its actual argument :math:`V` (dynamic through :math:`D(V)`).

Reductions (each is an exact algebraic rewrite of the block at the actual input):

``paper`` (Eq. 28–31): :math:`h = A x + a`, :math:`x_i = h + F_2\sigma(F_1 h + f_1) + f_2`, so
    :math:`W'_1 = A`, :math:`b'_3 = a + f_2`, :math:`W'_2 = F_1 A` (the Eq. 30→31 merge),
    :math:`b'_2 = F_1 a + f_1`, :math:`W'_3 = F_2`.
``standard``: as ``paper`` with :math:`A` replaced by :math:`P = I + A`.
``pre_ln``: :math:`h = P x + p` with :math:`P = I + A L_1`, :math:`p = A\beta'_1 + a`
    (:math:`A` evaluated at :math:`\mathrm{LN}_1(X)`); then
    :math:`W'_1 = P`, :math:`b'_3 = p + f_2`, :math:`W'_2 = F_1 L_2 P`,
    :math:`b'_2 = F_1(L_2 p + \beta'_2) + f_1`, :math:`W'_3 = F_2` (:math:`L_2` at :math:`h`).
``post_ln``: :math:`h = P x + p` with :math:`P = L_1 (I + A)`, :math:`p = L_1 a + \beta'_1`
    (:math:`L_1` at :math:`x + \mathrm{MHA}(x)`); the outer :math:`\mathrm{LN}_2` acts on the whole
    sum :math:`v = h + \mathrm{FFN}(h)`, so with :math:`L_2` at :math:`v`:
    :math:`W'_1 = L_2 P`, :math:`b'_3 = L_2(p + f_2) + \beta'_2`, :math:`W'_3 = L_2 F_2`,
    :math:`W'_2 = F_1 P`, :math:`b'_2 = F_1 p + f_1`.

``parallel``: :math:`x_i = x + \mathrm{MHA}(N_1x) + \mathrm{FFN}(N_2x)`, :math:`A` at :math:`N_1(X)`,
    :math:`L_2` at :math:`x`: :math:`W'_1 = I + A L_1`, :math:`b'_3 = A\beta'_1 + a + f_2`,
    :math:`W'_2 = F_1 L_2` (no :math:`W'_1` inside), :math:`b'_2 = F_1\beta'_2 + f_1`, :math:`W'_3 = F_2`.
``sublayer_post_ln``: :math:`h = x + N_1(\mathrm{MHA}(x))`, :math:`x_i = h + N_2(\mathrm{FFN}(h))`, with
    :math:`P = I + L_1 A`, :math:`p = L_1 a + \beta'_1` (:math:`L_1` at :math:`\mathrm{MHA}(x)`, :math:`L_2` at
    :math:`\mathrm{FFN}(h)`): :math:`W'_1 = P`, :math:`b'_3 = p + L_2 f_2 + \beta'_2`, :math:`W'_3 = L_2F_2`,
    :math:`W'_2 = F_1P`, :math:`b'_2 = F_1p + f_1`.

``pre_ln`` with a cross-attention (a decoder block, :mod:`symuat.numeric.cross`): :math:`h = Px + p + c` with
    :math:`c = W'_E(x', e')e' + a_E` the cross-attention's output at :math:`\mathrm N_c(Px + p)` (dynamic, constant in
    :math:`x'`); :math:`p` becomes :math:`p + c` above, so :math:`b'_3`, :math:`b'_2` (and :math:`b'_4`) are
    dynamic (``ext:cross-attention.mv-form``).

Gated FFN :math:`F_d(\mathrm{act}(F_g u + f_g) \odot (F_u u + f_u)) + f_d` at the FFN argument
:math:`u = Qx + q`: the extended Eq. 20
:math:`x_i = W'_1x + b'_3 + W'_3(\mathrm{act}(W'_2x + b'_2) \odot (W'_4x + b'_4))` with
:math:`W'_2 = F_gQ`, :math:`b'_2 = F_gq + f_g`, :math:`W'_4 = F_uQ`, :math:`b'_4 = F_uq + f_u` and
:math:`F_1, F_2` replaced by :math:`F_g, F_d` above.  Norms :math:`L_k` may be LayerNorm or RMSNorm
(:math:`C_M \to I`, :math:`\beta_k = 0`).

The *evaluation points* of the dynamic parameters (:math:`U`, :math:`h`, :math:`v`) are computed
here through the operators themselves, not through :func:`~symuat.numeric.stack.forward`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, FrozenSet, List, Optional

import numpy as np

from ..errors import InvalidValueError, ShapeError
from ..validation import check_shape
from .attention import check_attention_mask
from .backend import (
    as_backend_array,
    check_same_backend,
    copy_array,
    is_array,
    is_numpy,
    namespace,
    tile,
    zeros_like_backend,
)
from .cross import cross_attention
from .ffn import activation_function, ffn_operators
from .mha_operator import _mha_operator, head_source, hvo_bias_image
from .moe import MoEFFNWeights
from .norms import norm_on_constant_rows, norm_operator
from .operators import _TRUSTED, Compose, IdentityOperator, LinearOperator, Sum
from .routed import RoutedLinear
from .stack import BlockWeights, TransformerStack, _prepare, check_input, check_kind

__all__ = ["ResidualParams", "DYNAMIC", "dynamic_parameters", "layer_residual_params", "residual_params",
           "apply_residual"]

#: Which Eq. 20 parameters depend on the layer input, per residual layout.
#: paper/standard: only the attention matrices H_h(x) are dynamic, so W1 and W2
#: are dynamic, W3 = I ⊗ W_2^T and the biases are static (value bias is static
#: since rows of H_h sum to one).  pre_ln: b3 = A β'_1 + a + f_2 stays static
#: because A(1_N ⊗ β) = 1_N ⊗ Σ_h (W_{V,h} W_{O,h})^T β (rows of H_h sum to one),
#: but b2 = F_1(L_2 p + β'_2) + f_1 contains the dynamic L_2 and is dynamic;
#: W3 stays static.  post_ln: the outer LN_2 multiplies W1, W3 and b3 and L_1
#: enters b2, so all five parameters are dynamic.  parallel: W2 = F_1 L_2 is
#: dynamic, b2 = F_1 β'_2 + f_1 and b3 = A β'_1 + a + f_2 are static.
#: sublayer_post_ln: L_2 multiplies W3 and enters b3, L_1 enters b2: all dynamic.
#: (Checked against two inputs in tests/test_numeric_duat_form.py.)
DYNAMIC = {
    "paper": frozenset({"W1", "W2"}),
    "standard": frozenset({"W1", "W2"}),
    "pre_ln": frozenset({"W1", "W2", "b2"}),
    "post_ln": frozenset({"W1", "W2", "W3", "b2", "b3"}),
    "parallel": frozenset({"W1", "W2"}),
    "sublayer_post_ln": frozenset({"W1", "W2", "W3", "b2", "b3"}),
    "sandwich": frozenset({"W1", "W2", "W3", "b2", "b3"}),
}


def dynamic_parameters(kind: str, gated: bool) -> FrozenSet[str]:
    """:data:`DYNAMIC` of ``kind``; a gated FFN adds ``W4``/``b4`` exactly when ``W2``/``b2`` are dynamic."""
    dyn = DYNAMIC[check_kind(kind)]
    if gated:
        dyn = dyn | {n.replace("2", "4") for n in dyn if n in ("W2", "b2")}
    return frozenset(dyn)


@dataclass(frozen=True)
class ResidualParams:
    r"""Eq. 20 parameters of one layer at one input (the gated extension adds ``W4``, ``b4``).

    Attributes
    ----------
    W1, W2, W3 : LinearOperator
        :math:`W'_{i,1}` (NM×NM), :math:`W'_{i,2}` (NF×NM), :math:`W'_{i,3}` (NM×NF).
    b2 : (NF,) array
        :math:`b'_{i,2}`.
    b3 : (NM,) array
        :math:`b'_{i,3}`.
    kind : str
        Residual layout the parameters were derived for.
    dynamic : frozenset of str
        Names of the parameters that depend on the layer input (see :func:`dynamic_parameters`).
    W4 : LinearOperator or None
        :math:`W'_{i,4}` (NF×NM), gated FFN only.
    b4 : (NF,) array or None
        :math:`b'_{i,4}`, gated FFN only.
    activation : str
        σ (the gate's activation for a gated FFN).
    factors : tuple or None
        ``(core, W1_outer, W2_outer, W4_outer)`` with :math:`W'_1 = W_{1,outer} \circ core`,
        :math:`W'_2 = W_{2,outer} \circ core` (``None`` = identity): the shared factor that lets an
        evaluator apply :math:`W'_2` to vectors that :math:`W'_1` has already seen (the Eq. 30→31 merge).
    """

    W1: LinearOperator
    W2: LinearOperator
    W3: LinearOperator
    b2: np.ndarray
    b3: np.ndarray
    kind: str = "paper"
    dynamic: FrozenSet[str] = frozenset()
    W4: Optional[LinearOperator] = None
    b4: Optional[np.ndarray] = None
    activation: str = "relu"
    factors: Optional[tuple] = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if _TRUSTED.get():
            return
        for name in ("W1", "W2", "W3"):
            if not isinstance(getattr(self, name), LinearOperator):
                raise InvalidValueError(f"{name} must be a LinearOperator, got {type(getattr(self, name)).__name__}")
        n = self.W1.shape[1]
        if self.W1.shape != (n, n):
            raise ShapeError(f"W1 must be square, got shape {self.W1.shape}")
        if self.W2.shape[1] != n:
            raise ShapeError(f"W2 must have {n} columns like W1, got shape {self.W2.shape}")
        if self.W3.shape != (n, self.W2.shape[0]):
            raise ShapeError(f"W3 must have shape {(n, self.W2.shape[0])}, got {self.W3.shape}")
        if (self.W4 is None) != (self.b4 is None):
            raise InvalidValueError("W4 and b4 (gated FFN) must be given together")
        if self.W4 is not None and (not isinstance(self.W4, LinearOperator) or self.W4.shape != self.W2.shape):
            raise ShapeError(f"W4 must be a LinearOperator of shape {self.W2.shape} like W2")
        for name, length in (("b2", self.W2.shape[0]), ("b3", n), ("b4", self.W2.shape[0])):
            if getattr(self, name) is None:
                continue
            b = as_backend_array(name, getattr(self, name), 1)
            check_shape(name, b, (length,))
            b = copy_array(b)
            if is_numpy(b):
                b.setflags(write=False)
            object.__setattr__(self, name, b)
        object.__setattr__(self, "dynamic", frozenset(self.dynamic))
        activation_function(self.activation)

    @property
    def gated(self) -> bool:
        return self.W4 is not None

    def __repr__(self) -> str:
        n, f = self.W1.shape[0], self.W2.shape[0]
        return (f"ResidualParams(kind={self.kind!r}, NM={n}, NF={f}, gated={self.gated}, "
                f"activation={self.activation!r}, dynamic={sorted(self.dynamic)})")


def _residual(p: ResidualParams, x: np.ndarray) -> np.ndarray:
    act = activation_function(p.activation)
    g = act(p.W2._matvec(x) + p.b2)
    if p.W4 is not None:
        g = g * (p.W4._matvec(x) + p.b4)
    return p.W1._matvec(x) + p.b3 + p.W3._matvec(g)


def apply_residual(params: ResidualParams, x: Any, activation: Optional[str] = None) -> np.ndarray:
    r"""Evaluate Eq. 20, :math:`W'_1 x + b'_3 + W'_3\,\sigma(W'_2 x + b'_2)`.

    Gated: :math:`\sigma(\cdot)` becomes :math:`\sigma(W'_2 x + b'_2)\odot(W'_4x + b'_4)`.

    ``activation`` defaults to ``params.activation``.
    """
    if not isinstance(params, ResidualParams):
        raise InvalidValueError(f"params must be a ResidualParams, got {type(params).__name__}")
    if activation is not None and activation != params.activation:
        activation_function(activation)
        params = ResidualParams(params.W1, params.W2, params.W3, params.b2, params.b3, params.kind,
                                params.dynamic, params.W4, params.b4, activation)
    x = as_backend_array("x", x, 1)
    check_shape("x", x, (params.W1.shape[1],))
    return _residual(params, x)


def _static_hvo(block: BlockWeights, N: int, beta: np.ndarray, A: Any = None) -> np.ndarray:
    r""":math:`A\beta'_1` from the static formula (rows of H_h sum to one); zero for RMSNorm.  With attention sinks
    the rows sum to :math:`1-\pi_{h,n}`: applied through ``A`` itself (a dynamic vector)."""
    M = block.width
    if not (np.any(beta[:M]) if is_numpy(beta) else bool(namespace(beta).any(beta[:M] != 0))):
        return zeros_like_backend(beta, N * M)
    if not block.attention.stochastic_rows:
        return A._matvec(beta)
    return tile(hvo_bias_image(block.attention, beta[:M]), N)


def _rows_linear(qs, N: int, W: np.ndarray, b: Optional[np.ndarray], routed=None) -> np.ndarray:
    """``vec_r`` of the rows :math:`(D_n w + c) W + b`, :math:`n = 1..N` (``D`` None: constant rows); with a
    mixture of experts' ``routed`` operator (:class:`~symuat.numeric.routed.RoutedLinear`), only the selected
    units, 0 elsewhere (:math:`S(u)` times the rows)."""
    D, w, c = qs
    const = c @ W if b is None else c @ W + b
    if routed is not None:
        wW = None if D is None else w @ W
        out = np.zeros((N, W.shape[1]))
        for (s, t), rows in zip(routed.blocks, routed.rows):
            out[rows, s:t] = const[s:t] if D is None else np.outer(D[rows], wW[s:t]) + const[s:t]
        return out.reshape(-1)
    if D is None:
        return tile(const, N)
    if not is_numpy(D):
        return (D[:, None] * (w @ W)[None, :] + const).reshape(-1)
    return (np.outer(D, w @ W) + const).reshape(-1)


def _layer_params(block: BlockWeights, kind: str, act_name: str, X: np.ndarray, mask,
                  where: str = "", Px_fn=None) -> ResidualParams:
    """Eq. 20 parameters; ``Px_fn(P)``, if given, returns :math:`P x` (pre_ln: an evaluator that already
    applies :math:`P` to the pieces of :math:`x` supplies it, saving one attention application)."""
    N, M = X.shape
    x = X.reshape(-1)
    f = block.ffn
    moe = isinstance(f, MoEFFNWeights)  # its routing (S(u), D(u)) is read at the FFN input u, known below
    ops = None if moe else ffn_operators(N, f)
    fout = zeros_like_backend(x, N * M) if moe else ops["out"][1]
    act = activation_function(act_name)
    I = IdentityOperator(N * M)
    sinks = not block.attention.stochastic_rows  # sinks, latent attention: the biases after attention vary by row
    varying = sinks or block.cross is not None  # a cross-attention's output joins the bias: it varies by row too

    def attn(U):
        return _mha_operator(N, block.attention, head_source(U, block.attention, mask, where))

    def norm(k):
        return block.ln1 if k == 1 or block.ln2 is None else block.ln2

    def ln(k, v):
        return norm_operator(v.reshape(N, M), norm(k))

    zero = zeros_like_backend(x, M)

    def at(u):  # the FFN's operators; a mixture of experts' are built at its input u (the routing)
        nonlocal ops
        if ops is None:
            ops = ffn_operators(N, f, u.reshape(N, M))
        return u

    def ffn_value(u):
        at(u)
        g = act(ops["in"][0]._matvec(u) + ops["in"][1])
        if "up" in ops:
            g = g * (ops["up"][0]._matvec(u) + ops["up"][1])
        return ops["out"][0]._matvec(g) + fout

    # W1 = Y∘P, W2 = F_in∘Q∘P (Q, Y None = identity), or P None when nothing is shared
    Z = Y = Q = None  # Z: linear map applied after the FFN (post-norms)
    if kind in ("paper", "standard"):
        A, a = attn(X)
        P = A if kind == "paper" else Sum([I, A])
        b3, qs = a + fout, (a if sinks else (None, zero, a[:M]))
        if moe:
            at((P._matvec(x) if Px_fn is None else Px_fn(P)) + a)
    elif kind == "pre_ln":
        L1, beta1 = ln(1, x)
        A, a = attn((L1._matvec(x) + beta1).reshape(N, M))
        P = Sum([I, Compose([A, L1])])
        p = _static_hvo(block, N, beta1, A) + a
        h = (P._matvec(x) if Px_fn is None else Px_fn(P)) + p
        if block.cross is not None:  # a decoder block: + W'_E(x', e') e' + a_E, constant in x' (numeric.cross)
            c = cross_attention(block.cross, h.reshape(N, M), where).reshape(-1)
            p, h = p + c, h + c
        Q, beta2 = ln(2, h)
        b3, qs = p + fout, (Q._matvec(p) + beta2 if varying else
                            norm_on_constant_rows(h.reshape(N, M), norm(2), p[:M]))
        if moe:
            at(Q._matvec(h) + beta2)
    elif kind == "post_ln":
        A, a = attn(X)
        IA = Sum([I, A])
        u = IA._matvec(x) + a
        L1, beta1 = ln(1, u)
        P, p = Compose([L1, IA]), L1._matvec(a) + beta1
        qs = p if sinks else norm_on_constant_rows(u.reshape(N, M), norm(1), a[:M])
        h = P._matvec(x) + p
        Z, beta2 = ln(2, h + ffn_value(h))
        Y, b3 = Z, Z._matvec(p + fout) + beta2
    elif kind == "parallel":
        L1, beta1 = ln(1, x)
        A, a = attn((L1._matvec(x) + beta1).reshape(N, M))
        Q, q = (L1, beta1) if block.ln2 is None else ln(2, x)
        qs = (None, zero, q[:M])
        Y, P, b3 = Sum([I, Compose([A, L1])]), None, _static_hvo(block, N, beta1, A) + a + fout
        if moe:
            at(Q._matvec(x) + q)
    elif kind == "sandwich":  # h = x + N2(A N1 x), x+ = h + N4(FFN(N3 h))
        L1, beta1 = norm_operator(X, block.ln1)
        A, a = attn((L1._matvec(x) + beta1).reshape(N, M))
        core = Compose([A, L1])
        m0 = _static_hvo(block, N, beta1, A) + a
        L2, beta2 = norm_operator((core._matvec(x) + m0).reshape(N, M), block.ln2)
        P = Sum([I, Compose([L2, core])])
        p = L2._matvec(m0) + beta2
        h = (P._matvec(x) if Px_fn is None else Px_fn(P)) + p
        Q, beta3 = norm_operator(h.reshape(N, M), block.ln3)
        q = Q._matvec(p) + beta3
        Z, beta4 = norm_operator(ffn_value(Q._matvec(h - p) + q).reshape(N, M), block.ln4)
        b3, qs = p + Z._matvec(fout) + beta4, q
    else:  # sublayer_post_ln
        A, a = attn(X)
        m = A._matvec(x) + a
        L1, beta1 = ln(1, m)
        P, p = Sum([I, Compose([L1, A])]), L1._matvec(a) + beta1
        qs = p if sinks else norm_on_constant_rows(m.reshape(N, M), norm(1), a[:M])
        h = P._matvec(x) + p
        Z, beta2 = ln(2, ffn_value(h))
        b3 = p + Z._matvec(fout) + beta2
    Fin, fin = ops["in"]
    Fout = ops["out"][0]
    W3 = Fout if Z is None else Compose([Z, Fout])
    G = Fin if Q is None else Compose([Fin, Q])
    # b'_2 = S(u)(...), b'_4 = S(u)(...): the unselected units are 0 (the routed form; the dense one gates them later)
    routed = Fin if isinstance(Fin, RoutedLinear) else None
    # b2 = F_in q + f_in with the FFN argument's bias q = D ⊗ w + 1 ⊗ c (rows D_n w + c): O(MF)
    if is_array(qs):  # sandwich: the FFN argument's bias q has no row structure (full vector)
        b2 = Fin._matvec(qs) + fin
    else:
        b2 = _rows_linear(qs, N, *((f.W_gate, f.b_gate) if f.gated else (f.W1, f.b1)), routed)
        if "in_scale" in ops:  # input-scaled experts (Llama 4): b'_2 = D_in(u)(...), like W'_2 (its operator)
            b2 = ops["in_scale"] * b2
    G4 = W4 = b4 = None
    if "up" in ops:
        G4 = ops["up"][0] if Q is None else Compose([ops["up"][0], Q])
        b4 = (ops["up"][0]._matvec(qs) + ops["up"][1]) if is_array(qs) else _rows_linear(
            qs, N, f.W_up, f.b_up, routed)

    def compose(outer, core):
        return outer if core is None else (core if outer is None else Compose([outer, core]))

    W1, W2, W4 = compose(Y, P), compose(G, P), (None if G4 is None else compose(G4, P))
    dynamic = dynamic_parameters(kind, W4 is not None) | ({"W3"} if moe else set())  # MoE: W'_3 = ... D(u)
    if varying:  # the value bias H_h 1 b_V^T (and A beta'_1), or W'_E e', depend on the input: b'_3, and b'_2
        dynamic |= {"b3"} | (set() if kind == "parallel" else {"b2"} | ({"b4"} if W4 is not None else set()))
    return ResidualParams(W1, W2, W3, b2, b3, kind=kind, dynamic=frozenset(dynamic),
                          W4=W4, b4=b4, activation=act_name, factors=(P, Y, G, G4))


def layer_residual_params(block: BlockWeights, kind: str, activation: str, X: Any,
                          attention_mask: Any = None) -> ResidualParams:
    r"""Eq. 20 parameters of ``block`` at its actual input ``X`` (N×M).

    Dynamic parameters are evaluated at the values the block actually sees;
    see the module docstring for the formulas and :data:`DYNAMIC` for which are dynamic.
    """
    if not isinstance(block, BlockWeights):
        raise InvalidValueError(f"block must be a BlockWeights, got {type(block).__name__}")
    kind = check_kind(kind)
    act = block.ffn.activation or activation
    activation_function(act)
    X = as_backend_array("X", X, 2)
    check_shape("X", X, (None, block.width))
    check_same_backend("X", X, block.attention.W_O)
    if X.shape[0] < 1:
        raise ShapeError("X must have at least one row")
    if (kind in ("pre_ln", "post_ln", "sublayer_post_ln") and (block.ln1 is None or block.ln2 is None)) or (
            kind == "parallel" and block.ln1 is None) or (
            kind == "sandwich" and any(getattr(block, f"ln{k}") is None for k in range(1, 5))):
        raise InvalidValueError(f"kind={kind!r} needs the block's norms (ln1/ln2), got None")
    return _layer_params(block, kind, act, X, check_attention_mask(attention_mask, X.shape[0]))


def residual_params(stack: TransformerStack, X0: Any, attention_mask: Any = None) -> List[ResidualParams]:
    r"""Eq. 20 parameters of every layer of ``stack`` along the trajectory started at ``X0``.

    ``X0`` is the stack's input (``inputs_embeds``); the static input transform is applied first.
    The input of layer :math:`i` is obtained by applying Eq. 20 of layer :math:`i-1`
    (operator path only; the direct :func:`~symuat.numeric.stack.forward` is not used).
    """
    X, mask = check_input(stack, X0, attention_mask)
    X = _prepare(stack, X)
    N, M = X.shape
    out = []
    for i, b in enumerate(stack.blocks):
        p = _layer_params(b, stack.kind, stack.block_activation(i), X, mask, f" in layer {i + 1}")
        out.append(p)
        X = _residual(p, X.reshape(-1)).reshape(N, M)
    return out
