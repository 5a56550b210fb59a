r"""Random :class:`~symuat.numeric.stack.TransformerStack` instances of every block model, for tests and benchmarks."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from ..errors import InvalidValueError, ShapeError
from ..validation import check_positive_dim
from .attention import AttentionWeights, resolve_scale
from .ffn import FFNWeights, GatedFFNWeights, activation_function
from .layernorm import LayerNormWeights
from .norms import RMSNormWeights
from .rotary import Rotary
from .stack import _NEEDS, BlockWeights, TransformerStack, check_kind

__all__ = ["random_stack"]


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
    *,
    norm: str = "layer",
    gated: bool = False,
    n_kv_heads: Optional[int] = None,
    rotary_dim: Optional[int] = None,
    rotary_style: str = "half",
    qk_norm: Optional[str] = None,
    input_scale: Optional[float] = None,
    position_embeddings: bool = False,
    input_norm: bool = False,
    final_norm: bool = False,
    shared_norm: bool = False,
) -> TransformerStack:
    r"""A random :class:`TransformerStack` for tests (entries :math:`\mathcal N(0, 1/\text{fan-in})`).

    ``norm`` is ``"layer"`` or ``"rms"``; ``qk_norm`` is ``None``, ``"head"`` or ``"full"``;
    ``shared_norm`` makes a ``parallel`` block use N1 for the FFN too.
    """
    if not isinstance(rng, np.random.Generator):
        raise InvalidValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    L = check_positive_dim("n_layers", n_layers)
    M = check_positive_dim("width", width)
    h = check_positive_dim("n_heads", n_heads)
    F = check_positive_dim("ffn_width", ffn_width)
    if M % h:
        raise ShapeError(f"n_heads={h} must divide width={M}")
    kind = check_kind(kind)
    activation_function(activation)
    resolve_scale(scale, M // h, M)
    if norm not in ("layer", "rms"):
        raise InvalidValueError(f"norm must be 'layer' or 'rms', got {norm!r}")
    G = h if n_kv_heads is None else check_positive_dim("n_kv_heads", n_kv_heads)
    d = M // h

    def mat(r, c):
        return rng.standard_normal((r, c)) / math.sqrt(r)

    def vec(n):
        return 0.1 * rng.standard_normal(n) if biases else None

    def nrm(n):
        if norm == "rms":
            return RMSNormWeights(1.0 + 0.1 * rng.standard_normal(n), eps=1e-6)
        return LayerNormWeights(1.0 + 0.1 * rng.standard_normal(n), vec(n) if biases else None)

    rot = None if rotary_dim is None else Rotary(rotary_dim, style=rotary_style)
    blocks = []
    for _ in range(L):
        qn = kn = None
        if qk_norm is not None:
            qn, kn = (nrm(d), nrm(d)) if qk_norm == "head" else (nrm(h * d), nrm(G * d))
        attn = AttentionWeights(
            mat(M, M), mat(M, G * d), mat(M, G * d), mat(M, M),
            vec(M), vec(G * d), vec(G * d), vec(M), n_heads=h, scale=scale, causal=causal,
            n_kv_heads=G, rotary=rot, q_norm=qn, k_norm=kn,
        )
        if gated:
            f = GatedFFNWeights(mat(M, F), mat(M, F), mat(F, M), vec(F), vec(F), vec(M), activation=activation)
        else:
            f = FFNWeights(mat(M, F), 0.1 * rng.standard_normal(F), mat(F, M), 0.1 * rng.standard_normal(M))
        needs = _NEEDS[kind] if not (kind == "parallel" and not shared_norm) else ("ln1", "ln2")
        blocks.append(BlockWeights(attn, f, *(nrm(M) if f"ln{k}" in needs else None for k in range(1, 5))))
    P = 0.1 * rng.standard_normal((64, M)) if position_embeddings else None
    return TransformerStack(tuple(blocks), kind, activation, input_scale=input_scale, position_embeddings=P,
                            input_norm=nrm(M) if input_norm else None, final_norm=nrm(M) if final_norm else None)
