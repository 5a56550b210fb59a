"""A random two-layer mixture-of-experts stack in any layout, shared by the MoE tests (not a test module)."""

from __future__ import annotations

import numpy as np

from symuat.numeric import AttentionWeights, BlockWeights, GatedFFNWeights, MoEFFNWeights, TransformerStack
from symuat.numeric.norms import RMSNormWeights
from symuat.numeric.stack import _NEEDS


def random_moe_stack(rng: np.random.Generator, kind: str, shared: bool, *, M: int = 8, F: int = 6, E: int = 4,
                     final_norm: bool = False) -> TransformerStack:
    """Two blocks of causal 2-head attention and ``E`` SwiGLU experts (top 2) drawn from ``rng``; ``shared``: a
    renormalised, scaled routing with a sigmoid-gated shared expert; RMSNorms where ``kind`` has them."""

    def ex(f=F):
        return GatedFFNWeights(*(rng.standard_normal(s) / 3 for s in ((M, f), (M, f), (f, M))))

    blocks = []
    for _ in range(2):
        a = AttentionWeights(*(rng.standard_normal((M, M)) / 3 for _ in range(4)), n_heads=2, causal=True)
        moe = MoEFFNWeights(tuple(ex() for _ in range(E)), rng.standard_normal((M, E)), 2, normalize=shared,
                            scaling=1.5 if shared else 1.0, shared=ex(5) if shared else None,
                            shared_gate=rng.standard_normal(M) if shared else None)
        norms = [RMSNormWeights(1 + 0.2 * rng.standard_normal(M), eps=1e-6) if f"ln{k}" in _NEEDS[kind] else None
                 for k in range(1, 5)]
        blocks.append(BlockWeights(a, moe, *norms))
    return TransformerStack(blocks, kind, "silu",
                            final_norm=RMSNormWeights(np.ones(M), eps=1e-6) if final_norm else None)
