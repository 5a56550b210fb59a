"""Fault injection at the patching, activations and graph boundaries (issue 32): hostile units, values, metrics and
targets, each with its one named error (or the exact right answer).  No torch: random stacks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from symuat.analysis import activations, frozen, patch, patch_sweep
from symuat.errors import InvalidValueError, ShapeError
from symuat.numeric import duat_form, random_stack

N, M = 4, 8


@pytest.fixture(scope="module")
def pair():
    rng = np.random.default_rng(0)
    st = random_stack(rng, 2, M, 2, 12, kind="pre_ln", activation="gelu", causal=True, final_norm=True)
    X = rng.standard_normal((N, M))
    Y = X.copy()
    Y[2] += 1.0
    return duat_form(st, X), duat_form(st, Y)


@pytest.mark.parametrize("unit, match", [
    (("resid", 0, 1.0), "non-empty sequence of ints"),
    (("resid", 0, []), "non-empty sequence of ints"),
    (("resid", 0, np.array([1])), "non-empty sequence of ints"),
    (("head", True, 0), r"layer of .* must be an int"),
    (("head", 0, 1.5), r"head index of .* must be an int"),
    (("neuron", 0, -1), r"neuron index of .* must be an int in 0\.\.11"),
    (("resid", -4, 0), r"int in 0\.\.2"),
    (("attn", 0, 0, 1), r"must be \('attn', layer\[, positions\]\)"),
    ((), "expected a tuple"),
    ([("resid", 0, 1)], "expected a tuple"),
])
def test_hostile_units(pair, unit, match):
    clean, corrupted = pair
    with pytest.raises(InvalidValueError, match=match):
        patch(corrupted, unit, clean)


@pytest.mark.parametrize("value, error, match", [
    (np.inf, InvalidValueError, "must be finite"),
    (np.full((1, M), np.nan), InvalidValueError, "must be finite"),
    (np.ones((2, M)), ShapeError, r"the unit's value has shape \(1, 8\)"),
    ("zero", ValueError, "could not convert"),
])
def test_hostile_edit_values(pair, value, error, match):
    _, corrupted = pair
    with pytest.raises(error, match=match):
        patch(corrupted, ("resid", 1, 2), value=value)


def test_a_huge_edit_gives_the_exact_answer(pair):
    """A stream row of 1e300·v: every norm is scale-invariant, so the last layer's output row is the final norm of v
    (the norms rescale big rows instead of overflowing), not an overflow and not a silent 0."""
    from symuat.numeric import apply_norm

    _, corrupted = pair
    v = np.arange(M, dtype=float)
    got = patch(corrupted, ("resid", 2, 2), value=1e300 * v).output
    want = apply_norm(1e6 * v[None], corrupted.stack.final_norm)[0]  # eps is negligible at either scale
    assert np.max(np.abs(got[2] - want)) <= 1e-12
    assert np.max(np.abs(np.delete(got, 2, axis=0) - np.delete(corrupted.output, 2, axis=0))) <= 1e-12


def test_a_nan_metric_is_never_a_sweep_value(pair):
    clean, corrupted = pair
    with pytest.raises(InvalidValueError, match="a sweep holds finite numbers only"):
        patch_sweep(corrupted, clean, "head", metric=lambda out: float("nan"), quiet=True)
    with pytest.raises(InvalidValueError, match="metric must be a function"):
        patch_sweep(corrupted, clean, "head", metric=3, quiet=True)


def test_hostile_targets_and_pairs(pair):
    clean, corrupted = pair
    with pytest.raises(InvalidValueError, match=r"direction of shape \(8,\)"):
        patch_sweep(corrupted, clean, target=np.full(M, np.inf), quiet=True)
    with pytest.raises(InvalidValueError, match=r"direction of shape \(8,\)"):
        patch_sweep(corrupted, clean, target=True, quiet=True)
    other = dataclasses.replace(corrupted.stack, kind="parallel")
    with pytest.raises(InvalidValueError, match="another model"):
        patch(corrupted, ("resid", 0, 1), duat_form(other, clean.X0))
    with pytest.raises(InvalidValueError, match=r"no activation named 'resid\.3'"):
        activations(corrupted)["resid.3"]
    with pytest.raises(InvalidValueError, match=r"layer must be an int in 0\.\.2"):
        corrupted.resid(3)
    with pytest.raises(InvalidValueError, match="logit lens needs an LM head"):
        corrupted.logit_lens()
    with pytest.raises(InvalidValueError, match="no LM head; give target= an output direction"):
        corrupted.graph(1)


def test_a_patched_run_with_itself_is_the_run(pair):
    """The exact right answer for a harmless input: patching a unit with its own value changes nothing."""
    _, corrupted = pair
    for unit in [("resid", 0), ("head", 1, 1), ("neuron", 0, 3, [0, 3]), ("ffn", 1, 2)]:
        for mode in ("recomputed", "frozen"):
            got = patch(corrupted, unit, corrupted, mode=mode).output
            assert np.max(np.abs(got - corrupted.output)) <= 1e-12, (unit, mode)


@pytest.mark.parametrize("call, error, match", [
    (lambda f: f.intervene(("expert", 0, 0)), "Unsupported", r"layer 0 has a dense FFN, it has no experts"),
    (lambda f: f.intervene(("expert", 0, 0), float("nan")), "Unsupported", "no experts"),
    (lambda f: f.intervene(("expert", 0)), "InvalidValue", r"unknown unit \('expert', 0\)"),
    (lambda f: frozen(f)(f.X0, {("expert", 0, 0): 0.0}), "InvalidValue", r"in a mixture-of-experts layer"),
    (lambda f: frozen(f)(f.X0, {("head", 0, 0): float("inf")}), "InvalidValue", "must be finite"),
])
def test_hostile_expert_interventions_on_a_dense_stack(pair, call, error, match):
    """An expert of a dense layer is refused by name, in intervene and in the held network's scales."""
    from symuat import errors

    with pytest.raises(getattr(errors, f"{error}Error"), match=match):
        call(pair[0])
