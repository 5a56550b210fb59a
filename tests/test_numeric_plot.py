"""``form.plot``: four labelled panels from exact attributions, deterministic files, hostile arguments (issue 21)."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

from symuat.analysis.plot import term_layer_shares
from symuat.errors import InvalidValueError
from symuat.numeric import duat_form, random_stack

REQUIRE_PLOT = os.environ.get("SYMUAT_REQUIRE_PLOT") == "1"
needs_plot = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None and not REQUIRE_PLOT,
                                reason="matplotlib not installed (CI sets SYMUAT_REQUIRE_PLOT=1)")
TOKENS = ["the", "cat", "sat", "on", "mat"]


@pytest.fixture(scope="module")
def form():
    rng = np.random.default_rng(5)
    st = random_stack(rng, 3, 8, 2, 12, kind="pre_ln", activation="gelu", causal=True, final_norm=True)
    return duat_form(st, rng.standard_normal((5, 8)))


def test_term_layer_shares_sum_to_one_per_depth(form):
    names, S = term_layer_shares(form)
    assert names[:2] == ["A~x0", "c~"] and S.shape == (5, 3)
    assert np.allclose(np.nansum(S, axis=0), 1.0, atol=1e-12, rtol=0)
    assert np.isnan(S[3, 0]) and np.isnan(S[4, 1]) and not np.isnan(S[4, 2])  # term j exists from depth j on
    last = form.attribution("term").shares()
    assert np.allclose(S[:, -1], [last[n] for n in names], atol=1e-12, rtol=0)


@needs_plot
def test_plot_has_labelled_panels_and_is_deterministic(form, tmp_path):
    fig = form.plot(tmp_path / "a.png", tokens=TOKENS, layer=2, head=1)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert len(titles) == 4 and "layer 2, head 1" in titles[3]
    src, att = fig.axes[1], fig.axes[3]
    for ax in (src, att):
        assert [t.get_text() for t in ax.get_xticklabels()] == TOKENS
        assert [t.get_text() for t in ax.get_yticklabels()] == TOKENS
        assert ax.get_xlabel() and ax.get_ylabel()
    assert np.array_equal(att.images[0].get_array(), form.attention(2, 1))
    form.plot(tmp_path / "b.png", tokens=TOKENS, layer=2, head=1)
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    form.plot(tmp_path / "a.svg")
    assert (tmp_path / "a.svg").read_text().startswith("<?xml")


@needs_plot
@pytest.mark.parametrize("kw, match", [
    (dict(tokens=["x"]), "token labels"), (dict(layer=3), "layer must be"), (dict(head=2), "head must be"),
    (dict(path="f.jpg"), "must end in"), (dict(target=1), "LM head"),
])
def test_plot_hostile_arguments(form, kw, match):
    with pytest.raises(InvalidValueError, match=match):
        form.plot(**kw)
