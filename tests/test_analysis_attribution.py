"""Targeted attribution by reverse mode (issue 32): one target at one token, every part by one pullback through the
held network, equals the full (P, N, M) method (one propagation per source / routed unit) within 1e-12, over
families of random stacks (pre-LN, post-LN, gated RMSNorm, rotary, GQA, q/k norms, parallel, sandwich, padding,
input transforms, mixture of experts); the full method streamed to an .npz file equals it in memory; hostile
targets and positions raise one error each."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moe_support import random_moe_stack

from symuat.errors import InvalidValueError
from symuat.numeric import (
    duat_form,
    random_stack,
)

TOL = 1e-12
BY = ("source", "layer", "head", "neuron", "expert")


def _moe_stack(kind: str, shared: bool, seed: int = 0):
    return random_moe_stack(np.random.default_rng(seed), kind, shared, final_norm=True)


def _random(**kw):
    return lambda rng: random_stack(rng, 2, 8, 2, 12, **kw)


STACKS = {
    "pre_ln-gelu": _random(kind="pre_ln", activation="gelu", causal=True, position_embeddings=True,
                           final_norm=True),
    "post_ln-encoder": _random(kind="post_ln", activation="gelu", input_norm=True, position_embeddings=True),
    "gated-rms-rotary-gqa": _random(kind="pre_ln", activation="silu", causal=True, gated=True, norm="rms",
                                    n_kv_heads=1, rotary_dim=4, final_norm=True, biases=False),
    "qk_norm-rotary": _random(kind="pre_ln", activation="silu", causal=True, gated=True, norm="rms",
                              qk_norm="head", rotary_dim=4, rotary_style="interleaved", final_norm=True),
    "parallel": _random(kind="parallel", activation="gelu", causal=True, final_norm=True),
    "sandwich-scaled": _random(kind="sandwich", activation="gelu", causal=True, gated=True, norm="rms",
                               input_scale=2.0, final_norm=True),
    "sublayer_post_ln": _random(kind="sublayer_post_ln", activation="relu", causal=True),
    "paper-relu": _random(kind="paper", activation="relu"),
    "moe-pre_ln": lambda rng: _moe_stack("pre_ln", False),
    "moe-shared-post_ln": lambda rng: _moe_stack("post_ln", True, seed=1),
}


@pytest.fixture(scope="module", params=sorted(STACKS))
def form(request):
    rng = np.random.default_rng(11)
    stack = STACKS[request.param](rng)
    mask = np.array([1, 1, 0, 1, 1, 1]) if request.param == "post_ln-encoder" else None
    return duat_form(stack, rng.standard_normal((6, stack.width)), attention_mask=mask)


def _gap(a, b) -> float:
    return max(float(np.max(np.abs(a.values - b.values))), abs(float(a.rest - b.rest)),
               abs(float(a.output - b.output)))


@pytest.mark.parametrize("by", BY)
def test_reverse_mode_equals_the_full_method(form, by):
    w = np.random.default_rng(5).standard_normal(form.X0.shape[1])
    for pos in (0, 3, -1):
        fast = form.attribution(by, target=w, position=pos)
        full = form.attribution(by, target=w, position=pos, method="full")
        assert fast.parts == full.parts and fast.values.shape == (len(fast.parts),)
        assert _gap(fast, full) <= TOL and fast.error <= TOL
        assert fast.position == pos % 6
        assert float(fast.output) == pytest.approx(float(form.output[pos] @ w), abs=1e-12)


def test_causal_sources_after_the_position_get_nothing(form):
    if not form.stack.blocks[0].attention.causal:
        return
    a = form.attribution("source", target=np.ones(form.X0.shape[1]), position=2)
    assert not np.any(a.values[3:]) and np.any(a.values[:3])


def test_experts_are_parts():
    stack = _moe_stack("pre_ln", True, seed=2)
    form = duat_form(stack, np.random.default_rng(0).standard_normal((5, 8)))
    a = form.attribution("expert")
    assert a.parts == ("embed", "L0.attn", "L0.E0", "L0.E1", "L0.E2", "L0.E3", "L0.shared",
                       "L1.attn", "L1.E0", "L1.E1", "L1.E2", "L1.E3", "L1.shared")
    assert a.error <= TOL
    # an expert no token routes to contributes exactly nothing; the expert part is the sum of its neurons
    neurons = form.attribution("neuron")
    e = a.parts.index("L1.E2")
    cols = [neurons.parts.index(f"L1.N{n}") for n in range(12, 18)]
    assert np.max(np.abs(neurons.values[cols].sum(0) - a.values[e])) <= TOL
    gates = stack.blocks[1].ffn.gates(form.frozen().reads()[(1, "ffn")])
    for k in range(4):
        if not np.any(gates[:, 6 * k]):
            assert not np.any(a.values[a.parts.index(f"L1.E{k}")])


def test_moe_frozen_network_is_exact():
    form = duat_form(_moe_stack("sandwich", True, seed=3), np.random.default_rng(1).standard_normal((5, 8)))
    for gates in ("held", "live", "eq11"):
        assert np.max(np.abs(form.frozen(gates)(form.X0) - form.output)) <= TOL
    F = form.frozen("held")
    Xb = np.random.default_rng(2).standard_normal(form.X0.shape)
    assert np.max(np.abs(F(0.4 * form.X0 + 0.6 * Xb) - (0.4 * F(form.X0) + 0.6 * F(Xb)))) <= 1e-11


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["pre_ln", "post_ln", "parallel", "sandwich", "standard"]),
       gated=st.booleans(), heads=st.sampled_from([1, 2, 4]), n=st.integers(1, 7), seed=st.integers(0, 999),
       by=st.sampled_from(BY))
def test_reverse_mode_over_random_shapes(kind, gated, heads, n, seed, by):
    rng = np.random.default_rng(seed)
    stack = random_stack(rng, 3, 8, heads, 10, kind=kind, activation="gelu", causal=bool(seed % 2), gated=gated,
                         final_norm=True)
    form = duat_form(stack, rng.standard_normal((n, 8)))
    w, pos = rng.standard_normal(8), int(rng.integers(n))
    assert _gap(form.attribution(by, target=w, position=pos),
                form.attribution(by, target=w, position=pos, method="full")) <= TOL


def test_streamed_to_npz_equals_in_memory(tmp_path, monkeypatch):
    import importlib

    rng = np.random.default_rng(4)
    form = duat_form(random_stack(rng, 2, 8, 2, 12, kind="pre_ln", causal=True), rng.standard_normal((5, 8)))
    mod = importlib.import_module("symuat.analysis.attribution")
    monkeypatch.setattr(mod, "CHUNK_BYTES", 4 * 8 * 5 * 8 * 3)  # three parts a chunk
    for by in ("source", "neuron", "term"):
        mem = form.attribution(by)
        disk = form.attribution(by, out=tmp_path / f"{by}.npz")
        assert isinstance(disk.values, np.memmap) and disk.parts == mem.parts
        assert np.array_equal(disk.values, mem.values) and np.array_equal(disk.rest, mem.rest)
        with np.load(tmp_path / f"{by}.npz") as z:
            assert np.array_equal(z["values"], mem.values) and tuple(z["parts"]) == mem.parts
    again = form.attribution("neuron", out=tmp_path / "again.npz")
    assert again.error <= TOL
    assert (tmp_path / "again.npz").read_bytes() == (tmp_path / "neuron.npz").read_bytes()  # deterministic
    pos = form.attribution("head", target=np.ones(8), position=4, out=tmp_path / "pos.npz")  # out= is the full one
    assert pos.values.shape == (len(pos.parts),) and pos.error <= TOL


@pytest.mark.parametrize("kwargs, match", [
    (dict(by="source", target=np.ones(8), position=6), r"position must be a token index in \[0, 6\)"),
    (dict(by="source", target=np.ones(8), position=1.0), "position must be a token index"),
    (dict(by="source", target=np.ones(7), position=0), r"finite direction of shape \(8,\)"),
    (dict(by="source", target=np.full(8, np.nan), position=0), "finite direction"),
    (dict(by="source", target=3, position=0), "LM head"),
    (dict(by="term", target=np.ones(8), position=0, method="reverse"), "method='reverse' needs one number"),
    (dict(by="head", target=np.ones(8), method="reverse"), "method='reverse' needs one number"),
    (dict(by="head", method="fast"), "method must be one of"),
    (dict(by="head", out="a.txt"), "expected a path ending in .npz"),
])
def test_hostile_targets(kwargs, match, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    f = duat_form(random_stack(rng, 2, 8, 2, 12, kind="pre_ln", causal=True), rng.standard_normal((6, 8)))
    with pytest.raises(InvalidValueError, match=match):
        f.attribution(**kwargs)
    assert not list(tmp_path.iterdir())  # nothing written
