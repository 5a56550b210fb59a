r"""Cross-attention of an encoder–decoder's decoder block: queries from the decoder stream, keys and values from the
encoder's output :math:`E` (``ext:cross-attention.mv-form``).

With :math:`H_h(U, E)` (:math:`N\times N_e`, rows summing to one) at the decoder's normed stream :math:`U`,

.. math::

    \operatorname{vec}_r\big(\mathrm{MHA}(U, E)\big) = \sum_h H_h\otimes(W_{V,h}W_{O,h})^{\mathsf T} e'
    + \mathbf 1_N\otimes\Big(\sum_h W_{O,h}^{\mathsf T} b_{V,h} + b_O\Big),\qquad e' = \operatorname{vec}_r(E):

Eq. 10's closed form acting on the external vector :math:`e'`, not on the decoder's :math:`x'`.  In a ``pre_ln``
decoder block (:math:`h_1 = x + \mathrm{MHA}(\mathrm N_1 x)`, :math:`h = h_1 + \mathrm{MHA}(\mathrm N_c h_1, E)`,
:math:`x_{next} = h + \mathrm{FFN}(\mathrm N_2 h)`) the cross-attention term is therefore part of the Eq. 20 box's
bias, :math:`b'_3 = p + W'_E(x', e')\,e' + a_E + f_2`: dynamic through :math:`H_h`, affine in :math:`e'` at frozen
:math:`H_h`, constant in :math:`x'` (:mod:`symuat.numeric.residual_params`).  :math:`E` is a fixed input of the
decoder stack (``memory``), the encoder's last hidden state over its real tokens, so no key is masked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional

import numpy as np

from ..errors import InvalidValueError, ShapeError, UnsupportedError
from ..validation import as_finite_array
from .attention import AttentionWeights
from .backend import backend_name, check_same_backend, is_numpy, namespace
from .norms import apply_norm, check_norm

__all__ = ["CrossAttention", "cross_heads", "cross_attention"]

#: Attention options a cross-attention does not take (positions belong to the decoder's self-attention).
_NO_CROSS = ("causal", "rotary", "q_norm", "k_norm", "sliding_window", "softcap", "alibi", "sinks", "latent", "window",
             "position_bias")


@dataclass(frozen=True)
class CrossAttention:
    r"""The cross-attention sublayer of a decoder block (module docstring).

    Attributes
    ----------
    attention : AttentionWeights
        :math:`W_Q` reads the decoder stream, :math:`W_K, W_V` the encoder's output; no mask, positions or caps.
    norm : LayerNormWeights or RMSNormWeights
        :math:`\mathrm N_c`, applied to the decoder stream before the queries.
    memory : (N_e, M) array or None
        :math:`E`, the encoder's output.  ``None`` in a model's decoder template: bound per input
        (:meth:`bind`); a stack with an unbound memory cannot be evaluated.

    >>> import numpy as np
    >>> from symuat.numeric import AttentionWeights, RMSNormWeights
    >>> I = np.eye(2)
    >>> ca = CrossAttention(AttentionWeights(I, I, I, I, scale=1.0), RMSNormWeights(np.ones(2)), np.ones((3, 2)))
    >>> cross_attention(ca, np.zeros((1, 2))).tolist()
    [[1.0, 1.0]]
    """

    attention: AttentionWeights
    norm: Any
    memory: Optional[np.ndarray] = None

    def __post_init__(self) -> None:
        if not isinstance(self.attention, AttentionWeights):
            raise InvalidValueError(f"attention must be an AttentionWeights, got {type(self.attention).__name__}")
        used = [k for k in _NO_CROSS if not any(getattr(self.attention, k) is v for v in (None, False))]
        if used:
            raise UnsupportedError(f"a cross-attention takes no {', '.join(used)} (its keys are the encoder's output: "
                                   "no causal mask, positions or caps)")
        M = self.attention.width
        check_norm("norm", self.norm, M)
        if self.norm is None:
            raise InvalidValueError("norm must be the norm before the cross-attention, got None")
        if self.memory is not None:
            E = as_finite_array("memory", self.memory, ndim=2) if is_numpy(self.memory) else self.memory
            if E.shape[0] < 1 or E.shape[1] != M:
                raise ShapeError(f"memory (the encoder's output) must have shape (N_e >= 1, {M}), got {E.shape}")
            if is_numpy(E):
                E = E.copy()
                E.setflags(write=False)
            object.__setattr__(self, "memory", E)

    @property
    def width(self) -> int:
        return self.attention.width

    def bind(self, memory: Any) -> "CrossAttention":
        """This cross-attention reading ``memory`` (the encoder's output, ``(N_e, M)``)."""
        return CrossAttention(self.attention, self.norm, memory)


def _memory(ca: CrossAttention, U: Any, where: str) -> np.ndarray:
    """The bound encoder output, on the backend of the decoder stream ``U`` (else one named error)."""
    if ca.memory is None:
        raise InvalidValueError(f"cross-attention{where}: no encoder output is bound (memory=None): evaluate the "
                                "decoder through Model.duat_form(input_ids=..., decoder_input_ids=...)")
    E = ca.memory
    if backend_name(U) != backend_name(E):
        raise UnsupportedError(f"cross-attention{where}: the decoder stream is on the {backend_name(U)} backend, the "
                               f"encoder's output on {backend_name(E)}")
    return E


def cross_heads(ca: CrossAttention, U: np.ndarray, where: str = "") -> List[np.ndarray]:
    r""":math:`H_h(U, E)` (:math:`N\times N_e`) of every head at the normed decoder stream ``U`` (NumPy or torch, the
    backend of ``U`` and the bound memory)."""
    E, a = _memory(ca, U, where), ca.attention
    xp = np if is_numpy(U) else namespace(U)
    Q = U @ a.W_Q if a.b_Q is None else U @ a.W_Q + a.b_Q
    K = E @ a.W_K if a.b_K is None else E @ a.W_K + a.b_K
    out = []
    for h in range(a.n_heads):
        with np.errstate(over="ignore", invalid="ignore"):
            S = (Q[:, a.head_slice(h)] @ K[:, a.kv_slice(h)].T) * a.scale_value()
        if not bool(xp.all(xp.isfinite(S))):
            raise InvalidValueError(f"cross-attention{where} head {h}: the scores overflow float64")
        S = xp.exp(S - xp.max(S, axis=1, keepdims=True))
        out.append(S / xp.sum(S, axis=1, keepdims=True))
    return out


def cross_attention(ca: CrossAttention, X: np.ndarray, where: str = "") -> np.ndarray:
    r"""The sublayer's output :math:`\mathrm{MHA}(\mathrm N_c X, E)` (N×M): values of :math:`E`, per-head mixing,
    one output projection (the library's order)."""
    check_same_backend("X", X, ca.attention.W_O)
    U = apply_norm(X, ca.norm)
    E, a = _memory(ca, U, where), ca.attention
    V = E @ a.W_V if a.b_V is None else E @ a.W_V + a.b_V
    mixed = [H @ V[:, a.kv_slice(h)] for h, H in enumerate(cross_heads(ca, U, where))]
    Y = (np.concatenate(mixed, axis=1) if is_numpy(U) else namespace(U).concat(mixed, axis=1)) @ a.W_O
    return Y if a.b_O is None else Y + a.b_O
