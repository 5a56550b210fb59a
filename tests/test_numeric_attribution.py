"""Attributions, the frozen network and interventions on random stacks of every layout, plain and gated (issue 21);
hostile calls raise one symuat error each."""

from __future__ import annotations

import numpy as np
import pytest

from symuat.errors import InvalidValueError
from symuat.numeric import duat_form, random_stack
from symuat.numeric.stack import LAYOUTS

TOL = 1e-12


@pytest.fixture(scope="module", params=[(k, g) for k in LAYOUTS for g in (False, True)],
                ids=lambda p: f"{p[0]}-{'gated' if p[1] else 'plain'}")
def form(request):
    kind, gated = request.param
    rng = np.random.default_rng(7)
    st = random_stack(rng, 2, 8, 2, 12, kind=kind, activation="gelu", causal=True, gated=gated)
    return duat_form(st, rng.standard_normal((5, 8)))


def test_every_attribution_is_exact_and_causal(form):
    for by in ("term", "source", "layer", "head", "neuron"):
        a = form.attribution(by)
        assert a.error <= TOL and np.max(np.abs(a.values.sum(0) + a.rest - form.output)) <= TOL
        assert abs(sum(a.shares().values()) - 1.0) <= 1e-12
        assert abs(sum(a.shares(token=2).values()) - 1.0) <= 1e-12
    src = form.attribution("source")
    for s in range(1, 5):
        assert not np.any(src.values[s, :s])


def test_frozen_is_exact_affine_and_answers_another_input(form):
    rng = np.random.default_rng(1)
    Xb = rng.standard_normal(form.X0.shape)
    F, G, E = form.frozen("held"), form.frozen("live"), form.frozen("eq11")
    for f in (F, G, E):
        assert np.max(np.abs(f(form.X0) - form.output)) <= TOL
    # Eq. 11 with its tilde parameters held is a third function: its beta~_j keeps the earlier terms at X0
    assert not np.allclose(E(Xb), G(Xb)) and not np.allclose(E(Xb), F(Xb))
    # held gates: affine, F(aX + (1-a)Y) = aF(X) + (1-a)F(Y); live gates: not, and neither is the real network
    mid = 0.3 * form.X0 + 0.7 * Xb
    assert np.max(np.abs(F(mid) - (0.3 * F(form.X0) + 0.7 * F(Xb)))) <= 1e-11
    assert not np.allclose(F(Xb), duat_form(form.stack, Xb).output)


def test_interventions(form):
    src = form.attribution("source")
    iv = form.intervene(("source", 1), 0.0)
    assert np.max(np.abs(iv.frozen - (form.output - src.values[1]))) <= TOL
    half = form.intervene(("source", 1), 0.5)
    assert np.max(np.abs(half.frozen - (form.output - 0.5 * src.values[1]))) <= TOL
    one = form.intervene(("head", 0, 0), 1.0)  # scale 1 changes nothing, either way
    assert np.max(np.abs(one.frozen - form.output)) <= TOL and np.max(np.abs(one.recomputed - form.output)) <= TOL
    assert form.intervene(("term", "c~")).recomputed is None


@pytest.mark.parametrize("call, match", [
    (lambda f: f.attribution("token"), "by must be one of"),
    (lambda f: f.attribution("head", target="logits"), "LM head"),
    (lambda f: f.intervene(("head", 2, 0)), "unknown unit"),
    (lambda f: f.intervene(("neuron", 0, 12)), "unknown unit"),
    (lambda f: f.intervene(("source", 5)), "unknown unit"),
    (lambda f: f.intervene(("term", "U~9 app_9")), "unknown unit"),
    (lambda f: f.intervene(("head", 0, 0), float("nan")), "finite"),
    (lambda f: f.frozen("half"), "gates must be"),
    (lambda f: f.frozen("eq11")(f.X0, {("head", 0, 0): 0.0}), "no heads or neurons"),
    (lambda f: f.frozen()(np.zeros((4, 8))), "does not end in"),
    (lambda f: f.frozen()(f.X0, {("head", 0, 5): 0.0}), "unknown unit"),
])
def test_hostile_calls(call, match):
    rng = np.random.default_rng(0)
    f = duat_form(random_stack(rng, 2, 8, 2, 12, kind="pre_ln", causal=True), rng.standard_normal((5, 8)))
    with pytest.raises(InvalidValueError, match=match):
        call(f)


def test_chunks_and_memory_refusal(monkeypatch):
    import importlib

    from symuat.numeric.memory import OutOfMemoryError

    mod = importlib.import_module("symuat.analysis.attribution")  # the module (the package exports the function)

    rng = np.random.default_rng(2)
    f = duat_form(random_stack(rng, 2, 8, 2, 12, kind="pre_ln", causal=True), rng.standard_normal((5, 8)))
    whole = {by: f.attribution(by) for by in ("source", "neuron")}
    monkeypatch.setattr(mod, "CHUNK_BYTES", 1)  # one part per chunk: every chunk is its own pass
    for by, a in whole.items():
        b = f.attribution(by)
        assert np.max(np.abs(b.values - a.values)) <= 1e-14 and np.max(np.abs(b.rest - a.rest)) <= 1e-14
    monkeypatch.setenv("SYMUAT_MEMORY_LIMIT", str(mod.attribution_bytes(f, "neuron")))  # the values alone fit
    with pytest.raises(OutOfMemoryError, match=r"attribution by 'neuron' \(full method, values \(27, 5, 8\)\): "
                                               r"about .* needed, .* allowed by SYMUAT_MEMORY_LIMIT; stream it"):
        f.attribution("neuron")
    monkeypatch.setenv("SYMUAT_MEMORY_LIMIT", "64M")
    assert f.attribution("head").error <= TOL  # it fits a budget


def test_padded_form_attributions_are_exact():
    rng = np.random.default_rng(4)
    st = random_stack(rng, 2, 8, 2, 12, kind="post_ln", causal=False)
    f = duat_form(st, rng.standard_normal((5, 8)), attention_mask=np.array([1, 1, 1, 0, 1]))
    for by in ("source", "head", "neuron"):
        assert f.attribution(by).error <= TOL
    src = f.attribution("source")
    assert not np.any(src.values[3][[0, 1, 2, 4]])  # a masked key reaches no other token
    assert np.max(np.abs(f.frozen()(f.X0) - f.output)) <= TOL
