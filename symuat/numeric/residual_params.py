r"""Per-layer parameters of the general residual term (seed 001, Eq. 20).

Every block of :mod:`symuat.numeric.stack` is written, at its actual input
:math:`x' = x'_{i-1} = \operatorname{vec}_r(X_{i-1})`, as

.. math::

    x'_i = \big(W'_{i,1} x'_{i-1} + b'_{i,3}\big) + W'_{i,3}\,\sigma\big(W'_{i,2} x'_{i-1} + b'_{i,2}\big)
    \qquad\text{(Eq. 20)}.

Notation (all operators act on length-:math:`NM` row-major vectors):

* :math:`A = W'_{HVO}(U) = \sum_h H_h(U) \otimes (W_{V,h}W_{O,h})^{\mathsf T}`,
  :math:`a = \mathbf 1_N \otimes (W_O^{\mathsf T} b_V + b_O)`
  — MHA at its actual argument :math:`U` (Eq. 9–10; :math:`A` dynamic, :math:`a` static);
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

The *evaluation points* of the dynamic parameters (:math:`U`, :math:`h`, :math:`v`) are computed
here through the operators themselves, not through :func:`~symuat.numeric.stack.forward`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, FrozenSet, List

import numpy as np

from symuat.errors import InvalidValueError, ShapeError
from symuat.numeric.attention import mha_operator
from symuat.numeric.layernorm import layer_norm_operator
from symuat.numeric.operators import Compose, IdentityOperator, Kron, LinearOperator, Sum
from symuat.numeric.stack import KINDS, BlockWeights, TransformerStack, activation_function
from symuat.validation import as_finite_array, check_positive_dim, check_shape

__all__ = ["ResidualParams", "DYNAMIC", "layer_residual_params", "residual_params", "apply_residual"]

#: Which Eq. 20 parameters depend on the layer input, per block kind.
#: paper/standard: only the attention matrices H_h(x) are dynamic, so W1 and W2
#: are dynamic, W3 = I ⊗ W_2^T and the biases are static (value bias is static
#: since rows of H_h sum to one).  pre_ln: b3 = A β'_1 + a + f_2 stays static
#: because A(1_N ⊗ β) = 1_N ⊗ Σ_h (W_{V,h} W_{O,h})^T β (rows of H_h sum to one),
#: but b2 = F_1(L_2 p + β'_2) + f_1 contains the dynamic L_2 and is dynamic;
#: W3 stays static.  post_ln: the outer LN_2 multiplies W1, W3 and b3 and L_1
#: enters b2, so all five parameters are dynamic.  (Checked against two inputs
#: in tests/test_numeric_duat_form.py.)
DYNAMIC = {
    "paper": frozenset({"W1", "W2"}),
    "standard": frozenset({"W1", "W2"}),
    "pre_ln": frozenset({"W1", "W2", "b2"}),
    "post_ln": frozenset({"W1", "W2", "W3", "b2", "b3"}),
}


@dataclass(frozen=True)
class ResidualParams:
    r"""Eq. 20 parameters of one layer at one input.

    Attributes
    ----------
    W1, W2, W3 : LinearOperator
        :math:`W'_{i,1}` (NM×NM), :math:`W'_{i,2}` (NF×NM), :math:`W'_{i,3}` (NM×NF).
    b2 : (NF,) array
        :math:`b'_{i,2}`.
    b3 : (NM,) array
        :math:`b'_{i,3}`.
    kind : str
        Block kind the parameters were derived for.
    dynamic : frozenset of str
        Names of the parameters that depend on the layer input (see :data:`DYNAMIC`).
    """

    W1: LinearOperator
    W2: LinearOperator
    W3: LinearOperator
    b2: np.ndarray
    b3: np.ndarray
    kind: str = "paper"
    dynamic: FrozenSet[str] = frozenset()

    def __post_init__(self) -> None:
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
        for name, length in (("b2", self.W2.shape[0]), ("b3", n)):
            b = as_finite_array(name, getattr(self, name), ndim=1)
            check_shape(name, b, (length,))
            b = b.copy()
            b.setflags(write=False)
            object.__setattr__(self, name, b)
        object.__setattr__(self, "dynamic", frozenset(self.dynamic))


def apply_residual(params: ResidualParams, x: Any, activation: str) -> np.ndarray:
    r"""Evaluate Eq. 20: :math:`W'_1 x + b'_3 + W'_3\,\sigma(W'_2 x + b'_2)`."""
    if not isinstance(params, ResidualParams):
        raise InvalidValueError(f"params must be a ResidualParams, got {type(params).__name__}")
    sigma = activation_function(activation)
    x = as_finite_array("x", x, ndim=1)
    check_shape("x", x, (params.W1.shape[1],))
    return params.W1.matvec(x) + params.b3 + params.W3.matvec(sigma(params.W2.matvec(x) + params.b2))


def layer_residual_params(block: BlockWeights, kind: str, activation: str, X: Any) -> ResidualParams:
    r"""Eq. 20 parameters of ``block`` at its actual input ``X`` (N×M).

    Dynamic parameters are evaluated at the values the block actually sees;
    see the module docstring for the formulas and :data:`DYNAMIC` for which are dynamic.
    """
    if not isinstance(block, BlockWeights):
        raise InvalidValueError(f"block must be a BlockWeights, got {type(block).__name__}")
    if kind not in KINDS:
        raise InvalidValueError(f"kind must be one of {KINDS}, got {kind!r}")
    sigma = activation_function(activation)
    X = as_finite_array("X", X, ndim=2)
    N = check_positive_dim("X.shape[0]", X.shape[0])
    M = block.width
    check_shape("X", X, (N, M))
    x = X.reshape(-1)
    w = block.ffn
    F1, f1 = Kron(IdentityOperator(N), w.W1.T), np.tile(w.b1, N)
    F2, f2 = Kron(IdentityOperator(N), w.W2.T), np.tile(w.b2, N)
    I = IdentityOperator(N * M)

    def ln(k, V):
        p = block.ln1 if k == 1 else block.ln2
        if p is None:
            raise InvalidValueError(f"kind={kind!r} needs block.ln{k}, got None")
        return layer_norm_operator(V, p.gamma, p.beta, p.eps)

    if kind in ("paper", "standard"):
        A, a = mha_operator(X, block.attention)
        P = A if kind == "paper" else Sum([I, A])
        W1, b3 = P, a + f2
        W2, b2 = Compose([F1, P]), F1.matvec(a) + f1
        W3 = F2
    elif kind == "pre_ln":
        L1, beta1 = ln(1, X)
        U = (L1.matvec(x) + beta1).reshape(N, M)
        A, a = mha_operator(U, block.attention)
        P = Sum([I, Compose([A, L1])])
        p = A.matvec(beta1) + a
        h = P.matvec(x) + p
        L2, beta2 = ln(2, h.reshape(N, M))
        W1, b3 = P, p + f2
        W2, b2 = Compose([F1, L2, P]), F1.matvec(L2.matvec(p) + beta2) + f1
        W3 = F2
    else:  # post_ln
        A, a = mha_operator(X, block.attention)
        IA = Sum([I, A])
        L1, beta1 = ln(1, (IA.matvec(x) + a).reshape(N, M))
        P = Compose([L1, IA])
        p = L1.matvec(a) + beta1
        h = P.matvec(x) + p
        v = h + F2.matvec(sigma(F1.matvec(h) + f1)) + f2
        L2, beta2 = ln(2, v.reshape(N, M))
        W1, b3 = Compose([L2, P]), L2.matvec(p + f2) + beta2
        W2, b2 = Compose([F1, P]), F1.matvec(p) + f1
        W3 = Compose([L2, F2])
    return ResidualParams(W1, W2, W3, b2, b3, kind=kind, dynamic=DYNAMIC[kind])


def residual_params(stack: TransformerStack, X0: Any) -> List[ResidualParams]:
    r"""Eq. 20 parameters of every layer of ``stack`` along the trajectory started at ``X0``.

    The input of layer :math:`i` is obtained by applying Eq. 20 of layer :math:`i-1`
    (operator path only; the direct :func:`~symuat.numeric.stack.forward` is not used).
    """
    if not isinstance(stack, TransformerStack):
        raise InvalidValueError(f"stack must be a TransformerStack, got {type(stack).__name__}")
    X = as_finite_array("X0", X0, ndim=2)
    check_positive_dim("X0.shape[0]", X.shape[0])
    check_shape("X0", X, (None, stack.width))
    N, M = X.shape
    out = []
    for b in stack.blocks:
        p = layer_residual_params(b, stack.kind, stack.activation, X)
        out.append(p)
        X = apply_residual(p, X.reshape(-1), stack.activation).reshape(N, M)
    return out
