"""``form.save`` / ``load_saved`` and the circuit-tracer attribution graph (issue 21): round trip, byte-identical
files, the graph in the shape circuit-tracer's frontend reads (its Node/Link/Metadata/QParams fields), exact
links, an error node ≡ 0; hostile files refused."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from symuat.analysis.export import load_saved
from symuat.errors import InvalidValueError
from symuat.numeric import duat_form, random_stack

V = 11


@pytest.fixture(scope="module")
def form():
    rng = np.random.default_rng(3)
    st = random_stack(rng, 2, 8, 2, 12, kind="pre_ln", activation="gelu", causal=True)
    f = duat_form(st, rng.standard_normal((4, 8)))
    return dataclasses.replace(f, unembedding=(rng.standard_normal((V, 8)), rng.standard_normal(V)))


def test_save_round_trip_is_exact_and_deterministic(form, tmp_path):
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    form.save(a, tokens=["w", "x", "y", "z"], model="tiny")
    form.save(b, tokens=["w", "x", "y", "z"], model="tiny")
    assert a.read_bytes() == b.read_bytes()
    assert a.with_suffix(".json").read_bytes() == b.with_suffix(".json").read_bytes()
    s = load_saved(a)
    assert s.metadata["tokens"] == ["w", "x", "y", "z"] and s.metadata["model"] == "tiny"
    assert np.array_equal(s.arrays["output"], form.output) and np.array_equal(s.arrays["X0"], form.X0)
    for name, t in form.token_terms().items():
        assert np.array_equal(s.terms[name], t)
    assert np.array_equal(s.arrays["attention1"][0], form.attention(1, 0))
    assert all(s.metadata["arrays"][k]["meaning"] for k in s.arrays)


def test_hostile_exports(form, tmp_path):
    with pytest.raises(InvalidValueError, match="must end in .npz"):
        form.save(tmp_path / "a.npy")
    with pytest.raises(InvalidValueError, match="tokens given"):
        form.save(tmp_path / "a.npz", tokens=["x"])
    p = form.save(tmp_path / "c.npz")
    meta = json.loads(p.with_suffix(".json").read_text())
    meta["arrays"]["X0"]["shape"] = [5, 8]
    p.with_suffix(".json").write_text(json.dumps(meta))
    with pytest.raises(InvalidValueError, match="metadata says"):
        load_saved(p)
    with pytest.raises(InvalidValueError, match="cannot read"):
        load_saved(tmp_path / "missing.npz")


#: circuit-tracer's frontend graph model (circuit_tracer/frontend/graph_models.py): field -> accepted types
NODE = {"node_id": str, "feature": int, "layer": str, "ctx_idx": int, "feature_type": str, "token_prob": float,
        "is_target_logit": bool, "run_idx": int, "reverse_ctx_idx": int, "jsNodeId": str, "clerp": str,
        "influence": (float, type(None)), "activation": (float, type(None))}
META = {"slug": str, "scan": str, "transcoder_list": list, "prompt_tokens": list, "prompt": str,
        "node_threshold": (float, type(None)), "schema_version": (int, type(None))}
QPARAMS = {"pinnedIds": list, "supernodes": list, "linkType": str, "clickedId": str, "sg_pos": str}
FEATURE_TYPES = {"embedding", "cross layer transcoder", "mlp reconstruction error", "logit"}


def _check_fields(obj, spec):
    for k, t in spec.items():
        assert k in obj and isinstance(obj[k], t) and not (t is int and isinstance(obj[k], bool)), (k, obj.get(k))


def test_attribution_graph_in_circuit_tracer_shape_and_exact(form):
    g = json.loads(json.dumps(form.graph(target=3, tokens=list("wxyz"), token_ids=[1, 2, 3, 4], prompt="w x y z"),
                              allow_nan=False))
    assert set(g) == {"metadata", "qParams", "nodes", "links"}
    _check_fields(g["metadata"], META)
    _check_fields(g["qParams"], QPARAMS)
    for n in g["nodes"]:
        _check_fields(n, NODE)
        assert n["feature_type"] in FEATURE_TYPES
    ids = [n["node_id"] for n in g["nodes"]]
    assert len(set(ids)) == len(ids) and len({n["jsNodeId"] for n in g["nodes"]}) == len(ids)
    for link in g["links"]:
        assert set(link) == {"source", "target", "weight"} and link["source"] in ids and link["target"] in ids
    (logit,) = [n for n in g["nodes"] if n["is_target_logit"]]
    U, b = form.unembedding
    want = float(form.output[-1] @ U[3] + b[3])  # the logit from the form's output, not from the attribution
    into = [li["weight"] for li in g["links"] if li["target"] == logit["node_id"]]
    assert abs(sum(into) + g["metadata"]["symuat"]["rest"] - want) <= 1e-12
    (err,) = [n for n in g["nodes"] if n["feature_type"] == "mlp reconstruction error"]
    (err_link,) = [li for li in g["links"] if li["source"] == err["node_id"]]
    assert abs(err_link["weight"]) <= 1e-12 and g["metadata"]["symuat"]["exact"] is True
    assert len(g["nodes"]) == 4 + 2 * (2 + 12) + 2 and logit["node_id"] == "3_3_3"
