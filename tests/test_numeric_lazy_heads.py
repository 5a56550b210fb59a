"""Attention heads computed lazily inside the operator (issue 30, item 5): with the heads budget at 0 every layer's
W'_HVO is a LazyMHAOperator; the form equals the direct forward pass and the eager form, in every layout and with
rotary, grouped KV heads, windows, ALiBi, soft-capping and masks; an application holds one N×N matrix, not H."""

from __future__ import annotations

import dataclasses
import tracemalloc

import numpy as np
import pytest

import symuat.numeric.memory as memory
from symuat.errors import InvalidValueError
from symuat.numeric import LAYOUTS, duat_form, duat_relative_error, random_stack
from symuat.numeric.attention import HeadPlan, head_attention_weights
from symuat.numeric.mha_operator import LazyMHAOperator, MHAOperator, _mha_operator

N = 9


@pytest.fixture
def lazy(monkeypatch):
    monkeypatch.setattr(memory, "HEADS_BUDGET", 0)


def _variant(stack, name):
    if name == "plain":
        return stack
    blocks = []
    for i, b in enumerate(stack.blocks):
        a = b.attention
        extra = {"window": {"sliding_window": 3}, "softcap": {"softcap": 2.0},
                 "alibi": {"alibi": np.random.default_rng(i).standard_normal((a.n_heads, N))}}[name]
        blocks.append(dataclasses.replace(b, attention=dataclasses.replace(a, **extra)))
    return dataclasses.replace(stack, blocks=tuple(blocks))


@pytest.mark.parametrize("variant", ["plain", "window", "softcap", "alibi"])
@pytest.mark.parametrize("kind", LAYOUTS)
def test_lazy_form_equals_the_eager_one(kind, variant, monkeypatch):
    rng = np.random.default_rng(3)
    stack = _variant(random_stack(rng, 2, 8, 4, 12, kind, "silu", causal=True, norm="rms", gated=True,
                                  n_kv_heads=2, rotary_dim=2), variant)
    X = rng.standard_normal((N, 8))
    mask = np.ones(N)
    mask[1] = 0
    eager = duat_form(stack, X, mask)
    assert not any(isinstance(o, LazyMHAOperator) for o in _atoms(eager.params[1].W1))
    monkeypatch.setattr(memory, "HEADS_BUDGET", 0)
    form = duat_form(stack, X, mask)
    assert duat_relative_error(form) <= 1e-13
    assert np.max(np.abs(form.output - eager.output)) <= 1e-13 * np.max(np.abs(eager.output))
    assert any(isinstance(o, LazyMHAOperator) for o in _atoms(form.params[1].W1))


def _atoms(op):
    if isinstance(op, MHAOperator):
        return [op]
    return [a for o in op.ops for a in _atoms(o)] if hasattr(op, "ops") else [op]


def test_lazy_operator_applies_like_the_held_one(lazy):
    rng = np.random.default_rng(0)
    a = random_stack(rng, 1, 12, 6, 8, "pre_ln", causal=True, n_kv_heads=3, rotary_dim=2).blocks[0].attention
    X = rng.standard_normal((N, 12))
    heads = head_attention_weights(X, a)
    held, _ = _mha_operator(N, a, heads)
    lazy_op, _ = _mha_operator(N, a, HeadPlan(X, a, None))
    V = rng.standard_normal((3, N * 12))
    assert np.allclose(lazy_op._matvecs(V), held._matvecs(V), rtol=1e-13, atol=1e-13)
    assert np.allclose(lazy_op.matvec(V[0]), held.matvec(V[0]), rtol=1e-13, atol=1e-13)
    dense = sum(np.kron(H, (a.W_V[:, a.kv_slice(h)] @ a.W_O[a.head_slice(h), :]).T) for h, H in enumerate(heads))
    assert np.allclose(lazy_op.to_dense(), dense, rtol=1e-12, atol=1e-13)
    assert len(lazy_op.terms) == a.n_heads


def test_an_application_holds_one_head_not_all():
    rng = np.random.default_rng(1)
    n, M, H = 256, 16, 8
    a = random_stack(rng, 1, M, H, 8, "paper", causal=True).blocks[0].attention
    X = rng.standard_normal((n, M))
    op, _ = _mha_operator(n, a, HeadPlan(X, a, None))
    v = rng.standard_normal(n * M)
    tracemalloc.start()
    op.matvec(v)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 3 * 8 * n * n < H * 8 * n * n  # one N×N buffer (+ its mask), never the (H, N, N) block


def test_overflow_is_named_in_lazy_mode(lazy):
    rng = np.random.default_rng(2)
    stack = random_stack(rng, 1, 8, 2, 8, "pre_ln", causal=True)
    b = stack.blocks[0]
    big = dataclasses.replace(b.attention, W_Q=b.attention.W_Q * 1e200, W_K=b.attention.W_K * 1e200)
    stack = dataclasses.replace(stack, blocks=(dataclasses.replace(b, attention=big),))
    with pytest.raises(InvalidValueError, match=r"attention in layer 1 head 0: the scores s\*Q_h K_h\^T overflow"):
        duat_form(stack, rng.standard_normal((N, 8)))


def test_the_budget_decides(monkeypatch):
    assert memory.lazy_heads(16, 2048) is False and memory.lazy_heads(16, 4096) is True
    monkeypatch.setattr(memory, "HEADS_BUDGET", 8 * 4 * N * N)
    assert memory.lazy_heads(4, N) is False and memory.lazy_heads(5, N) is True
