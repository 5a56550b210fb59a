"""Experts that cost nothing when unselected (issue 30, item 4): the routed operators against plain NumPy, and a
mixture of experts' form, whose unselected units are exact zeros and are never multiplied."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_numeric_moe import _stack

from symuat.numeric import LAYOUTS, duat_form, duat_relative_error, routing_gates
from symuat.numeric.routed import RoutedDown, RoutedLinear, expert_blocks
from symuat.numeric.stack import ffn_input


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.integers(1, 4), st.integers(1, 4), st.integers(0, 3),
       st.integers(0, 2**31))
def test_routed_operators_are_the_masked_stacked_linears(N, M, F, E, shared, seed):
    """``RoutedLinear`` is S(I ⊗ W^T), ``RoutedDown`` is (I ⊗ W_d^T) D, with S = [D != 0] per block."""
    rng = np.random.default_rng(seed)
    blocks = expert_blocks(F, E, shared)
    H = E * F + shared
    G = rng.standard_normal((N, len(blocks))) * (rng.random((N, len(blocks))) < 0.5)
    D = np.repeat(G, [t - s for s, t in blocks], axis=1)
    W, Wd = rng.standard_normal((M, H)), rng.standard_normal((H, M))
    X, Hs = rng.standard_normal((N, M)), rng.standard_normal((N, H))
    up, down = RoutedLinear(W, blocks, G != 0), RoutedDown(Wd, blocks, G)
    assert np.allclose(up.matvec(X.reshape(-1)), ((X @ W) * (D != 0)).reshape(-1), rtol=1e-13, atol=1e-13)
    assert np.allclose(down.matvec(Hs.reshape(-1)), ((Hs * D) @ Wd).reshape(-1), rtol=1e-13, atol=1e-13)
    assert np.array_equal(up.unit_mask(), (D != 0).astype(float))
    out = up.matvec(X.reshape(-1)).reshape(N, H)
    assert np.all(out[D == 0] == 0.0)  # exact zeros, not products with zero
    assert np.allclose(up.to_dense(), np.kron(np.eye(N), W.T) * (D != 0).reshape(-1)[:, None], atol=1e-13)


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("kind", LAYOUTS)
def test_unselected_units_are_exact_zeros_of_the_form(kind, shared):
    """W'_2 x + b'_2 and W'_4 x + b'_4 of every layer are exactly 0 on the units no token selected (so the
    application there is act(0)·0 = 0), the routed operators multiply N·k blocks (+ N shared) per layer, and the
    form still reproduces the direct forward pass."""
    stack, X = _stack(kind, shared)
    form = duat_form(stack, X)
    assert duat_relative_error(form) <= 1e-13
    for i, block in enumerate(stack.blocks):
        p, x = form.params[i], form.params.input(i)
        routed = [o for o in _atoms(p.W2) + _atoms(p.W3) if hasattr(o, "rows")]
        assert len(routed) == 2 and all(sum(r.size for r in o.rows) == X.shape[0] * (block.ffn.top_k + shared)
                                        for o in routed)
        G, s = routing_gates(block.ffn, ffn_input(block, kind, x, None))  # the direct path's routing
        G = np.concatenate([G] + ([] if s is None else [s[:, None]]), axis=1)
        sel = np.repeat(G != 0, [t - a for a, t in routed[0].blocks], axis=1).reshape(-1)
        for W, b in ((p.W2, p.b2), (p.W4, p.b4)):
            pre = W.matvec(x.reshape(-1)) + b
            assert np.all(pre[~sel] == 0.0) and np.any(pre[sel] != 0.0)


def _atoms(op):
    return [a for o in getattr(op, "ops", (op,)) for a in _atoms(o)] if hasattr(op, "ops") else [op]
