r"""Export a DUAT form: ``form.save(path)`` (npz + JSON metadata, read back by :func:`load_saved`) and an attribution
graph in the JSON shape circuit-tracer's frontend reads (issue 21).

The npz is written with fixed zip timestamps, so the same form gives byte-identical files.

Graph (:func:`attribution_graph`): ``metadata`` (``slug``, ``scan``, ``transcoder_list``, ``prompt_tokens``,
``prompt``, ``node_threshold``, ``schema_version``, and ``symuat``: what is exact and what is not exported),
``qParams``, ``nodes`` and ``links``.  Nodes: one ``embedding`` node per input token, one node per head and per
FFN neuron of every layer at the target position (``feature_type`` ``"cross layer transcoder"`` so the
frontend draws it; ``clerp`` names it ``"L1 head 0"`` / ``"L1 neuron 5"``), the target ``logit`` node, and one
``"mlp reconstruction error"`` node.  Links are the exact direct contributions (:mod:`symuat.numeric.attribution`,
``by="head"`` and ``by="neuron"`` through the LM head) of each node to the target logit; the embedding link is the
direct part of the target position's own token.  Biases, norm shifts and position embeddings (``rest``) are in
``metadata.symuat.rest``; the error node's link is the computed remainder ``logit - links - rest``, which is 0 to
rounding (``metadata.symuat.error_max`` ≤ 1e-12): there is no replacement model and nothing is missed.
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

__all__ = ["save_form", "load_saved", "Saved", "attribution_graph"]

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


def attribution_graph(form: Any, target: int, tokens: Sequence[str], token_ids: Sequence[int],
                      prompt: str = "", slug: str = "symuat", scan: str = "symuat") -> dict:
    """The attribution graph of the target logit at the last position (module docstring), as a JSON-ready dict."""
    N = form.X0.shape[0]
    if len(tokens) != N or len(token_ids) != N:
        raise InvalidValueError(f"graph: need {N} tokens and token ids, got {len(tokens)} and {len(token_ids)}")
    pos, L = N - 1, form.depth
    heads = form.attribution("head", target=target)
    neurons = form.attribution("neuron", target=target)
    logit = float(heads.output[pos])
    library = heads.reference is not None and pos in (heads.reference_rows or ())
    if library:  # the library's own logit (symuat.models.load): the error node measures against it
        logit = float(heads.reference[pos])
    nodes, links = [], []

    def node(node_id, feature, layer, feature_type, clerp, **extra):
        nodes.append({"node_id": node_id, "jsNodeId": extra.pop("js", node_id), "feature": int(feature),
                      "layer": str(layer), "ctx_idx": pos if feature_type != "embedding" else extra.pop("ctx"),
                      "feature_type": feature_type, "token_prob": 0.0, "is_target_logit": False, "run_idx": 0,
                      "reverse_ctx_idx": 0, "clerp": clerp, "influence": None, "activation": None, **extra})

    logit_id = f"{L + 1}_{target}_{pos}"
    for n, (tok, tid) in enumerate(zip(tokens, token_ids)):
        node(f"E_{int(tid)}_{n}", n, "E", "embedding", str(tok), ctx=n, js=f"E_{int(tid)}-{n}")
    embed = float(heads.values[heads.parts.index("embed"), pos])
    links.append({"source": f"E_{int(token_ids[pos])}_{pos}", "target": logit_id, "weight": embed})
    total = embed
    for k, b in enumerate(form.stack.blocks):
        H = b.attention.n_heads
        for h in range(H):
            w = float(heads.values[heads.parts.index(f"L{k}.H{h}"), pos])
            node(f"{k}_{h}_{pos}", (k + h) * (k + h + 1) // 2 + h, k, "cross layer transcoder", f"L{k} head {h}",
                 js=f"{k}_{h}-0")
            links.append({"source": f"{k}_{h}_{pos}", "target": logit_id, "weight": w})
            total += w
        for n in range(b.ffn.hidden):
            f = H + n
            w = float(neurons.values[neurons.parts.index(f"L{k}.N{n}"), pos])
            node(f"{k}_{f}_{pos}", (k + f) * (k + f + 1) // 2 + f, k, "cross layer transcoder", f"L{k} neuron {n}",
                 js=f"{k}_{f}-0")
            links.append({"source": f"{k}_{f}_{pos}", "target": logit_id, "weight": w})
            total += w
    rest = float(heads.rest[pos])
    error = logit - total - rest
    node(f"{L}_-1_{pos}", -1, L, "mlp reconstruction error", "error node: 0 (the DUAT form is exact)",
         js=f"{L}_-1-{pos}")
    links.append({"source": f"{L}_-1_{pos}", "target": logit_id, "weight": error})
    node(logit_id, target, L + 1, "logit", f"Output logit of token {target}: {logit:.6g}", js=f"L_{target}-{pos}")
    nodes[-1]["is_target_logit"] = True
    meta = {"slug": slug, "scan": scan, "transcoder_list": [], "prompt_tokens": [str(t) for t in tokens],
            "prompt": prompt, "node_threshold": None, "schema_version": 1,
            "symuat": {"exact": True, "error_max": abs(error), "logit": logit, "rest": rest, "target": int(target),
                       "position": pos, "logit_from": "library" if library else "form",
                       "note": "links are exact direct contributions to the target logit with every dynamic parameter "
                               "and gate held at this input; the error node is the computed remainder, 0 to rounding; "
                               "rest (biases, norm shifts, position embeddings) is not a node; feature-to-feature "
                               "links are not exported"}}
    qparams = {"pinnedIds": [], "supernodes": [], "linkType": "both", "clickedId": "", "sg_pos": ""}
    return {"metadata": meta, "qParams": qparams, "nodes": nodes, "links": links}
