"""Activation patching and edits on random stacks of every layout (symuat.analysis.patching, .sites): the sites run
reproduces the stack's forward pass, frozen patching agrees with the held network's own scaling (another code path)
and is affine in the patched value, re-computed patching of the whole residual stream gives the source's run,
sweeps put the clean metric where the patch restores it, and every wrong input is refused by name.  The comparison
with the library's own hooked runs is in the family tests (tests/patching_support.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.analysis import frozen, patch, patch_sweep, run_sites
from symuat.errors import InvalidValueError, ShapeError, UnsupportedError
from symuat.numeric import GatedFFNWeights, duat_form, forward, stack_output
from symuat.numeric.moe import MoEFFNWeights
from symuat.numeric.random_stacks import random_stack

LAYOUTS = ["paper", "standard", "pre_ln", "post_ln", "parallel", "sandwich", "sublayer_post_ln"]
N, M = 5, 8


def _stack(kind, gated=False, seed=0, final_norm=True):
    return random_stack(np.random.default_rng(seed), 2, M, 2, 12, kind=kind, causal=True, gated=gated,
                        final_norm=final_norm, activation="silu" if gated else "gelu")


def _pair(stack, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, M))
    Y = X.copy()
    Y[1] = rng.standard_normal(M)  # the corrupted run differs at token 1 only
    return duat_form(stack, X), duat_form(stack, Y)


@settings(max_examples=12, deadline=None)
@given(kind=st.sampled_from(LAYOUTS), gated=st.booleans(), seed=st.integers(0, 10 ** 6))
def test_sites_run_is_the_forward_pass(kind, gated, seed):
    stack = _stack(kind, gated, seed % 7)
    X = np.random.default_rng(seed).standard_normal((N, M))
    out, rec = run_sites(stack, X)
    assert np.max(np.abs(out - stack_output(stack, X))) <= 1e-12
    for k, want in enumerate(forward(stack, X)):
        assert np.max(np.abs(rec[("resid", k)] - want)) <= 1e-12


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("gated", [False, True])
def test_frozen_edits_equal_the_held_networks_scaling(kind, gated):
    """A head's or neuron's output set to 0 in the frozen mode is the held network with that unit scaled by 0."""
    form, _ = _pair(_stack(kind, gated))
    F = frozen(form, "held")
    for unit in [("head", 1, 0), ("head", 0, 1), ("neuron", 0, 3), ("neuron", 1, 11)]:
        got = patch(form, unit, value=0.0, mode="frozen").output
        assert np.max(np.abs(got - F(form.X0, {unit: 0.0}))) <= 1e-12, unit


@pytest.mark.parametrize("kind", LAYOUTS)
def test_frozen_patching_is_affine_in_the_value(kind):
    form, other = _pair(_stack(kind, gated=True))
    rng = np.random.default_rng(3)
    for unit, shape in [(("head", 0, 1, [2, 4]), (2, 4)), (("resid", 1, 3), (1, M)), (("neuron", 1, 5), (N,))]:
        a, b = rng.standard_normal(shape), rng.standard_normal(shape)
        fa, fb, fm = (patch(form, unit, value=v, mode="frozen").output for v in (a, b, 0.3 * a + 0.7 * b))
        assert np.max(np.abs(fm - (0.3 * fa + 0.7 * fb))) <= 1e-12, unit
        ra, rb, rm = (patch(form, unit, value=v).output for v in (a, b, 0.3 * a + 0.7 * b))
        assert np.max(np.abs(rm - (0.3 * ra + 0.7 * rb))) > 1e-8  # re-computed: the dynamic parameters respond


@pytest.mark.parametrize("kind", LAYOUTS)
def test_patching_the_whole_stream_gives_the_source_run(kind):
    clean, corrupted = _pair(_stack(kind))
    for layer in (0, 1, 2):
        got = patch(corrupted, ("resid", layer), clean)
        assert np.max(np.abs(got.output - clean.output)) <= 1e-12
        assert np.array_equal(got.base, corrupted.output) and got.mode == "recomputed"
    same = patch(corrupted, ("head", 1, 0), corrupted)  # a run patched with itself is unchanged
    assert np.max(np.abs(same.output - corrupted.output)) <= 1e-12


def test_causal_patch_leaves_earlier_tokens():
    clean, corrupted = _pair(_stack("pre_ln"))
    got = patch(corrupted, ("resid", 1, 3), clean).output
    assert np.max(np.abs(got[:3] - corrupted.output[:3])) <= 1e-12
    assert np.max(np.abs(got[3:] - corrupted.output[3:])) > 1e-6


@pytest.mark.parametrize("mode", ["recomputed", "frozen"])
def test_resid_sweep_restores_the_clean_metric_where_it_should(mode):
    clean, corrupted = _pair(_stack("pre_ln"))
    d = np.random.default_rng(4).standard_normal(M)
    sw = patch_sweep(corrupted, clean, "resid", target=d, mode=mode, tokens=list("abcde"))
    assert sw.values.shape == (3, N) and sw.columns == tuple("abcde") and sw.rows == ("L0", "L1", "L2")
    assert sw.clean == pytest.approx(float(clean.output[-1] @ d), abs=1e-12)
    assert sw.corrupted == pytest.approx(float(corrupted.output[-1] @ d), abs=1e-12)
    # the last layer's stream is read at the last token only; token 0 is the same in both runs (causal)
    assert np.max(np.abs(sw.normalized[2, :N - 1])) <= 1e-9 and np.max(np.abs(sw.normalized[:, 0])) <= 1e-9
    part = patch_sweep(corrupted, clean, "resid", target=d, mode=mode, positions=[1, -1], tokens=list("abcde"),
                       quiet=True)
    assert part.columns == ("b (1)", "e (4)") and np.array_equal(part.values, sw.values[:, [1, 4]])
    if mode == "recomputed":  # the last token's last stream, or token 1 (the only difference) at layer 0, is all
        assert abs(sw.normalized[2, N - 1] - 1.0) <= 1e-9 and abs(sw.normalized[0, 1] - 1.0) <= 1e-9
    else:  # held final-norm statistics of the corrupted run: the restored stream does not give the clean metric
        assert abs(sw.normalized[2, N - 1] - 1.0) > 1e-3


def test_head_sweep_and_its_plot(tmp_path):
    pytest.importorskip("matplotlib")
    clean, corrupted = _pair(_stack("pre_ln"))
    sw = patch_sweep(corrupted, clean, "head", metric=lambda out: float(out[-1].sum()))
    assert sw.values.shape == (2, 2) and sw.columns == ("H0", "H1") and sw.metric == "<lambda>"
    for (r, c), v in np.ndenumerate(sw.values):
        want = patch(corrupted, ("head", r, c), clean).output[-1].sum()
        assert abs(v - want) <= 1e-12
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    sw.plot(a)
    patch_sweep(corrupted, clean, "head", metric=lambda out: float(out[-1].sum())).plot(b)
    assert a.read_bytes() == b.read_bytes() and a.stat().st_size > 1000
    fig = sw.plot(normalized=True)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["H0", "H1"]


def _moe_stack():
    rng = np.random.default_rng(0)

    def expert():
        return GatedFFNWeights(rng.standard_normal((M, 6)) / 3, rng.standard_normal((M, 6)) / 3,
                               rng.standard_normal((6, M)) / 3, activation="silu")

    base = _stack("pre_ln", gated=True)
    moe = MoEFFNWeights(tuple(expert() for _ in range(3)), rng.standard_normal((M, 3)), top_k=2)
    import dataclasses

    return dataclasses.replace(base, blocks=(base.blocks[0], dataclasses.replace(base.blocks[1], ffn=moe)))


def test_moe_experts_recomputed_and_frozen():
    stack = _moe_stack()
    clean, corrupted = _pair(stack)
    out, rec = run_sites(stack, clean.X0)
    assert np.max(np.abs(out - stack_output(stack, clean.X0))) <= 1e-12
    assert np.max(np.abs(sum(rec[("expert", 1, e)] for e in range(3)) - rec[("ffn", 1)])) <= 1e-12
    got = patch(corrupted, ("expert", 1, 0), clean)
    assert got.output.shape == (N, M)
    F = frozen(corrupted)  # routing gates held: the held run is the form, and a patch is affine in its value
    assert np.max(np.abs(run_sites(stack, corrupted.X0, held=F.held)[0] - corrupted.output)) <= 1e-12
    a, b = np.random.default_rng(5).standard_normal((2, N, M))
    fa, fb, fm = (patch(corrupted, ("expert", 1, 2), value=v, mode="frozen").output for v in (a, b, (a + b) / 2))
    assert np.max(np.abs(fm - (fa + fb) / 2)) <= 1e-12
    with pytest.raises(UnsupportedError, match="patch an 'expert'"):
        patch(corrupted, ("neuron", 1, 0), clean)
    with pytest.raises(UnsupportedError, match="no experts"):
        patch(corrupted, ("expert", 0, 0), clean)


@pytest.mark.parametrize("unit, error, match", [
    (("mlp", 0, 1), InvalidValueError, r"one of \['attn', 'expert', 'ffn', 'head', 'neuron', 'resid'\]"),
    (("head", 2, 0), InvalidValueError, r"int in 0\.\.1 \(0-based\)"),
    (("resid", 3, 0), InvalidValueError, r"int in 0\.\.2"),
    (("head", 0, 2), InvalidValueError, r"int in 0\.\.1 \(layer 0 has 2 heads\)"),
    (("neuron", 0, 12), InvalidValueError, r"0\.\.11"),
    (("resid", 0, 5), InvalidValueError, r"position 5 .* 5 tokens"),
    (("resid", 0, [True]), InvalidValueError, "non-empty sequence of ints"),
    (("head", 0), InvalidValueError, r"must be \('head', layer, index\[, positions\]\)"),
    ("resid", InvalidValueError, "expected a tuple"),
])
def test_bad_units_are_refused_by_name(unit, error, match):
    clean, corrupted = _pair(_stack("pre_ln"))
    with pytest.raises(error, match=match):
        patch(corrupted, unit, clean)


def test_bad_calls_are_refused():
    stack = _stack("pre_ln")
    clean, corrupted = _pair(stack)
    with pytest.raises(InvalidValueError, match="exactly one of source"):
        patch(corrupted, ("resid", 0, 1))
    with pytest.raises(InvalidValueError, match="mode must be one of"):
        patch(corrupted, ("resid", 0, 1), clean, mode="frozen-ish")
    with pytest.raises(ShapeError, match="same length"):
        patch(corrupted, ("resid", 0, 1), duat_form(stack, clean.X0[:3]))
    with pytest.raises(InvalidValueError, match="another model"):
        patch(corrupted, ("resid", 0, 1), duat_form(_stack("pre_ln", seed=9), clean.X0))
    with pytest.raises(ShapeError, match=r"has shape \(3,\); the unit's value has shape \(1, 8\)"):
        patch(corrupted, ("resid", 0, 1), value=np.ones(3))
    with pytest.raises(InvalidValueError, match="finite"):
        patch(corrupted, ("resid", 0, 1), value=np.nan)
    with pytest.raises(InvalidValueError, match="head sweep patches all"):
        patch_sweep(corrupted, clean, "head", metric=np.sum, positions=[1])
    with pytest.raises(ShapeError, match="tokens has 2 labels"):
        patch_sweep(corrupted, clean, metric=np.sum, tokens=["a", "b"])
    with pytest.raises(InvalidValueError, match="over must be one of"):
        patch_sweep(corrupted, clean, "neuron", metric=np.sum)
    with pytest.raises(InvalidValueError, match="exactly one of metric"):
        patch_sweep(corrupted, clean)
    with pytest.raises(InvalidValueError, match="no LM head"):
        patch_sweep(corrupted, clean, target=3)
    with pytest.raises(InvalidValueError, match=r"direction of shape \(8,\)"):
        patch_sweep(corrupted, clean, target=np.ones(3))
    with pytest.raises(InvalidValueError, match="no LM head"):
        _ = patch(corrupted, ("resid", 0, 1), clean).logits


def test_term_names_are_one_vocabulary():
    """The term names of token_terms, the term x layer plot and interventions are the same; a wrong one lists them."""
    from symuat.analysis import term_layer_shares

    form, _ = _pair(_stack("pre_ln"))
    names = ["A~x0", "c~", "U~1 app_1", "U~2 app_2"]
    assert list(form.token_terms()) == names and term_layer_shares(form)[0] == names
    with pytest.raises(InvalidValueError, match=r"valid term names are \['A~x0', 'c~', 'U~1 app_1', 'U~2 app_2'\]"):
        form.intervene(("term", "U~1 sigma"))


def test_attributions_over_a_batch_of_forms():
    from symuat.analysis import attributions, mean_shares

    stack = _stack("pre_ln")
    forms = (duat_form(stack, np.random.default_rng(1).standard_normal((N, M))),
             duat_form(stack, np.random.default_rng(2).standard_normal((3, M))))
    results = attributions(forms, "source", quiet=True)
    assert [a.values.shape[1] for a in results] == [N, 3]
    for form, a in zip(forms, results):
        assert np.max(np.abs(a.values.sum(0) + a.rest - form.output)) <= 1e-12
    means, counts = mean_shares(attributions(forms, "term", quiet=True))
    assert abs(sum(means.values()) - 1.0) <= 1e-12 and set(counts.values()) == {2}
    _, counts = mean_shares(results)
    assert counts["tok0"] == 2 and counts["tok4"] == 1
    with pytest.raises(InvalidValueError, match="non-empty sequence of DUAT forms"):
        attributions([])
