r"""Transformer stacks described by plain NumPy weights, and their direct forward pass.

Orientation: every Linear is a *feature* Linear acting on the columns,
:math:`Y = X W + \mathbf 1 b^{\mathsf T}` with :math:`X \in \mathbb{R}^{N\times M}` and
:math:`W \in \mathbb{R}^{M_{in}\times M_{out}}` (i.e. ``W`` is the transpose of a PyTorch
``nn.Linear.weight``).  On :math:`x' = \operatorname{vec}_r(X)` this is
:math:`(I_N \otimes W^{\mathsf T}) x' + \mathbf 1_N \otimes b`.

Residual layouts (``kind``; ``x`` is the block input, N1/N2 its norms — LayerNorm or RMSNorm):

``"paper"`` (seed 001, Eq. 28–30)
    :math:`h = \mathrm{MHA}(x)`; :math:`x_{next} = h + \mathrm{FFN}(h)`.
``"standard"``
    :math:`h = x + \mathrm{MHA}(x)`; :math:`x_{next} = h + \mathrm{FFN}(h)`.
``"pre_ln"`` (GPT-2, Llama, …)
    :math:`h = x + \mathrm{MHA}(\mathrm N_1(x))`; :math:`x_{next} = h + \mathrm{FFN}(\mathrm N_2(h))`.
``"post_ln"`` (BERT, ``nn.TransformerEncoderLayer``)
    :math:`h = \mathrm N_1(x + \mathrm{MHA}(x))`; :math:`x_{next} = \mathrm N_2(h + \mathrm{FFN}(h))`.
``"parallel"`` (GPT-J, GPT-NeoX, Falcon)
    :math:`x_{next} = x + \mathrm{MHA}(\mathrm N_1(x)) + \mathrm{FFN}(\mathrm N_2(x))`, N2 = N1 when ``ln2`` is None.
``"sublayer_post_ln"`` (OLMo-2)
    :math:`h = x + \mathrm N_1(\mathrm{MHA}(x))`; :math:`x_{next} = h + \mathrm N_2(\mathrm{FFN}(h))`.
``"pre_ln"`` with a cross-attention (an encoder–decoder's decoder block, T5; :mod:`symuat.numeric.cross`)
    :math:`h_1 = x + \mathrm{MHA}(\mathrm N_1(x))`; :math:`h = h_1 + \mathrm{MHA}(\mathrm N_c(h_1), E)`;
    :math:`x_{next} = h + \mathrm{FFN}(\mathrm N_2(h))`, :math:`E` the encoder's output.
``"sandwich"`` (Gemma-2/3: a norm before and after each sublayer)
    :math:`h = x + \mathrm N_2(\mathrm{MHA}(\mathrm N_1 x))`;
    :math:`x_{next} = h + \mathrm N_4(\mathrm{FFN}(\mathrm N_3 h))`.

The stack adds a static input transform :math:`X_0 = \mathrm N_{in}(sX + P_{1:N})` (scale :math:`s`,
position embeddings :math:`P`, optional input norm) and an optional final norm, so
:func:`stack_output` is what a library calls the last hidden state for ``inputs_embeds`` ``X``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import numpy as np

from ..errors import InvalidValueError, ShapeError
from ..validation import as_finite_array, check_positive_dim, check_real_number, check_shape
from .attention import AttentionWeights, _heads, _mha, check_attention_mask
from .backend import as_backend_array, backend_name, check_same_backend, copy_array
from .cross import CrossAttention, cross_attention
from .ffn import ACTIVATIONS, FFNWeights, GatedFFNWeights, _ffn, activation_function, ffn
from .moe import MoEFFNWeights
from .norms import apply_norm, check_norm

__all__ = [
    "KINDS", "LAYOUTS", "ACTIVATIONS", "activation_function", "FFNWeights", "GatedFFNWeights", "BlockWeights",
    "TransformerStack", "ffn", "block_forward", "forward", "prepare_input", "stack_output", "hidden_states",
    "bind_memory",
]

#: The layouts of the paper era (kept for the paper's ledger entries).
KINDS = ("paper", "standard", "pre_ln", "post_ln")
#: Every residual layout (module docstring).
LAYOUTS = KINDS + ("parallel", "sublayer_post_ln", "sandwich")
_NEEDS = {"paper": (), "standard": (), "pre_ln": ("ln1", "ln2"), "post_ln": ("ln1", "ln2"),
          "parallel": ("ln1",), "sublayer_post_ln": ("ln1", "ln2"), "sandwich": ("ln1", "ln2", "ln3", "ln4")}


def check_kind(kind: Any) -> str:
    if not isinstance(kind, str) or kind not in LAYOUTS:
        raise InvalidValueError(f"kind must be one of {LAYOUTS}, got {kind!r}")
    return kind


@dataclass(frozen=True)
class BlockWeights:
    r"""One Transformer block: attention, FFN (plain or gated) and optional norms ``ln1``, ``ln2`` (and ``ln3``,
    ``ln4`` of the ``sandwich`` layout); ``cross``: a decoder block's cross-attention between them (``pre_ln``
    only, :class:`~symuat.numeric.cross.CrossAttention`)."""

    attention: AttentionWeights
    ffn: Any
    ln1: Optional[Any] = None
    ln2: Optional[Any] = None
    ln3: Optional[Any] = None
    ln4: Optional[Any] = None
    cross: Optional[CrossAttention] = None

    def __post_init__(self) -> None:
        if self.cross is not None and not isinstance(self.cross, CrossAttention):
            raise InvalidValueError(f"cross must be a CrossAttention or None, got {type(self.cross).__name__}")
        if self.cross is not None and self.cross.width != self.attention.width:
            raise ShapeError(f"cross-attention width {self.cross.width} must equal attention width "
                             f"M={self.attention.width}")
        if not isinstance(self.attention, AttentionWeights):
            raise InvalidValueError(f"attention must be an AttentionWeights, got {type(self.attention).__name__}")
        if not isinstance(self.ffn, (FFNWeights, GatedFFNWeights, MoEFFNWeights)):
            raise InvalidValueError(f"ffn must be an FFNWeights, GatedFFNWeights or MoEFFNWeights, got "
                                    f"{type(self.ffn).__name__}")
        M = self.attention.width
        if self.ffn.width != M:
            raise ShapeError(f"ffn width {self.ffn.width} must equal attention width M={M}")
        for name in ("ln1", "ln2", "ln3", "ln4"):
            check_norm(name, getattr(self, name), M)

    @property
    def width(self) -> int:
        return self.attention.width


@dataclass(frozen=True)
class TransformerStack:
    r"""A stack of :class:`BlockWeights` with one layout ``kind`` and a default ``activation``.

    Attributes
    ----------
    blocks : tuple of BlockWeights
    kind : str
        One of :data:`LAYOUTS`; the norms it needs must be given, the others must not.
    activation : str
        σ of every FFN whose weights do not name their own.
    input_scale : float, optional
        :math:`s` (Gemma: :math:`\sqrt M`).
    position_embeddings : (P, M) array, optional
        Rows :math:`0..N-1` are added to the scaled input (GPT-2, BERT; BERT's token-type row 0 belongs here too).
    input_norm, final_norm : LayerNormWeights or RMSNormWeights, optional
    """

    blocks: Tuple[BlockWeights, ...]
    kind: str = "paper"
    activation: str = "relu"
    input_scale: Optional[float] = None
    position_embeddings: Optional[np.ndarray] = None
    input_norm: Optional[Any] = None
    final_norm: Optional[Any] = None

    def __post_init__(self) -> None:
        if isinstance(self.blocks, BlockWeights) or not isinstance(self.blocks, (list, tuple)):
            raise InvalidValueError(f"blocks must be a list/tuple of BlockWeights, got {type(self.blocks).__name__}")
        blocks = tuple(self.blocks)
        if not blocks:
            raise InvalidValueError("blocks must contain at least one BlockWeights (depth >= 1), got 0")
        kind = check_kind(self.kind)
        activation_function(self.activation)
        M = None
        for i, b in enumerate(blocks):
            if not isinstance(b, BlockWeights):
                raise InvalidValueError(f"blocks[{i}] must be a BlockWeights, got {type(b).__name__}")
            if M is None:
                M = b.width
            elif b.width != M:
                raise ShapeError(f"blocks[{i}] has width {b.width}, expected {M} like blocks[0]")
            if b.cross is not None and kind != "pre_ln":
                raise InvalidValueError(f"blocks[{i}] has a cross-attention, which symuat places in the pre_ln "
                                        f"layout only; kind={kind!r}")
            for name in ("ln1", "ln2", "ln3", "ln4"):
                has = getattr(b, name) is not None
                if name in _NEEDS[kind] and not has:
                    raise InvalidValueError(f"kind={kind!r} needs blocks[{i}].{name}, got None")
                if not has or name in _NEEDS[kind] or (kind == "parallel" and name == "ln2"):
                    continue
                raise InvalidValueError(f"kind={kind!r} uses no LayerNorm {name} but blocks[{i}].{name} was given")
        object.__setattr__(self, "blocks", blocks)
        if self.input_scale is not None:
            object.__setattr__(self, "input_scale", check_real_number("input_scale", self.input_scale))
        if self.position_embeddings is not None:
            P = as_finite_array("position_embeddings", self.position_embeddings, ndim=2)
            check_shape("position_embeddings", P, (None, M))
            P = P.copy()
            P.setflags(write=False)
            object.__setattr__(self, "position_embeddings", P)
        check_norm("input_norm", self.input_norm, M)
        check_norm("final_norm", self.final_norm, M)

    @property
    def width(self) -> int:
        return self.blocks[0].width

    @property
    def depth(self) -> int:
        return len(self.blocks)

    def block_activation(self, i: int) -> str:
        """σ of block ``i`` (its FFN's own activation, else the stack's)."""
        return self.blocks[i].ffn.activation or self.activation

    def blocks_shape(self) -> Tuple[frozenset, int, int]:
        """``(gated, heads, hidden)``: the set of the blocks' ``ffn.gated``, the most attention heads and the widest
        FFN of any block (a :class:`~symuat.numeric.streamed.StreamedStack` knows them without reading its blocks)."""
        return (frozenset(b.ffn.gated for b in self.blocks), max(b.attention.n_heads for b in self.blocks),
                max(b.ffn.hidden for b in self.blocks))

    def weights_backend(self) -> str:
        """The backend of the weights (:func:`symuat.numeric.backend.backend_name` of the first block's ``W_O``,
        which every attention has)."""
        return backend_name(self.blocks[0].attention.W_O)

    def __repr__(self) -> str:
        extras = [f"{k}" for k in ("input_scale", "position_embeddings", "input_norm", "final_norm")
                  if getattr(self, k) is not None]
        return (f"TransformerStack(depth={self.depth}, width={self.width}, kind={self.kind!r}, "
                f"activation={self.activation!r}{''.join(', ' + e for e in extras)})")


def check_input(stack: Any, X: Any, attention_mask: Any = None) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    r"""API-boundary validation of ``(stack, X, attention_mask)``; returns ``(X, mask)``."""
    if not isinstance(stack, TransformerStack):
        raise InvalidValueError(f"stack must be a TransformerStack, got {type(stack).__name__}")
    X = as_backend_array("X", X, 2)
    check_stack_backend(stack, X)
    N = check_positive_dim("X.shape[0]", X.shape[0])
    if X.shape[1] != stack.width:
        raise ShapeError(f"X must have shape (*, {stack.width}), got {X.shape}: "
                         "the input width must be the stack's width")
    P = stack.position_embeddings
    if P is not None and P.shape[0] < N:
        raise ShapeError(f"position_embeddings cover {P.shape[0]} positions, X has {N} tokens")
    return X, check_attention_mask(attention_mask, N)


def stack_backend(stack: TransformerStack) -> str:
    """The backend of the stack's weights (:meth:`TransformerStack.weights_backend`)."""
    return stack.weights_backend()


def check_stack_backend(stack: TransformerStack, X: Any) -> None:
    """Raise unless the input ``X`` lives on the backend (library and device) of the stack's weights."""
    have, want = backend_name(X), stack_backend(stack)
    if have != want:
        raise InvalidValueError(f"X is on the {have} backend but the stack's weights are on {want}: move the stack "
                                "with symuat.models.to_device(stack, device) or the input to the stack's device")


def ffn_input(block: BlockWeights, kind: str, X: np.ndarray, mask, where: str = "") -> np.ndarray:
    r"""What the block's FFN sees (N×M) for block input ``X`` (layouts in the module docstring): the input of a
    mixture of experts' router."""
    def mha(U):
        return _mha(U, block.attention, _heads(U, block.attention, mask, where))

    if kind == "paper":
        return mha(X)
    if kind in ("standard", "post_ln"):
        H = X + mha(X)
        return H if kind == "standard" else apply_norm(H, block.ln1)
    if kind == "pre_ln":
        H = X + mha(apply_norm(X, block.ln1))
        if block.cross is not None:
            H = H + cross_attention(block.cross, H, where)
        return apply_norm(H, block.ln2)
    if kind == "parallel":
        return apply_norm(X, block.ln2 if block.ln2 is not None else block.ln1)
    if kind == "sublayer_post_ln":
        return X + apply_norm(mha(X), block.ln1)
    H = X + apply_norm(mha(apply_norm(X, block.ln1)), block.ln2)
    return apply_norm(H, block.ln3)


def _block(block: BlockWeights, kind: str, act, X: np.ndarray, mask, where: str = "") -> np.ndarray:
    def mha(U):
        return _mha(U, block.attention, _heads(U, block.attention, mask, where))

    def f(U):
        return _ffn(U, block.ffn, act)

    def n(k, U):
        return apply_norm(U, block.ln1 if k == 1 or block.ln2 is None else block.ln2)

    if kind == "paper":
        H = mha(X)
        return H + f(H)
    if kind == "standard":
        H = X + mha(X)
        return H + f(H)
    if kind == "pre_ln":
        H = X + mha(n(1, X))
        if block.cross is not None:
            H = H + cross_attention(block.cross, H, where)
        return H + f(n(2, H))
    if kind == "post_ln":
        H = n(1, X + mha(X))
        return n(2, H + f(H))
    if kind == "parallel":
        return X + mha(n(1, X)) + f(n(2, X))
    if kind == "sandwich":
        H = X + apply_norm(mha(n(1, X)), block.ln2)
        return H + apply_norm(f(apply_norm(H, block.ln3)), block.ln4)
    H = X + n(1, mha(X))
    return H + n(2, f(H))


def block_forward(block: BlockWeights, kind: str, activation: str, X: Any, attention_mask: Any = None) -> np.ndarray:
    r"""Direct forward pass of one block (semantics in the module docstring)."""
    if not isinstance(block, BlockWeights):
        raise InvalidValueError(f"block must be a BlockWeights, got {type(block).__name__}")
    kind = check_kind(kind)
    act = activation_function(block.ffn.activation or activation)
    X = as_backend_array("X", X, 2)
    check_positive_dim("X.shape[0]", X.shape[0])
    check_shape("X", X, (None, block.width))
    check_same_backend("X", X, block.attention.W_O)
    return _block(block, kind, act, X, check_attention_mask(attention_mask, X.shape[0]))


def _prepare(stack: TransformerStack, X: np.ndarray) -> np.ndarray:
    if stack.input_scale is not None:
        X = stack.input_scale * X
    if stack.position_embeddings is not None:
        X = X + stack.position_embeddings[: X.shape[0]]
    if stack.input_norm is not None:
        X = apply_norm(X, stack.input_norm)
    return X


def prepare_input(stack: TransformerStack, X: Any) -> np.ndarray:
    r"""The static input transform :math:`X_0 = \mathrm N_{in}(sX + P_{1:N})` (identity parts skipped)."""
    X, _ = check_input(stack, X)
    return _prepare(stack, X)


def forward(stack: TransformerStack, X: Any, attention_mask: Any = None) -> List[np.ndarray]:
    r"""Direct forward pass; returns :math:`[X_0, X_1, \dots, X_L]` (:math:`X_0` after the input transform,
    :math:`X_L` before the final norm)."""
    X, mask = check_input(stack, X, attention_mask)
    out = [copy_array(_prepare(stack, X))]
    for i, b in enumerate(stack.blocks):
        act = activation_function(stack.block_activation(i))
        out.append(_block(b, stack.kind, act, out[-1], mask, f" in layer {i + 1}"))
    return out


def hidden_states(stack: TransformerStack, X: Any, attention_mask: Any = None) -> List[np.ndarray]:
    r"""Like a library's ``output_hidden_states``: :func:`forward` with the final norm applied to the last entry."""
    xs = forward(stack, X, attention_mask)
    if stack.final_norm is not None:
        xs[-1] = apply_norm(xs[-1], stack.final_norm)
    return xs


def bind_memory(stack: TransformerStack, memory: Any) -> TransformerStack:
    """``stack`` with every cross-attention reading ``memory`` (an encoder's output, ``(N_e, M)``, on the stack's
    backend); blocks without one are kept as they are."""
    blocks = tuple(b if b.cross is None else dataclasses.replace(b, cross=b.cross.bind(memory)) for b in stack.blocks)
    return dataclasses.replace(stack, blocks=blocks)


def stack_output(stack: TransformerStack, X: Any, attention_mask: Any = None) -> np.ndarray:
    r"""The last hidden state (final norm included) for ``inputs_embeds`` ``X``."""
    return hidden_states(stack, X, attention_mask)[-1]

