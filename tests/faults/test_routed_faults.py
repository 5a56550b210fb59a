"""Fault injection at the routed experts (issue 30, item 4): gates that underflow to exactly 0, routers that tie, a
shared expert switched off, huge expert weights on an unselected expert.  Each case expects the form to equal the
direct forward pass, with the units the routing zeroed never evaluated."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from symuat.numeric import (
    AttentionWeights,
    BlockWeights,
    GatedFFNWeights,
    MoEFFNWeights,
    TransformerStack,
    duat_form,
    duat_relative_error,
)
from symuat.numeric.norms import RMSNormWeights

M, F, N, E = 6, 4, 5, 3


def _stack(router, shared_gate=None, top_k=2, scale_expert=None, routing="softmax"):
    rng = np.random.default_rng(7)
    experts = [GatedFFNWeights(*(rng.standard_normal(s) / 3 for s in ((M, F), (M, F), (F, M)))) for _ in range(E)]
    if scale_expert is not None:
        e, c = scale_expert
        experts[e] = dataclasses.replace(experts[e], W_gate=experts[e].W_gate * c, W_up=experts[e].W_up * c)
    shared = None if shared_gate is None else GatedFFNWeights(*(rng.standard_normal(s) / 3
                                                               for s in ((M, 3), (M, 3), (3, M))))
    moe = MoEFFNWeights(tuple(experts), router, top_k, normalize=False, shared=shared, shared_gate=shared_gate,
                        routing=routing)
    a = AttentionWeights(*(rng.standard_normal((M, M)) / 3 for _ in range(4)), n_heads=2, causal=True)
    norm = RMSNormWeights(np.ones(M), eps=1e-6)
    X = rng.standard_normal((N, M))
    return TransformerStack([BlockWeights(a, moe, norm, norm)], "pre_ln", "silu"), X


def _evaluated_blocks(form):
    (down,) = [o for o in getattr(form.params[0].W3, "ops", (form.params[0].W3,)) if hasattr(o, "rows")]
    return sum(r.size for r in down.rows)


@pytest.mark.parametrize("case", ["underflow", "ties", "shared_off", "huge_unselected", "sparsemixer", "top_all"])
def test_routed_fault(case):
    if case == "underflow":  # a top-2 gate whose softmax probability is exactly 0: its block is skipped
        router = np.zeros((M, E))
        router[0, 0] = 1e5
        stack, X = _stack(router, top_k=2)
        X[:, 0] = np.abs(X[:, 0]) + 1  # every token: expert 0 takes probability 1, the others exactly 0
        form = duat_form(stack, X)
        assert _evaluated_blocks(form) == N
    elif case == "ties":  # an all-zero router: every probability equal; top-k picks the first k (stable sort)
        stack, X = _stack(np.zeros((M, E)))
        form = duat_form(stack, X)
        assert _evaluated_blocks(form) == 2 * N
    elif case == "shared_off":  # a shared expert whose sigmoid gate underflows to exactly 0 on every token
        stack, X = _stack(np.ones((M, E)), shared_gate=np.full(M, -1e5))
        X = np.abs(X) + 1
        form = duat_form(stack, X)
        assert _evaluated_blocks(form) == 2 * N
    elif case == "huge_unselected":  # an unselected expert with 1e150-scaled weights: never multiplied, no overflow
        router = np.zeros((M, E))
        router[:, 2] = -10.0
        stack, X = _stack(router, top_k=1, scale_expert=(2, 1e150))
        X = np.abs(X) + 1
        form = duat_form(stack, X)
        assert _evaluated_blocks(form) == N and np.all(np.isfinite(form.output))
    elif case == "sparsemixer":
        stack, X = _stack(np.random.default_rng(1).standard_normal((M, E)), routing="sparsemixer")
        form = duat_form(stack, X)
        assert _evaluated_blocks(form) <= 2 * N
    else:  # top_k = E: every expert selected, nothing skipped
        stack, X = _stack(np.random.default_rng(2).standard_normal((M, E)), top_k=E)
        form = duat_form(stack, X)
        assert _evaluated_blocks(form) == E * N
    assert duat_relative_error(form) <= 1e-13
