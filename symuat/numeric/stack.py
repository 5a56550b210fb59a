r"""Transformer stacks described by plain NumPy weights, and their direct forward pass.

Orientation: every Linear is a *feature* Linear acting on the columns,
:math:`Y = X W + \mathbf 1 b^{\mathsf T}` with :math:`X \in \mathbb{R}^{N\times M}` and
:math:`W \in \mathbb{R}^{M_{in}\times M_{out}}` (i.e. ``W`` is the transpose of a PyTorch
``nn.Linear.weight``).  On :math:`x' = \operatorname{vec}_r(X)` this is
:math:`(I_N \otimes W^{\mathsf T}) x' + \mathbf 1_N \otimes b` (docs/conventions.md).

Block kinds (``x`` is the block input, ``h`` the intermediate, all row-wise maps per token):

``"paper"`` (seed 001, Eq. 28–30)
    :math:`h = \mathrm{MHA}(x)`; :math:`x_{next} = h + \mathrm{FFN}(h)`.
``"standard"``
    :math:`h = x + \mathrm{MHA}(x)`; :math:`x_{next} = h + \mathrm{FFN}(h)`.
``"pre_ln"``
    :math:`h = x + \mathrm{MHA}(\mathrm{LN}_1(x))`; :math:`x_{next} = h + \mathrm{FFN}(\mathrm{LN}_2(h))`.
``"post_ln"``
    :math:`h = \mathrm{LN}_1(x + \mathrm{MHA}(x))`; :math:`x_{next} = \mathrm{LN}_2(h + \mathrm{FFN}(h))`.

with :math:`\mathrm{FFN}(u) = \sigma(u W_1 + \mathbf 1 b_1^{\mathsf T}) W_2 + \mathbf 1 b_2^{\mathsf T}`
(seed 001, Eq. 6 / 29).

Activations σ: ``"relu"``, ``"gelu"`` (exact, :math:`x\Phi(x)` with ``math.erf``),
``"gelu_tanh"`` (tanh approximation), ``"sigmoid"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

from symuat.errors import InvalidValueError, ShapeError
from symuat.names import logistic
from symuat.numeric.attention import AttentionWeights, multi_head_attention, resolve_scale
from symuat.numeric.layernorm import LayerNormWeights, apply_layer_norm_weights
from symuat.validation import as_finite_array, check_positive_dim, check_shape

__all__ = [
    "KINDS",
    "ACTIVATIONS",
    "activation_function",
    "FFNWeights",
    "BlockWeights",
    "TransformerStack",
    "ffn",
    "block_forward",
    "forward",
    "random_stack",
]

KINDS = ("paper", "standard", "pre_ln", "post_ln")
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "sigmoid")

_erf = np.frompyfunc(math.erf, 1, 1)


def _relu(x):
    return np.maximum(x, 0.0)


def _gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


_ACT = {"relu": _relu, "gelu": _gelu, "gelu_tanh": _gelu_tanh, "sigmoid": logistic}


def activation_function(name: str) -> Callable[[np.ndarray], np.ndarray]:
    r"""Return the elementwise σ called ``name`` (one of :data:`ACTIVATIONS`)."""
    if not isinstance(name, str) or name not in _ACT:
        raise InvalidValueError(f"activation must be one of {ACTIVATIONS}, got {name!r}")
    return lambda x: _ACT[name](np.asarray(x, dtype=np.float64))


def _frozen(name: str, a: Any, shape: Tuple[Optional[int], ...]) -> np.ndarray:
    arr = as_finite_array(name, a, ndim=len(shape))
    check_shape(name, arr, shape)
    for i, n in enumerate(arr.shape):
        check_positive_dim(f"{name}.shape[{i}]", n)
    arr = arr.copy()
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class FFNWeights:
    r"""Feed-forward weights, feature-Linear orientation (seed 001, Eq. 6 / 29).

    :math:`\mathrm{FFN}(X) = \sigma(X W_1 + \mathbf 1 b_1^{\mathsf T}) W_2 + \mathbf 1 b_2^{\mathsf T}`.

    Attributes
    ----------
    W1 : (M, F) array
    b1 : (F,) array
    W2 : (F, M) array
    b2 : (M,) array
    """

    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray

    def __post_init__(self) -> None:
        W1 = _frozen("W1", self.W1, (None, None))
        M, F = W1.shape
        object.__setattr__(self, "W1", W1)
        object.__setattr__(self, "b1", _frozen("b1", self.b1, (F,)))
        object.__setattr__(self, "W2", _frozen("W2", self.W2, (F, M)))
        object.__setattr__(self, "b2", _frozen("b2", self.b2, (M,)))

    @property
    def width(self) -> int:
        return self.W1.shape[0]

    @property
    def hidden(self) -> int:
        return self.W1.shape[1]


@dataclass(frozen=True)
class BlockWeights:
    r"""One Transformer block: attention, FFN and optional LayerNorms (``ln1``, ``ln2``)."""

    attention: AttentionWeights
    ffn: FFNWeights
    ln1: Optional[LayerNormWeights] = None
    ln2: Optional[LayerNormWeights] = None

    def __post_init__(self) -> None:
        if not isinstance(self.attention, AttentionWeights):
            raise InvalidValueError(f"attention must be an AttentionWeights, got {type(self.attention).__name__}")
        if not isinstance(self.ffn, FFNWeights):
            raise InvalidValueError(f"ffn must be an FFNWeights, got {type(self.ffn).__name__}")
        M = self.attention.width
        if self.ffn.width != M:
            raise ShapeError(f"ffn width {self.ffn.width} (W1.shape[0]) must equal attention width M={M}")
        for name in ("ln1", "ln2"):
            ln = getattr(self, name)
            if ln is None:
                continue
            if not isinstance(ln, LayerNormWeights):
                raise InvalidValueError(f"{name} must be a LayerNormWeights or None, got {type(ln).__name__}")
            if ln.width != M:
                raise ShapeError(f"{name}.gamma has length {ln.width}, expected attention width M={M}")

    @property
    def width(self) -> int:
        return self.attention.width


@dataclass(frozen=True)
class TransformerStack:
    r"""A stack of :class:`BlockWeights` with one block ``kind`` and one ``activation``.

    ``pre_ln`` / ``post_ln`` require ``ln1`` and ``ln2`` in every block;
    ``paper`` / ``standard`` forbid them (they would be silently ignored).
    """

    blocks: Tuple[BlockWeights, ...]
    kind: str = "paper"
    activation: str = "relu"

    def __post_init__(self) -> None:
        if isinstance(self.blocks, BlockWeights) or not isinstance(self.blocks, (list, tuple)):
            raise InvalidValueError(f"blocks must be a list/tuple of BlockWeights, got {type(self.blocks).__name__}")
        blocks = tuple(self.blocks)
        if not blocks:
            raise InvalidValueError("blocks must contain at least one BlockWeights (depth >= 1), got 0")
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise InvalidValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        activation_function(self.activation)
        M = None
        for i, b in enumerate(blocks):
            if not isinstance(b, BlockWeights):
                raise InvalidValueError(f"blocks[{i}] must be a BlockWeights, got {type(b).__name__}")
            if M is None:
                M = b.width
            elif b.width != M:
                raise ShapeError(f"blocks[{i}] has width {b.width}, expected {M} like blocks[0]")
            needs_ln = self.kind in ("pre_ln", "post_ln")
            for name in ("ln1", "ln2"):
                has = getattr(b, name) is not None
                if needs_ln and not has:
                    raise InvalidValueError(f"kind={self.kind!r} needs blocks[{i}].{name}, got None")
                if not needs_ln and has:
                    raise InvalidValueError(
                        f"kind={self.kind!r} uses no LayerNorm but blocks[{i}].{name} was given"
                    )
        object.__setattr__(self, "blocks", blocks)

    @property
    def width(self) -> int:
        return self.blocks[0].width

    @property
    def depth(self) -> int:
        return len(self.blocks)


def ffn(X: np.ndarray, w: FFNWeights, activation: str) -> np.ndarray:
    r"""Direct FFN :math:`\sigma(X W_1 + \mathbf 1 b_1^{\mathsf T}) W_2 + \mathbf 1 b_2^{\mathsf T}`."""
    sigma = activation_function(activation)
    X = as_finite_array("X", X, ndim=2)
    check_shape("X", X, (None, w.width))
    return sigma(X @ w.W1 + w.b1) @ w.W2 + w.b2


def block_forward(block: BlockWeights, kind: str, activation: str, X: Any) -> np.ndarray:
    r"""Direct forward pass of one block (semantics in the module docstring)."""
    if not isinstance(block, BlockWeights):
        raise InvalidValueError(f"block must be a BlockWeights, got {type(block).__name__}")
    if kind not in KINDS:
        raise InvalidValueError(f"kind must be one of {KINDS}, got {kind!r}")
    X = as_finite_array("X", X, ndim=2)
    check_positive_dim("X.shape[0]", X.shape[0])
    check_shape("X", X, (None, block.width))
    mha = lambda U: multi_head_attention(U, block.attention)  # noqa: E731
    f = lambda U: ffn(U, block.ffn, activation)  # noqa: E731
    if kind == "paper":
        H = mha(X)
        return H + f(H)
    if kind == "standard":
        H = X + mha(X)
        return H + f(H)
    if block.ln1 is None or block.ln2 is None:
        raise InvalidValueError(f"kind={kind!r} needs block.ln1 and block.ln2")
    if kind == "pre_ln":
        H = X + mha(apply_layer_norm_weights(X, block.ln1))
        return H + f(apply_layer_norm_weights(H, block.ln2))
    H = apply_layer_norm_weights(X + mha(X), block.ln1)
    return apply_layer_norm_weights(H + f(H), block.ln2)


def forward(stack: TransformerStack, X: Any) -> List[np.ndarray]:
    r"""Direct forward pass; returns the activations :math:`[X_0, X_1, \dots, X_L]`."""
    if not isinstance(stack, TransformerStack):
        raise InvalidValueError(f"stack must be a TransformerStack, got {type(stack).__name__}")
    X = as_finite_array("X", X, ndim=2)
    check_positive_dim("X.shape[0]", X.shape[0])
    check_shape("X", X, (None, stack.width))
    out = [X.copy()]
    for b in stack.blocks:
        out.append(block_forward(b, stack.kind, stack.activation, out[-1]))
    return out


def random_stack(
    rng: np.random.Generator,
    n_layers: int,
    width: int,
    n_heads: int,
    ffn_width: int,
    kind: str = "paper",
    activation: str = "relu",
    causal: bool = False,
    scale: Any = "head",
    biases: bool = True,
) -> TransformerStack:
    r"""A random :class:`TransformerStack` for tests (entries :math:`\mathcal N(0, 1/\text{fan-in})`)."""
    if not isinstance(rng, np.random.Generator):
        raise InvalidValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    L = check_positive_dim("n_layers", n_layers)
    M = check_positive_dim("width", width)
    h = check_positive_dim("n_heads", n_heads)
    F = check_positive_dim("ffn_width", ffn_width)
    if M % h:
        raise ShapeError(f"n_heads={h} must divide width={M}")
    if kind not in KINDS:
        raise InvalidValueError(f"kind must be one of {KINDS}, got {kind!r}")
    activation_function(activation)
    resolve_scale(scale, M // h, M)

    def mat(r, c):
        return rng.standard_normal((r, c)) / math.sqrt(r)

    def vec(n):
        return 0.1 * rng.standard_normal(n) if biases else None

    blocks = []
    for _ in range(L):
        attn = AttentionWeights(
            mat(M, M), mat(M, M), mat(M, M), mat(M, M),
            vec(M), vec(M), vec(M), vec(M), n_heads=h, scale=scale, causal=causal,
        )
        f = FFNWeights(mat(M, F), 0.1 * rng.standard_normal(F), mat(F, M), 0.1 * rng.standard_normal(M))
        ln1 = ln2 = None
        if kind in ("pre_ln", "post_ln"):
            ln1 = LayerNormWeights(1.0 + 0.1 * rng.standard_normal(M), 0.1 * rng.standard_normal(M))
            ln2 = LayerNormWeights(1.0 + 0.1 * rng.standard_normal(M), 0.1 * rng.standard_normal(M))
        blocks.append(BlockWeights(attn, f, ln1, ln2))
    return TransformerStack(tuple(blocks), kind, activation)
