r"""Export a DUAT form: ``form.save(path)`` (npz + JSON metadata, read back by :func:`load_saved`) and an attribution
graph in the JSON shape circuit-tracer's frontend reads (issue 21).

The npz is written with fixed zip timestamps, so the same form gives byte-identical files.

Graph (:func:`attribution_graph`, issue 32), in the JSON that circuit-tracer's viewer loads (its data loader
``utilCg.formatData`` is run on it by the tests): ``metadata`` (``slug``, ``scan``, ``transcoder_list``,
``prompt_tokens``, ``prompt``, ``node_threshold``, ``schema_version``, and ``symuat``: what is exact and what was
pruned), ``qParams``, ``nodes`` and ``links``.  Node ids follow circuit-tracer's ``graph_models.Node``:

* one ``embedding`` node ``E_{token id}_{n}`` per input token;
* one ``"cross layer transcoder"`` node ``{layer}_{index}_{p}`` per head and FFN neuron at the target position
  :math:`p` (``feature`` is the Cantor pairing of layer and index, as circuit-tracer numbers features;
  ``index`` is :math:`B + h` for head :math:`h` and :math:`B + H + n` for neuron :math:`n`, :math:`B = \max(L, N)`,
  so that no feature's ``node_id`` or ``jsNodeId`` equals the error node's; ``clerp`` names it ``"L1 head 0"`` /
  ``"L1 neuron 5"``), pruned by weight;
* the target node ``{L+1}_{token id}_{p}`` with circuit-tracer's label ``Output "…" (p=…)`` (the softmax
  probability of the token; ``n/a`` for an output direction, the target of a model without an LM head);
* one ``"mlp reconstruction error"`` node ``0_{L-1}_{p}``.

Links into the target are the exact direct contributions of each node (``by="head"`` / ``by="neuron"``
attributions, through the LM head or along the direction); the embedding link is the direct part of the target
position's own token.  Biases, norm shifts and position embeddings (``rest``) are in ``metadata.symuat.rest``; the
error node's link is the computed remainder ``value - embedding - every head and neuron (kept or pruned) - rest``,
which is 0 to rounding (``metadata.symuat.error_max`` ≤ 1e-12): there is no replacement model and nothing is
missed.  Links between features (head → head, neuron → head) are direct paths through the held network
(:mod:`symuat.analysis.graph_links`).  :func:`write_graph` writes ``{slug}.json`` and ``graph-metadata.json``.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from ..errors import InvalidValueError, UnsupportedError
from ..numeric.head import as_head
from . import graph_links

__all__ = ["save_form", "load_saved", "Saved", "attribution_graph", "write_graph"]

FORMAT = "symuat-duat-form/1"


def _arrays(form: Any) -> dict:
    out = {"X0": (form.X0, "the input inputs_embeds X (N, M), before the stack's input transform"),
           "output": (form.output, "the last hidden state x'_out as (N, M) (final norm included)")}
    for i, (name, t) in enumerate(form.token_terms().items()):
        out[f"term{i}"] = (t, f"the DUAT term {name} of Eq. 11/33 as (N, M); the terms sum to output")
    for k, b in enumerate(form.stack.blocks):
        H = np.stack([form.attention(k, h) for h in range(b.attention.n_heads)])
        out[f"attention{k}"] = (H, f"the attention matrices H_h of layer {k} (0-based), shape (heads, N, N)")
    head = _head(form)
    if head is not None:
        out["unembedding"] = (head.U, "the head's output matrix U (V, M'): logits = cap(s (T(output) U^T + b))")
        if head.b is not None:
            out["unembedding_bias"] = (head.b, "the head's bias b (V,)")
        if head.transform is not None:
            out["head_dense"] = (head.transform.W, f"the head transform's dense W_T (M, M'), then "
                                 f"{head.transform.activation}")
            if head.transform.b is not None:
                out["head_dense_bias"] = (head.transform.b, "the head transform's dense bias (M',)")
            if head.transform.norm is not None:
                out["head_norm_gamma"] = (head.transform.norm.gamma, "the head transform's LayerNorm gain (M',)")
                out["head_norm_beta"] = (head.transform.norm.beta, "the head transform's LayerNorm shift (M',)")
    return out


def _head(form: Any) -> Any:
    try:
        return as_head(form.unembedding)
    except UnsupportedError:  # a refused head: the export holds no head
        return None


def _head_meta(form: Any) -> Any:
    head = _head(form)
    if head is None:
        return None
    tr = head.transform
    return {"name": head.name, "scale": head.scale, "softcap": head.softcap, "reads": head.reads,
            "transform": None if tr is None else {"activation": tr.activation,
                                                  "norm_eps": None if tr.norm is None else tr.norm.eps}}


def _check_target(path: Path, owned: Path) -> None:
    r"""Refuse to replace ``path`` unless it is absent or a file an export wrote (``owned``: its metadata)."""
    if not path.exists():
        return
    try:
        ours = json.loads(owned.read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        ours = False
    if not ours or not path.is_file():
        raise InvalidValueError(f"save: {str(path)!r} exists and was not written by a symuat export; refusing to "
                                "overwrite it (choose another path, or pass overwrite=True)")


def save_form(form: Any, path: Any, tokens: Optional[Sequence[str]] = None, model: Optional[str] = None,
              overwrite: bool = False) -> Path:
    """Write ``path`` (.npz) and ``path.json`` (metadata: model, tokens, shapes, what each array is, the npz's
    SHA-256).  An existing file that no export wrote (e.g. a checkpoint's ``config.json`` next to
    ``config.npz``) is never replaced unless ``overwrite=True``."""
    path = Path(path)
    if path.suffix != ".npz":
        raise InvalidValueError(f"save: the path must end in .npz, got {str(path)!r}")
    if not path.parent.is_dir():
        raise InvalidValueError(f"save: the folder {str(path.parent)!r} does not exist (create it first)")
    if not overwrite:
        for target in (path, path.with_suffix(".json")):
            _check_target(target, path.with_suffix(".json"))
    N = form.X0.shape[0]
    if tokens is not None and len(tokens) != N:
        raise InvalidValueError(f"save: {len(tokens)} tokens given for a form of N={N}")
    arrays = _arrays(form)
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, (a, _) in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(a), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, buf.getvalue())
    path.write_bytes(data.getvalue())
    meta = {"format": FORMAT, "model": model, "tokens": None if tokens is None else list(tokens),
            "kind": form.stack.kind, "depth": form.depth, "N": int(N), "M": int(form.X0.shape[1]),
            "terms": list(form.token_terms()), "head": _head_meta(form),
            "sha256": hashlib.sha256(data.getvalue()).hexdigest(),
            "arrays": {name: {"shape": list(a.shape), "meaning": what} for name, (a, what) in arrays.items()}}
    path.with_suffix(".json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


@dataclass(frozen=True)
class Saved:
    """What :func:`save_form` wrote: ``metadata`` (dict) and ``arrays`` (name -> array); ``terms`` by name."""

    metadata: dict
    arrays: dict

    @property
    def terms(self) -> dict:
        return {name: self.arrays[f"term{i}"] for i, name in enumerate(self.metadata["terms"])}


#: Largest relative deviation of the saved terms' sum from the saved output that :func:`load_saved` accepts.
SUM_TOL = 1e-10


def load_saved(path: Any) -> Saved:
    """Read a :func:`save_form` export back.  Refuses (one :class:`InvalidValueError`) a file whose content hash
    differs from its metadata's, whose arrays disagree with the metadata, or whose terms do not sum to its output."""
    path = Path(path)
    try:
        meta = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        data = path.read_bytes()
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise InvalidValueError(f"cannot read the export {str(path)!r}: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        fmt = meta.get("format") if isinstance(meta, dict) else None
        raise InvalidValueError(f"{str(path)!r} is not a {FORMAT} export (format {fmt!r})")
    digest = hashlib.sha256(data).hexdigest()
    if meta.get("sha256") != digest:
        raise InvalidValueError(f"the export {str(path)!r} has SHA-256 {digest[:12]}…, its metadata says "
                                f"{str(meta.get('sha256'))[:12]}…: the file was changed after it was written")
    try:
        want = {k: tuple(v["shape"]) for k, v in meta["arrays"].items()}
        names = [f"term{i}" for i in range(len(meta["terms"]))]
    except (KeyError, TypeError, AttributeError) as exc:
        raise InvalidValueError(f"the metadata of {str(path)!r} is malformed: {exc!r}") from None
    got = {k: a.shape for k, a in arrays.items()}
    if want != got or not set(names) | {"output"} <= set(arrays):
        raise InvalidValueError(f"the export {str(path)!r} has arrays {got}, its metadata says {want}")
    out = arrays["output"]
    err = float(np.max(np.abs(sum(arrays[n] for n in names) - out))) / max(float(np.max(np.abs(out))), 1e-300)
    if not err <= SUM_TOL:
        raise InvalidValueError(f"the terms of the export {str(path)!r} do not sum to its output (relative "
                                f"difference {err:.1e} > {SUM_TOL:g})")
    return Saved(meta, arrays)


def _cantor(x: int, y: int) -> int:
    """circuit-tracer's feature number of (layer, index): the Cantor pairing."""
    return (x + y) * (x + y + 1) // 2 + y


def _target(form: Any, target: Any, pos: int, label: Optional[str]) -> tuple:
    """``(by -> (parts, values at pos as scalars, rest, the library's value or None), value, probability or None,
    feature, label)`` of a token id (through the model's head, :class:`~symuat.numeric.head.Head`) or an output
    direction."""
    M = form.X0.shape[1]
    if isinstance(target, (int, np.integer)) and not isinstance(target, bool):
        head = as_head(form.unembedding)  # a refused head: UnsupportedError saying why
        if head is None:
            raise InvalidValueError("graph: this form has no LM head; give target= an output direction (an array "
                                    f"of shape ({M},)) instead of a token id")
        if not 0 <= target < head.vocab:
            raise InvalidValueError(f"graph: target token id {target} is outside the vocabulary (0..{head.vocab - 1})")
        z = head.logits(form.output[pos:pos + 1])[0]
        p = np.exp(z - z.max())
        prob = float(p[target] / p.sum())

        def parts(by):
            a = form.attribution(by, target=int(target))
            library = a.reference is not None and pos in (a.reference_rows or ())
            return a.parts, a.values[:, pos], float(a.rest[pos]), float(a.reference[pos]) if library else None
        return parts, float(z[target]), prob, int(target), label or f"token {int(target)}"
    d = np.asarray(target, dtype=float) if not isinstance(target, (str, bool)) else None
    if d is None or d.shape != (M,) or not np.all(np.isfinite(d)):
        raise InvalidValueError(f"graph: target must be a token id or a finite output direction of shape ({M},), got "
                                f"{getattr(target, 'shape', target)!r}")

    def parts(by):
        a = form.attribution(by)
        ref = a.reference is not None and pos in (a.reference_rows or range(a.reference.shape[0]))
        return a.parts, a.values[:, pos] @ d, float(a.rest[pos] @ d), float(a.reference[pos] @ d) if ref else None
    return parts, float(form.output[pos] @ d), None, 0, label or "direction"


def attribution_graph(form: Any, target: Any, tokens: Optional[Sequence[str]] = None,
                      token_ids: Optional[Sequence[int]] = None, prompt: str = "", slug: str = "symuat",
                      scan: str = "symuat", *, position: int = -1, target_label: Optional[str] = None,
                      min_weight: float = 0.0, max_features: Optional[int] = None,
                      feature_links: bool = True, link_threshold: float = 0.0) -> dict:
    r"""The attribution graph of ``target`` at ``position`` in circuit-tracer's JSON (module docstring).

    Parameters
    ----------
    target : int or (M,) array
        A token id (its logit, through the LM head; the logit node's label carries circuit-tracer's ``(p=…)``) or
        an output direction (a model without an LM head: the node's value is ``output[position] @ direction``,
        its label says ``(p=n/a)``).
    tokens, token_ids
        Default: the form's own (:attr:`~symuat.numeric.DUATForm.tokens`); labels and ids of the embedding nodes.
    slug, scan
        circuit-tracer's graph name (its file ``{slug}.json``, :func:`write_graph`) and scan.
    min_weight, max_features
        Keep the head and neuron nodes whose ``|weight|`` is at least ``min_weight`` times the largest, at most
        ``max_features`` of them (largest first); the pruned weight is ``metadata.symuat.pruned_weight``, so the
        error node stays the exact remainder (0 to rounding).
    feature_links, link_threshold
        Add the links head → head and neuron → head through the held network (:mod:`symuat.analysis.graph_links`)
        between kept nodes, pruned to ``|weight| >= link_threshold`` times the largest; on every layout with a
        residual path around attention (BERT's post-LN too: through its held LayerNorms), refused on ``paper``.
    """
    N, L = form.X0.shape[0], form.depth
    tokens = list(tokens) if tokens is not None else list(getattr(form, "tokens", None) or [str(n) for n in range(N)])
    ids = token_ids if token_ids is not None else getattr(form, "token_ids", None)
    ids = list(range(N)) if ids is None else [int(i) for i in ids]
    if len(tokens) != N or len(ids) != N:
        raise InvalidValueError(f"graph: need {N} tokens and token ids, got {len(tokens)} and {len(ids)}")
    if not isinstance(position, (int, np.integer)) or not -N <= position < N:
        raise InvalidValueError(f"graph: position must be an int in 0..{N - 1}, got {position!r}")
    if not isinstance(slug, str) or not slug or any(c in slug for c in "/\\?#"):
        raise InvalidValueError(f"graph: slug must be a non-empty name without / \\ ? #, got {slug!r}")
    pos = int(position) % N
    parts, value, prob, feature, label = _target(form, target, pos, target_label)
    head_parts, head_w, rest, library = parts("head")
    neuron_parts, neuron_w, _, _ = parts("neuron")
    value_from = "form"
    if library is not None:  # the library's own value (symuat.models.load): the error node measures against it
        value, value_from = library, "library"
    embed = float(head_w[head_parts.index("embed")])
    # (unit, weight, layer, feature index, clerp); indices from B = max(L, N) up, so that no feature's ids
    # "{layer}_{index}_{pos}" / "{layer}_{index}-0" equal the error node's "0_{L-1}_{pos}" / "{L-1}_{pos}-0"
    units, B = [], max(L, N)
    for k, b in enumerate(form.stack.blocks):
        H = b.attention.n_heads
        for h in range(H):
            units.append((("head", k, h), float(head_w[head_parts.index(f"L{k}.H{h}")]), k, B + h,
                          f"L{k} head {h}"))
        for n in range(getattr(b.ffn, "hidden", 0)):
            units.append((("neuron", k, n), float(neuron_w[neuron_parts.index(f"L{k}.N{n}")]), k, B + H + n,
                          f"L{k} neuron {n}"))
    kept = _prune(units, min_weight, max_features)
    total = embed + sum(u[1] for u in units)
    error = value - total - rest
    nodes, links = [], []
    node = _node_maker(nodes, pos)
    logit_id = f"{L + 1}_{feature}_{pos}"
    for n, (tok, tid) in enumerate(zip(tokens, ids)):
        node(f"E_{tid}_{n}", n, "E", "embedding", str(tok), ctx=n, js=f"E_{tid}-{n}")
    links.append({"source": f"E_{ids[pos]}_{pos}", "target": logit_id, "weight": embed})
    for unit, w, k, f, clerp in kept:
        node(f"{k}_{f}_{pos}", _cantor(k, f), k, "cross layer transcoder", clerp, js=f"{k}_{f}-0")
        links.append({"source": f"{k}_{f}_{pos}", "target": logit_id, "weight": w})
    error_id = f"0_{L - 1}_{pos}"
    node(error_id, -1, L - 1, "mlp reconstruction error", "error node: 0 (the DUAT form is exact)",
         js=f"{L - 1}_{pos}-0")
    links.append({"source": error_id, "target": logit_id, "weight": error})
    p_text = "n/a" if prob is None else f"{prob:.3f}"
    node(logit_id, feature, L + 1, "logit", f'Output "{label}" (p={p_text})', js=f"L_{feature}-{pos}",
         token_prob=0.0 if prob is None else prob, is_target_logit=True)
    n_feature_links = 0
    if feature_links and kept:
        from_units = [(u, f"{k}_{f}_{pos}") for u, _, k, f, _ in kept]
        for src, dst, w in graph_links.feature_links(form, target, pos, [u for u, _ in from_units], link_threshold):
            ids_of = dict(from_units)
            links.append({"source": ids_of[src], "target": ids_of[dst], "weight": w})
            n_feature_links += 1
    meta = {"slug": slug, "scan": scan, "transcoder_list": [], "prompt_tokens": [str(t) for t in tokens],
            "prompt": prompt, "node_threshold": None, "schema_version": 1,
            "symuat": {"exact": True, "error_max": abs(error), "value": value, "value_from": value_from,
                       "rest": rest,
                       "target": feature if prob is not None else "direction", "position": pos,
                       "probability": prob, "features_kept": len(kept), "features": len(units),
                       "pruned_weight": total - embed - sum(u[1] for u in kept), "feature_links": n_feature_links,
                       "note": "links into the target are exact direct contributions with every dynamic parameter "
                               "and gate held at this input; the error node is the computed remainder value - "
                               "embedding - every head and neuron (kept or pruned) - rest, 0 to rounding; rest "
                               "(biases, norm shifts, position embeddings) is not a node; feature-to-feature links "
                               "are direct paths through the held network (symuat.analysis.graph_links)"}}
    qparams = {"pinnedIds": [], "supernodes": [], "linkType": "both", "clickedId": "", "sg_pos": ""}
    return {"metadata": meta, "qParams": qparams, "nodes": nodes, "links": links}


def _node_maker(nodes: list, pos: int):
    def node(node_id, feature, layer, feature_type, clerp, **extra):
        nodes.append({"node_id": node_id, "jsNodeId": extra.pop("js", node_id), "feature": int(feature),
                      "layer": str(layer), "ctx_idx": pos if feature_type != "embedding" else extra.pop("ctx"),
                      "feature_type": feature_type, "token_prob": float(extra.pop("token_prob", 0.0)),
                      "is_target_logit": bool(extra.pop("is_target_logit", False)), "run_idx": 0,
                      "reverse_ctx_idx": 0, "clerp": clerp, "influence": None, "activation": None, **extra})
    return node


def _prune(units: list, min_weight: float, max_features: Optional[int]) -> list:
    if not (isinstance(min_weight, (int, float)) and 0.0 <= min_weight <= 1.0):
        raise InvalidValueError(f"graph: min_weight must be a fraction in [0, 1], got {min_weight!r}")
    if max_features is not None and not (isinstance(max_features, int) and max_features >= 0):
        raise InvalidValueError(f"graph: max_features must be a non-negative int or None, got {max_features!r}")
    top = max((abs(u[1]) for u in units), default=0.0)
    kept = [u for u in units if abs(u[1]) >= min_weight * top]
    if max_features is not None and len(kept) > max_features:
        order = sorted(range(len(kept)), key=lambda i: -abs(kept[i][1]))[:max_features]
        kept = [kept[i] for i in sorted(order)]
    return kept


def write_graph(graph: dict, directory: Any) -> Path:
    r"""Write ``graph`` as ``{slug}.json`` in ``directory`` and add its metadata to ``graph-metadata.json`` there
    (replacing a graph of the same slug), as circuit-tracer's ``create_graph_files`` does; returns the graph's
    path.  Serve the folder with circuit-tracer's local server to browse it."""
    folder = Path(directory)
    if not folder.is_dir():
        raise InvalidValueError(f"graph: {str(folder)!r} is not a directory")
    slug = graph["metadata"]["slug"]
    path = folder / f"{slug}.json"
    path.write_text(json.dumps(graph, indent=1, allow_nan=False))
    index = folder / "graph-metadata.json"
    meta = json.loads(index.read_text()) if index.is_file() else {"graphs": []}
    entry = {k: v for k, v in graph["metadata"].items() if k != "symuat"}
    meta["graphs"] = [g for g in meta.get("graphs", []) if g.get("slug") != slug] + [entry]
    index.write_text(json.dumps(meta, indent=1))
    return path
