r"""A model's output head: hidden states :math:`x` (N, M) → logits (N, V), with its transform, scale and cap.

.. math::
    \mathrm{logits}(x) = \mathrm{cap}\big(s\,(T(x)\,U^{\mathsf T} + b)\big),\qquad
    T(x) = \mathrm{LN}(\mathrm{act}(xW_T + b_T))\ \text{or}\ x,\qquad
    \mathrm{cap}(z) = c\tanh(z/c)\ \text{or}\ z.

Masked-LM heads (BERT, RoBERTa, DistilBERT) have the transform ``dense → act → LayerNorm``; sequence-classification
heads of encoders a ``dense → tanh/ReLU`` transform without a norm; Cohere's logits carry ``logit_scale``
:math:`s`; Gemma-2/3 soft-cap them at :math:`c` (``final_logit_softcapping``).

:meth:`Head.held` is the head with its dynamic parameters held at one input :math:`x^*` (as the DUAT form holds
:math:`H_h` and :math:`D(X)`): the activation's gate :math:`g = \mathrm{act}(z^*)/z^*`, the LayerNorm's
:math:`D(y^*)`, and the cap's gate :math:`c\tanh(z^*/c)/z^*` are fixed, so the held head is an affine map
:math:`t \mapsto L(t) + k` with :math:`L(x^*) + k = \mathrm{logits}(x^*)` exactly (to rounding).  An attribution
maps every part through :math:`L` and puts :math:`k` in ``rest`` (:mod:`symuat.analysis.attribution`).

``reads`` says which rows the library's own ``.logits`` holds: ``"every"`` token (LM heads), the ``"first"``
(BERT-style sequence classification, the ``[CLS]`` row) or the ``"last"`` (decoders' sequence classification).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple

import numpy as np

from ..errors import InvalidValueError, UnsupportedError
from .ffn import activation_function
from .norms import LayerNormWeights

__all__ = ["Head", "HeadTransform", "as_head", "direction", "READS", "TRANSFORM_ACTIVATIONS"]

#: The transform's activations: the FFN's σ that vanish at 0, and tanh (BERT's pooler).
TRANSFORM_ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "tanh")

#: Which rows of the per-token logits the library's ``.logits`` holds.
READS = ("every", "first", "last")


@dataclass(frozen=True)
class HeadTransform:
    r""":math:`T(x) = \mathrm{LN}(\mathrm{act}(xW + b))` (``norm`` None: no LayerNorm); ``W`` is (M, M')."""

    W: np.ndarray
    b: Optional[np.ndarray]
    activation: str
    norm: Optional[LayerNormWeights] = None

    def __post_init__(self) -> None:
        if self.W.ndim != 2 or (self.b is not None and self.b.shape != (self.W.shape[1],)):
            raise InvalidValueError(f"head transform: W {self.W.shape} and b "
                                    f"{None if self.b is None else self.b.shape} are not (M, M') and (M',)")
        if self.activation not in TRANSFORM_ACTIVATIONS:
            raise InvalidValueError(f"head transform: activation must be one of {TRANSFORM_ACTIVATIONS} (0 at 0, so "
                                    f"its gate act(z)/z can be held), got {self.activation!r}")
        if self.norm is not None and self.norm.gamma.shape != (self.W.shape[1],):
            raise InvalidValueError(f"head transform: the LayerNorm has width {self.norm.gamma.shape}, the dense "
                                    f"layer {self.W.shape[1]}")

    def act(self, z: np.ndarray) -> np.ndarray:
        return np.tanh(z) if self.activation == "tanh" else activation_function(self.activation)(z)


@dataclass(frozen=True)
class Head:
    r"""The head of a model (module docstring): ``U`` (V, M'), optional bias ``b`` (V,), ``transform``, ``scale``
    :math:`s` and ``softcap`` :math:`c`; ``name`` is the library's class (messages); ``reads`` (``READS``)."""

    U: np.ndarray
    b: Optional[np.ndarray] = None
    transform: Optional[HeadTransform] = None
    scale: float = 1.0
    softcap: Optional[float] = None
    name: str = "head"
    reads: str = "every"

    def __post_init__(self) -> None:
        width = self.U.shape[1] if self.U.ndim == 2 else None
        if width is None or (self.b is not None and self.b.shape != (self.U.shape[0],)):
            raise InvalidValueError(f"{self.name}: U {self.U.shape} and b {None if self.b is None else self.b.shape} "
                                    "are not (V, M) and (V,)")
        if self.transform is not None and self.transform.W.shape[1] != width:
            raise InvalidValueError(f"{self.name}: the transform gives {self.transform.W.shape[1]} features, U reads "
                                    f"{width}")
        if not (np.isfinite(self.scale) and self.scale != 0.0):
            raise InvalidValueError(f"{self.name}: scale must be finite and nonzero, got {self.scale!r}")
        if self.softcap is not None and not (np.isfinite(self.softcap) and self.softcap > 0):
            raise InvalidValueError(f"{self.name}: softcap must be a positive number, got {self.softcap!r}")
        if self.reads not in READS:
            raise InvalidValueError(f"{self.name}: reads must be one of {READS}, got {self.reads!r}")

    @property
    def width(self) -> int:
        """Features :math:`M` the head reads."""
        return int(self.U.shape[1] if self.transform is None else self.transform.W.shape[0])

    @property
    def vocab(self) -> int:
        return int(self.U.shape[0])

    @property
    def affine(self) -> bool:
        """Whether the head is affine (no transform, no cap): its held form is the head itself."""
        return self.transform is None and self.softcap is None

    def logits(self, x: np.ndarray) -> np.ndarray:
        r"""The logits of hidden states ``x`` (N, M) → (N, V) (module docstring)."""
        lin, k = self.held(x)
        return lin(x) + k

    def held(self, x: np.ndarray, rows: Optional[np.ndarray] = None) -> Tuple[Callable[[np.ndarray], np.ndarray],
                                                                              np.ndarray]:
        r"""``(L, k)``: the head held at ``x`` (N, M) (module docstring), restricted to the vocabulary ``rows``.

        ``L`` maps an array (..., N, M) to (..., N, V); ``L(x) + k`` is the head's logits at ``x``.

        >>> h = Head(np.eye(2), np.ones(2), scale=0.5)
        >>> L, k = h.held(np.array([[2.0, 4.0]]))
        >>> (L(np.array([[2.0, 4.0]])) + k).tolist()
        [[1.5, 2.5]]
        """
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.width:
            raise InvalidValueError(f"{self.name}: hidden states of shape {x.shape}, the head reads (N, {self.width})")
        U, b = (self.U, self.b) if rows is None else (self.U[rows], None if self.b is None else self.b[rows])
        pre, k0 = _held_transform(self.transform, x)
        s = self.scale

        def base(t: np.ndarray) -> np.ndarray:
            return (pre(t) @ U.T) * s

        k = (k0 @ U.T if k0 is not None else np.zeros((x.shape[0], U.shape[0])))
        k = (k + (0.0 if b is None else b)) * s
        if self.softcap is None:
            return base, k
        z = base(x) + k
        c = float(self.softcap)
        gate = np.ones_like(z)
        nz = z != 0.0
        gate[nz] = c * np.tanh(z[nz] / c) / z[nz]
        return (lambda t: base(t) * gate), k * gate


def direction(head: Head, x: np.ndarray, target: int) -> np.ndarray:
    r"""``(N, M)``: row :math:`n` is the vector :math:`d_n` with :math:`L(t)_{n,\mathrm{target}} = t_n\cdot d_n` for
    the head held at ``x`` (:meth:`Head.held`): the per-token direction of one logit (an affine head: :math:`sU_t`
    on every row; a soft cap scales row :math:`n` by its gate; a transform maps it back through
    :math:`W\,\mathrm{diag}(g_n)` and the LayerNorm's centring and :math:`D_n\gamma`).

    >>> direction(Head(np.eye(2), scale=2.0), np.ones((3, 2)), 1).tolist()
    [[0.0, 2.0], [0.0, 2.0], [0.0, 2.0]]
    """
    x = np.asarray(x, dtype=np.float64)
    u = head.U[int(target)] * head.scale
    gate = np.ones(x.shape[0])
    if head.softcap is not None:  # the cap's gate c tanh(z/c) / z of this logit at every token
        pre = _precap(head, x, int(target))
        nz = pre != 0.0
        gate[nz] = head.softcap * np.tanh(pre[nz] / head.softcap) / pre[nz]
    tr = head.transform
    if tr is None:
        return gate[:, None] * u[None, :]
    zt = x @ tr.W + (0.0 if tr.b is None else tr.b)
    act = tr.act(zt)
    g = np.zeros_like(zt)
    nz = zt != 0.0
    g[nz] = act[nz] / zt[nz]
    v = np.broadcast_to(u, zt.shape)
    if tr.norm is not None:
        var = np.mean((act - act.mean(-1, keepdims=True)) ** 2, axis=-1, keepdims=True)
        v = v * tr.norm.gamma / np.sqrt(var + tr.norm.eps)
        v = v - v.mean(-1, keepdims=True)
    return gate[:, None] * ((g * v) @ tr.W.T)


def _precap(head: Head, x: np.ndarray, target: int) -> np.ndarray:
    """The logit ``target`` before the soft cap, at ``x``."""
    uncapped = Head(head.U, head.b, head.transform, head.scale, None, head.name, head.reads)
    return uncapped.logits(x)[:, target]


def _held_transform(tr: Optional[HeadTransform], x: np.ndarray) -> Tuple[Callable[[np.ndarray], np.ndarray], Any]:
    """``(L_T, k_T)`` of the transform held at ``x``; the identity and no constant without a transform."""
    if tr is None:
        return (lambda t: t), None
    z = x @ tr.W + (0.0 if tr.b is None else tr.b)
    act = tr.act(z)
    gate = np.zeros_like(z)
    nz = z != 0.0
    gate[nz] = act[nz] / z[nz]
    kb = np.zeros_like(z) if tr.b is None else np.broadcast_to(tr.b, z.shape) * gate
    if tr.norm is None:
        return (lambda t: (t @ tr.W) * gate), kb
    ln = tr.norm
    y = act
    var = np.mean((y - y.mean(-1, keepdims=True)) ** 2, axis=-1, keepdims=True)
    D = 1.0 / np.sqrt(var + ln.eps)

    def centred(v: np.ndarray) -> np.ndarray:
        return (v - v.mean(-1, keepdims=True)) * D * ln.gamma

    k = centred(kb) + (0.0 if ln.beta is None else ln.beta)
    return (lambda t: centred((t @ tr.W) * gate)), k


def as_head(unembedding: Any) -> Optional[Head]:
    r"""A form's ``unembedding``: a :class:`Head`, a ``(U, b)`` pair (an affine LM head) or None; a str (why the
    model's head is refused) raises :class:`~symuat.errors.UnsupportedError` with it.

    >>> as_head((np.eye(2), None)).affine
    True
    """
    if unembedding is None or isinstance(unembedding, Head):
        return unembedding
    if isinstance(unembedding, str):
        raise UnsupportedError(unembedding)
    if isinstance(unembedding, tuple) and len(unembedding) == 2:
        return Head(np.asarray(unembedding[0], dtype=np.float64),
                    None if unembedding[1] is None else np.asarray(unembedding[1], dtype=np.float64))
    raise InvalidValueError(f"unembedding must be a Head or a (U, b) pair, got {type(unembedding).__name__}")
