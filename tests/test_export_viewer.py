"""The attribution graph in circuit-tracer's viewer (issue 32): circuit-tracer's own frontend data loader
(``utilCg.formatData`` of its 0.5.0 wheel, run by Node on d3 v7 + jetpack from the npm registry) loads the export of
a model with an LM head and of one without (a direction target); node ids, the ``(p=…)`` label, the slug and
``graph-metadata.json``; feature-to-feature links equal the held network's own forward path; pruning keeps the error
node exact.  The loader's files are fetched by ``.ci/run`` into ``.ci/cache/`` (never committed); without them the
viewer tests skip, unless ``SYMUAT_REQUIRE_NODE=1`` (then they fail)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from graph_support import direct_path

from symuat.analysis.export import attribution_graph, write_graph
from symuat.analysis.graph_links import _Held, direct_weights, feature_links
from symuat.errors import InvalidValueError, UnsupportedError
from symuat.numeric import duat_form, random_stack
from symuat.numeric.head import as_head, direction

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("SYMUAT_VIEWER_CACHE", ROOT / ".ci" / "cache"))
ASSETS = CACHE / "circuit-tracer-0.5.0" / "circuit_tracer" / "frontend" / "assets"
D3 = CACHE / "node_modules" / "d3-jetpack" / "build" / "d3v7+jetpack.js"
V, N, M = 11, 4, 8


def _viewer():
    missing = [str(p) for p in (ASSETS / "attribution_graph" / "util-cg.js", D3) if not p.is_file()]
    if shutil.which("node") is None:
        missing.append("node")
    if missing:
        if os.environ.get("SYMUAT_REQUIRE_NODE") == "1":
            pytest.fail(f"SYMUAT_REQUIRE_NODE=1 but the viewer's loader is missing: {missing} (run .ci/run's fetch)")
        pytest.skip(f"circuit-tracer's frontend or d3 not fetched: {missing}")


def load_in_viewer(graph: dict, tmp_path: Path) -> dict:
    """Run circuit-tracer's formatData on ``graph`` (written as the viewer reads it); its summary."""
    _viewer()
    path = write_graph(graph, tmp_path)
    r = subprocess.run(["node", str(ROOT / "tests" / "viewer" / "load_graph.js"), str(ASSETS), str(D3), str(path)],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError(f"circuit-tracer's loader failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout)


def _form(kind="pre_ln", head=True, seed=3):
    rng = np.random.default_rng(seed)
    st = random_stack(rng, 3, M, 2, 12, kind=kind, activation="gelu", causal=kind != "post_ln", final_norm=True)
    f = duat_form(st, rng.standard_normal((N, M)))
    f = dataclasses.replace(f, tokens=("w", "x", "y", "z"), token_ids=np.array([5, 6, 7, 8]))
    return dataclasses.replace(f, unembedding=(rng.standard_normal((V, M)), rng.standard_normal(V))) if head else f


def test_the_viewer_loads_a_logit_graph(tmp_path):
    form = _form()
    g = form.graph(3, slug="cat-logit", max_features=10)
    out = load_in_viewer(g, tmp_path)
    assert out["connected"] and out["nodes"] == N + 10 + 2 and out["links"] == len(g["links"])
    assert out["errorNodes"] == ["0_2_3"] and out["promptTokens"] == ["w", "x", "y", "z"]
    prob = g["metadata"]["symuat"]["probability"]
    assert out["logitPct"] == [round(prob, 3)] and out["logitClerp"] == [f'Output "token 3" (p={prob:.3f})']
    assert out["featureLinks"] == g["metadata"]["symuat"]["feature_links"] > 0
    meta = json.loads((tmp_path / "graph-metadata.json").read_text())
    assert [m["slug"] for m in meta["graphs"]] == ["cat-logit"] and (tmp_path / "cat-logit.json").is_file()
    write_graph(form.graph(3, slug="other"), tmp_path)
    write_graph(form.graph(5, slug="cat-logit"), tmp_path)  # the same slug is replaced, another kept
    assert [m["slug"] for m in json.loads((tmp_path / "graph-metadata.json").read_text())["graphs"]] == [
        "other", "cat-logit"]


def test_the_viewer_loads_a_direction_graph_of_a_model_without_head(tmp_path):
    form = _form("post_ln", head=False)
    d = np.random.default_rng(1).standard_normal(M)
    g = form.graph(d, position=1, target_label="sentiment")  # post-LN: feature links through the held norms
    out = load_in_viewer(g, tmp_path)
    assert out["connected"] and out["logitPct"] == [None] and out["logitClerp"] == ['Output "sentiment" (p=n/a)']
    assert out["featureLinks"] == g["metadata"]["symuat"]["feature_links"] > 0
    want = float(form.output[1] @ d)  # from the form's output, not from the attribution
    logit = next(n["node_id"] for n in g["nodes"] if n["feature_type"] == "logit")
    total = sum(li["weight"] for li in g["links"] if li["target"] == logit) + g["metadata"]["symuat"]["rest"]
    assert abs(total - want) <= 1e-12 and g["metadata"]["symuat"]["error_max"] <= 1e-12


def test_the_harness_can_fail(tmp_path):
    """Without circuit-tracer's ``(p=…)`` on the logit label its loader crashes, as it did on the old export."""
    g = _form().graph(3)
    for n in g["nodes"]:
        if n["feature_type"] == "logit":
            n["clerp"] = "Output logit of token 3: 1.5"
    with pytest.raises(AssertionError, match="reading 'split'"):
        load_in_viewer(g, tmp_path)


@pytest.mark.parametrize("kind", ["pre_ln", "parallel", "standard", "sandwich", "sublayer_post_ln", "post_ln"])
def test_feature_links_are_the_held_networks_direct_paths(kind):
    """u -> v equals the change of the target when u's output changes by itself and only the residual path carries
    it to v, and v's change only the residual path to the output (tests/graph_support.py); on ``post_ln`` (BERT) that
    path crosses every held norm.  Each unit's link to the target is its attribution."""
    form = _form(kind)
    units = [("head", k, h) for k in range(3) for h in range(2)] + [("neuron", k, n) for k in range(3)
                                                                   for n in (0, 5, 11)]
    a, b = form.attribution("head", target=3), form.attribution("neuron", target=3)
    want = [a.values[a.parts.index(f"L{k}.H{i}"), 3] if t == "head" else b.values[b.parts.index(f"L{k}.N{i}"), 3]
            for t, k, i in units]
    assert np.max(np.abs(direct_weights(form, 3, 3, units) - want)) <= 1e-12
    held = _Held(form, 3, 3)
    g0 = direction(as_head(form.unembedding), form.output[3:4], 3)[0]
    links = feature_links(form, 3, 3, units)
    assert len(links) == sum(1 for v in units if v[0] == "head" for u in units if u[1] < v[1])
    for u, v, w in links:
        assert abs(w - direct_path(form, held.held, u, v, g0, 3)) <= 1e-12 * max(1.0, abs(w)), (u, v)


def test_pruning_keeps_the_error_node_exact():
    form = _form()
    full, pruned = form.graph(3, feature_links=False), form.graph(3, min_weight=0.5, feature_links=False)
    meta = pruned["metadata"]["symuat"]
    assert meta["features_kept"] < meta["features"] == 3 * (2 + 12)
    kept = {n["node_id"] for n in pruned["nodes"]}
    into = {li["source"]: li["weight"] for li in full["links"]}
    dropped = sum(w for s, w in into.items() if s not in kept)
    assert abs(meta["pruned_weight"] - dropped) <= 1e-12 and meta["error_max"] <= 1e-12
    weights = sorted(abs(li["weight"]) for li in full["links"] if li["source"][0].isdigit() and
                     not li["source"].startswith("0_2_"))
    assert all(abs(into[n]) >= 0.5 * weights[-1] for n in kept if n in into and n[0].isdigit()
               and not n.startswith("0_2_"))


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(target=11), InvalidValueError, r"outside the vocabulary \(0\.\.10\)"),
    (dict(target=np.ones(3)), InvalidValueError, r"output direction of shape \(8,\)"),
    (dict(target=3, slug="a/b"), InvalidValueError, "slug must be a non-empty name"),
    (dict(target=3, position=4), InvalidValueError, r"position must be an int in 0\.\.3"),
    (dict(target=3, min_weight=2.0), InvalidValueError, r"min_weight must be a fraction in \[0, 1\]"),
    (dict(target=3, max_features=-1), InvalidValueError, "max_features must be a non-negative int"),
    (dict(target=3, tokens=["a"]), InvalidValueError, "need 4 tokens"),
])
def test_bad_graph_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        attribution_graph(_form(), **kwargs)


def test_refusals_name_the_missing_piece():
    with pytest.raises(InvalidValueError, match="no LM head; give target= an output direction"):
        _form(head=False).graph(3)
    with pytest.raises(UnsupportedError, match="residual path around attention; the 'paper' layout has none"):
        _form("paper").graph(3)
    g = _form("paper").graph(3, feature_links=False)  # without links the graph is exact on every layout
    assert g["metadata"]["symuat"]["error_max"] <= 1e-12
