r"""Feed-forward sublayers: the paper's FFN and the gated FFN of modern LLMs, directly and as operators.

Feature-Linear orientation (:math:`Y = XW + \mathbf 1 b^{\mathsf T}`, ``W`` is the transpose of a PyTorch
``nn.Linear.weight``).

* :class:`FFNWeights` (seed 001, Eq. 6 / 29):
  :math:`\mathrm{FFN}(X) = \sigma(X W_1 + \mathbf 1 b_1^{\mathsf T}) W_2 + \mathbf 1 b_2^{\mathsf T}`.
* :class:`GatedFFNWeights` (SwiGLU / GeGLU, Shazeer 2020):
  :math:`\mathrm{FFN}(X) = \big(\mathrm{act}(X W_g + \mathbf 1 b_g^{\mathsf T})
  \odot (X W_u + \mathbf 1 b_u^{\mathsf T})\big) W_d + \mathbf 1 b_d^{\mathsf T}`.

On :math:`x' = \operatorname{vec}_r(X)` every Linear is
:math:`(I_N \otimes W^{\mathsf T}) x' + \mathbf 1_N \otimes b` (:func:`ffn_operators`).
Activations: ``relu``, ``gelu`` (exact, :math:`x\Phi(x)`), ``gelu_tanh``,
``sigmoid``, ``silu`` (:math:`x\,\mathrm{sigmoid}(x)`), ``quick_gelu`` (:math:`x\,\mathrm{sigmoid}(1.702x)`,
CLIP), ``relu2`` (:math:`\max(x,0)^2`, Primer) and ``gelu_fast`` (:math:`\tfrac12 x(1+\tanh(0.7978845608\,x
(1+0.044715x^2)))`: the tanh GELU with its constant rounded to ten digits, so it differs from ``gelu_tanh`` by
:math:`\sim 10^{-12}`), ``gelu_bloom`` (BLOOM's, the constant rounded to ``0.79788456``) and ``quick_gelu_clamp7``
(GPT-OSS's gate, :math:`c\,\mathrm{sigmoid}(1.702c)` with :math:`c = \min(x, 7)`: its released ``swiglu_alpha`` and
``swiglu_limit``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple, Union

import numpy as np

from ..errors import InvalidValueError
from ..names import logistic
from ..validation import check_shape
from ._arrays import frozen
from .backend import as_backend_array, check_same_backend, is_numpy, namespace, tile, zeros_like_backend
from .operators import IdentityOperator, Kron

__all__ = ["ACTIVATIONS", "activation_function", "FFNWeights", "GatedFFNWeights", "AnyFFN", "ffn", "ffn_operators"]

ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "sigmoid", "silu", "quick_gelu", "relu2", "gelu_fast", "gelu_bloom",
               "quick_gelu_clamp7")

_erf = np.frompyfunc(math.erf, 1, 1)


def _relu(x):
    return np.maximum(x, 0.0)


def _gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x))))


def _silu(x):
    out = logistic(x)  # a fresh array: multiplied in place (x * s(x) = s(x) * x exactly), no second temporary
    out *= x
    return out


def _quick_gelu(x):
    return x * logistic(1.702 * x)


def _relu2(x):
    r = np.maximum(x, 0.0)
    return r * r


def _gelu_fast(x):
    return 0.5 * x * (1.0 + np.tanh(x * 0.7978845608 * (1.0 + 0.044715 * (x * x))))


def _gelu_bloom(x):
    return x * 0.5 * (1.0 + np.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


def _quick_gelu_clamp7(x):
    c = np.minimum(x, 7.0)
    return c * logistic(c * 1.702)


_ACT = {"relu": _relu, "gelu": _gelu, "gelu_tanh": _gelu_tanh, "sigmoid": logistic, "silu": _silu,
        "quick_gelu": _quick_gelu, "relu2": _relu2, "gelu_fast": _gelu_fast,
        "gelu_bloom": _gelu_bloom, "quick_gelu_clamp7": _quick_gelu_clamp7}


def _logistic_xp(xp, x):
    return 0.5 * (1.0 + xp.tanh(0.5 * x))


#: The same σ on an array-API backend (torch): ``name -> f(xp, x)``, the formulas above with the namespace's functions
#: (GELU's erf is the backend's own: torch's ``erf``).
_ACT_XP = {
    "relu": lambda xp, x: xp.where(x > 0, x, 0.0),
    "gelu": lambda xp, x: 0.5 * x * (1.0 + xp.erf(x / math.sqrt(2.0))),
    "gelu_tanh": lambda xp, x: 0.5 * x * (1.0 + xp.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x)))),
    "sigmoid": _logistic_xp,
    "silu": lambda xp, x: x * _logistic_xp(xp, x),
    "quick_gelu": lambda xp, x: x * _logistic_xp(xp, 1.702 * x),
    "relu2": lambda xp, x: xp.where(x > 0, x, 0.0) ** 2,
    "gelu_fast": lambda xp, x: 0.5 * x * (1.0 + xp.tanh(x * 0.7978845608 * (1.0 + 0.044715 * (x * x)))),
    "gelu_bloom": lambda xp, x: x * 0.5 * (1.0 + xp.tanh(0.79788456 * x * (1 + 0.044715 * x * x))),
    "quick_gelu_clamp7": lambda xp, x: xp.minimum(x, 7.0) * _logistic_xp(xp, xp.minimum(x, 7.0) * 1.702),
}


def _activate(name: str, x: Any) -> Any:
    if is_numpy(x) or not hasattr(x, "device"):
        return _ACT[name](np.asarray(x, dtype=np.float64))
    return _ACT_XP[name](namespace(x), x)


def activation_function(name: str) -> Callable[[np.ndarray], np.ndarray]:
    r"""Return the elementwise σ called ``name`` (one of :data:`ACTIVATIONS`).

    >>> float(activation_function("silu")(np.array([0.0]))[0])
    0.0
    """
    if not isinstance(name, str) or name not in _ACT:
        raise InvalidValueError(f"activation must be one of {ACTIVATIONS}, got {name!r}")
    return lambda x: _activate(name, x)



def _check_activation(act: Optional[str]) -> None:
    if act is not None:
        activation_function(act)


@dataclass(frozen=True)
class FFNWeights:
    r"""Feed-forward weights, feature-Linear orientation (seed 001, Eq. 6 / 29).

    :math:`\mathrm{FFN}(X) = \sigma(X W_1 + \mathbf 1 b_1^{\mathsf T}) W_2 + \mathbf 1 b_2^{\mathsf T}`.

    Attributes
    ----------
    W1 : (M, F) array
    b1 : (F,) array or None
    W2 : (F, M) array
    b2 : (M,) array or None
    activation : str, optional
        σ of this block; ``None`` uses the stack's activation.
    """

    W1: np.ndarray
    b1: Optional[np.ndarray]
    W2: np.ndarray
    b2: Optional[np.ndarray]
    activation: Optional[str] = None

    def __post_init__(self) -> None:
        W1 = frozen("W1", self.W1, (None, None))
        M, F = W1.shape
        object.__setattr__(self, "W1", W1)
        object.__setattr__(self, "b1", frozen("b1", self.b1, (F,), optional=True))
        object.__setattr__(self, "W2", frozen("W2", self.W2, (F, M)))
        object.__setattr__(self, "b2", frozen("b2", self.b2, (M,), optional=True))
        _check_activation(self.activation)

    gated = False

    @property
    def width(self) -> int:
        return self.W1.shape[0]

    @property
    def hidden(self) -> int:
        return self.W1.shape[1]

    def __repr__(self) -> str:
        return f"FFNWeights(width={self.width}, hidden={self.hidden}, activation={self.activation!r})"


@dataclass(frozen=True)
class GatedFFNWeights:
    r"""Gated FFN :math:`(\mathrm{act}(X W_g + b_g) \odot (X W_u + b_u)) W_d + b_d` (SwiGLU, GeGLU).

    Attributes
    ----------
    W_gate, W_up : (M, F) arrays
    W_down : (F, M) array
    b_gate, b_up : (F,) arrays or None
    b_down : (M,) array or None
    activation : str
        ``silu`` (SwiGLU), ``gelu``, ``gelu_tanh`` (GeGLU), ``relu``, ``sigmoid``; ``None`` uses the stack's.
    """

    W_gate: np.ndarray
    W_up: np.ndarray
    W_down: np.ndarray
    b_gate: Optional[np.ndarray] = None
    b_up: Optional[np.ndarray] = None
    b_down: Optional[np.ndarray] = None
    activation: Optional[str] = "silu"

    gated = True

    def __post_init__(self) -> None:
        Wg = frozen("W_gate", self.W_gate, (None, None))
        M, F = Wg.shape
        object.__setattr__(self, "W_gate", Wg)
        object.__setattr__(self, "W_up", frozen("W_up", self.W_up, (M, F)))
        object.__setattr__(self, "W_down", frozen("W_down", self.W_down, (F, M)))
        object.__setattr__(self, "b_gate", frozen("b_gate", self.b_gate, (F,), optional=True))
        object.__setattr__(self, "b_up", frozen("b_up", self.b_up, (F,), optional=True))
        object.__setattr__(self, "b_down", frozen("b_down", self.b_down, (M,), optional=True))
        _check_activation(self.activation)

    @property
    def width(self) -> int:
        return self.W_gate.shape[0]

    @property
    def hidden(self) -> int:
        return self.W_gate.shape[1]

    def __repr__(self) -> str:
        return f"GatedFFNWeights(width={self.width}, hidden={self.hidden}, activation={self.activation!r})"


AnyFFN = Union[FFNWeights, GatedFFNWeights]


def _lin(X: np.ndarray, W: np.ndarray, b: Optional[np.ndarray]) -> np.ndarray:
    return X @ W if b is None else X @ W + b


def ffn(X: Any, w: AnyFFN, activation: Optional[str] = None) -> np.ndarray:
    r"""Direct FFN of either kind; ``w.activation`` wins over ``activation`` when set.

    >>> w = FFNWeights(np.eye(2), None, np.eye(2), None)
    >>> ffn(np.array([[1.0, -1.0]]), w, "relu").tolist()
    [[1.0, 0.0]]
    """
    if not isinstance(w, (FFNWeights, GatedFFNWeights)):
        raise InvalidValueError(f"ffn weights must be FFNWeights or GatedFFNWeights, got {type(w).__name__}")
    act = activation_function(w.activation or activation or "relu")
    X = as_backend_array("X", X, 2)
    check_shape("X", X, (None, w.width))
    check_same_backend("X", X, w.W_gate if w.gated else w.W1)
    return _ffn(X, w, act)


def _ffn(X: np.ndarray, w: AnyFFN, act: Callable) -> np.ndarray:
    if w.gated:
        pre = _lin(X, w.W_gate, w.b_gate)
        if getattr(w, "input_scaled", False):  # Llama 4: the expert's input times its routing weight
            pre = pre * w.input_scales(X)
        g = act(pre) * _lin(X, w.W_up, w.b_up)
        if hasattr(w, "router"):  # mixture of experts: the routing gates D(X) (symuat.numeric.moe)
            g = g * w.gates(X)
        return _lin(g, w.W_down, w.b_down)
    return _lin(act(_lin(X, w.W1, w.b1)), w.W2, w.b2)


def _op(N: int, W: np.ndarray, b: Optional[np.ndarray]) -> Tuple[Kron, np.ndarray]:
    return Kron(IdentityOperator(N), W.T), (zeros_like_backend(W, N * W.shape[1]) if b is None else tile(b, N))


def ffn_operators(N: int, w: AnyFFN, U: Optional[np.ndarray] = None) -> dict:
    r"""The FFN's Linears on :math:`x'` as ``{name: (I_N ⊗ W^T, 1_N ⊗ b)}``.

    Names: ``in`` (:math:`W_1` or :math:`W_g`), ``up`` (:math:`W_u`, gated only) and ``out``
    (:math:`W_2` or :math:`W_d`).  A mixture of experts needs its input ``U`` (N×M): its ``in`` and ``up`` are
    :math:`S(U)(I_N \otimes W^{\mathsf T})` with the 0/1 selection :math:`S`, its ``out``
    :math:`(I_N \otimes W_d^{\mathsf T})\,\mathrm{diag}(\operatorname{vec}_r D(U))` with the routing gates, all
    evaluated on the selected experts only (:mod:`symuat.numeric.routed`).
    """
    if hasattr(w, "router"):
        if U is None:
            raise InvalidValueError("the operators of a mixture of experts need its input U (the routing)")
        return w.operators(U)  # the selected experts only (MoEFFNWeights.operators)
    if w.gated:
        return {"in": _op(N, w.W_gate, w.b_gate), "up": _op(N, w.W_up, w.b_up), "out": _op(N, w.W_down, w.b_down)}
    return {"in": _op(N, w.W1, w.b1), "out": _op(N, w.W2, w.b2)}
