r"""Out-of-core loading: a model bigger than memory, its layers read from the safetensors shards one at a time
(issue 30, item 1).

``load(dir, out_of_core=True)`` (or ``load(dir)`` when the float64 model would not fit, :func:`needs_out_of_core`)
reads only the checkpoint's headers and the config; the library's base model is built on the ``meta`` device (no
memory).  The stack is a :class:`~symuat.numeric.streamed.StreamedStack`: block :math:`i` is made when the DUAT
evaluation reaches it, by materialising the library's decoder layer :math:`i` on the CPU in float64, copying its
tensors in from the memory-mapped shards at their stored dtype (bf16 included; the widening is exact,
:func:`~symuat.models.shards.load_layer`) and reading its weights as the in-memory importer does
(:func:`~symuat.models.hf_decoders.llama_like`), sharing the layer's memory.  The first time a layer is read it is
*probed*: the library's own layer module and the block are run on one short random input and must agree within
1e-10 (else :class:`~symuat.errors.UnsupportedError`, as :func:`~symuat.models.importer.probe_model` does for a
whole model).  The block is dropped before the next one is read, so at most one layer's float64 weights are held;
a view of the form that needs a layer again reads it again.

The word embeddings are :class:`EmbeddingRows`: only the rows of the ids asked for are read and widened.  The LM
head (:math:`V\times M` in float64, the largest tensor of a big model) is not imported: ``model.head`` is None and
the analyses' logit targets are refused with the reason; :func:`lm_logits` applies it to hidden states in
vocabulary chunks (:data:`LOGIT_CHUNK` rows of :math:`U` read and widened at a time).  The form's own memory is
its layer inputs and terms, :math:`O(L\cdot N\cdot M)`.  Families: :data:`OUT_OF_CORE_FAMILIES`; any other is
refused by name.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Optional, Tuple

import numpy as np

from ..errors import InvalidValueError, ShapeError, UnsupportedError
from ..numeric import BlockWeights
from ..numeric.memory import available_bytes, check_memory
from ..numeric.streamed import BlockSource, StreamedStack
from ._torch import require_torch, sharing
from .activations import activation_name
from .hf_common import check_config, rms_norm, rotary
from .hf_decoders import _gated_mlp, _llama_attention
from .precision import library_float64
from .shards import Shards, check_layer_keys, load_layer

__all__ = ["OUT_OF_CORE_FAMILIES", "EmbeddingRows", "float64_bytes", "needs_out_of_core", "load_out_of_core",
           "PROBE_TOL", "lm_logits", "LOGIT_CHUNK"]

#: vocabulary rows of the LM head read and widened at a time by :func:`lm_logits` (64 MiB of float64 at width 1024)
LOGIT_CHUNK = 8192

#: ``config.model_type`` of the families that can be loaded out of core.
OUT_OF_CORE_FAMILIES = ("llama",)
#: a layer module and its block must agree this closely on the probe input
PROBE_TOL = 1e-10


class EmbeddingRows:
    r"""The word embeddings :math:`E` (``shape`` :math:`V\times M`) of a checkpoint, read by rows: ``rows[ids]`` is
    :math:`E[ids]` in float64 with only the distinct ids' rows read from the mapped shard."""

    def __init__(self, shards: Shards, key: str):
        self.shards, self._key = shards, key
        self.shape = tuple(shards.shape(key))
        self.ndim, self.dtype = 2, np.dtype(np.float64)

    def __getitem__(self, ids: Any) -> np.ndarray:
        ids = np.asarray(ids)
        if ids.dtype.kind not in "iu" or ids.size == 0:
            raise InvalidValueError(f"embedding rows need a non-empty array of int ids, got {ids.dtype} {ids.shape}")
        if ids.min() < 0 or ids.max() >= self.shape[0]:
            raise InvalidValueError(f"ids outside 0..{self.shape[0] - 1}: {int(ids.min())}..{int(ids.max())}")
        rows, inverse = np.unique(ids, return_inverse=True)
        table = self.shards.rows(self._key, rows).numpy()
        if not np.all(np.isfinite(table)):
            raise InvalidValueError(f"{self._key} has NaN or infinite entries at the ids asked for")
        return table[inverse.reshape(ids.shape)]

    def __repr__(self) -> str:
        return f"EmbeddingRows({self.shape[0]}×{self.shape[1]}, read by rows from {self.shards.where[self._key]!r})"


def float64_bytes(directory: Any, layers: Optional[int] = None) -> int:
    r"""Bytes of the checkpoint's tensors in float64, from the safetensors headers alone; with ``layers=k`` only those
    an in-memory prefix load reads (not the later layers', not an LM head's)."""
    from safetensors import safe_open

    from .prefix import _expected

    path, n = Path(directory), 0
    if isinstance(layers, bool) or not isinstance(layers, (int, np.integer)):
        layers = None  # an invalid value is refused by the load itself
    for f in sorted(path.glob("*.safetensors")):
        try:
            with safe_open(str(f), framework="np") as st:
                for key in st.keys():
                    if layers is None or not _expected(key, int(layers)):
                        n += 8 * int(np.prod(st.get_slice(key).get_shape()))
        except Exception as exc:  # noqa: BLE001 - safetensors' own error types on a damaged file
            raise InvalidValueError(f"cannot read the safetensors header of {str(f)!r}: {exc}") from None
    return n


def _model_type(path: Path) -> Any:
    try:
        return json.loads((path / "config.json").read_text()).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None


def needs_out_of_core(directory: Any, layers: Optional[int] = None) -> bool:
    r"""Whether ``load(directory)`` must go out of core: the float64 weights (:func:`float64_bytes`, twice: the
    library's model and the transient of its load) exceed the memory available now.  A family that cannot go out
    of core is then refused with :class:`~symuat.errors.OutOfMemoryError`, before anything is allocated."""
    need = 2 * float64_bytes(directory, layers)
    avail, how = available_bytes()
    if need <= avail:
        return False
    family = _model_type(Path(directory))
    if family not in OUT_OF_CORE_FAMILIES:
        check_memory(need, f"loading {str(directory)!r} in float64", f"model type {family!r} cannot be loaded out of "
                     f"core (supported: {list(OUT_OF_CORE_FAMILIES)}); use layers= for a prefix")
    return True


def _probe_layer(layer: Any, block: BlockWeights, config: Any, emb: Any, act: str, i: int) -> None:
    """The library's layer module and ``block`` on one short random input (module docstring)."""
    from transformers.masking_utils import create_causal_mask

    from ..numeric import block_forward

    torch = require_torch()
    X = np.random.default_rng(1).standard_normal((4, block.width))
    with torch.no_grad(), library_float64():
        h = torch.from_numpy(X)[None]
        pos = torch.arange(4)[None]
        mask = create_causal_mask(config=config, inputs_embeds=h, attention_mask=None, past_key_values=None,
                                  position_ids=pos)
        out = layer(h, attention_mask=mask, position_ids=pos, position_embeddings=emb(h, pos), past_key_values=None,
                    use_cache=False)
    want = (out[0] if isinstance(out, tuple) else out)[0].detach().numpy()
    got = block_forward(block, "pre_ln", act, X)
    err = float(np.max(np.linalg.norm(want - got, axis=1) / np.maximum(np.linalg.norm(want, axis=1), 1e-300)))
    if not err <= PROBE_TOL:
        raise UnsupportedError(f"layer {i} of the module does not compute what its weights and config say (relative "
                               f"difference {err:.1e} on a probe input): a patched forward or attention function?")


def _layer_bytes(shards: Shards, i: int) -> int:
    prefix = f"{shards.prefix}layers.{i}."
    return shards.nbytes64([k for k in shards.shapes if k.startswith(prefix)])


def load_out_of_core(directory: Any, layers: Optional[int] = None) -> Tuple[StreamedStack, EmbeddingRows, Any]:
    r"""``(stack, embeddings, base)``: the streamed stack of the first ``layers`` layers (all by default; the final
    norm kept, as :func:`~symuat.models.prefix.load_prefix`), the word embeddings read by rows and the library's base
    model on the ``meta`` device (its ``config`` names the family).  Every layer's keys, shapes and dtypes are checked
    from the headers here; a layer's values are read when the form reaches it (module docstring)."""
    from transformers import AutoModel

    from .prefix import prefix_config

    torch = require_torch()
    path = Path(directory)
    family = _model_type(path)
    if family not in OUT_OF_CORE_FAMILIES:
        raise UnsupportedError(f"out_of_core: model type {family!r} of {str(path)!r} cannot be loaded out of core; "
                               f"supported: {list(OUT_OF_CORE_FAMILIES)}")
    config, total = prefix_config(path, total_layers(path) if layers is None else layers)
    depth = int(config.num_hidden_layers)
    check_config(config)
    shards = Shards(path)
    with torch.device("meta"):
        base = AutoModel.from_config(config, dtype=torch.float64)
    config = base.config  # with the attention implementation the library chose, as a loaded model's
    if type(base.embed_tokens) is not torch.nn.Embedding:
        raise UnsupportedError(f"the embedding module is a {type(base.embed_tokens).__name__}, not an nn.Embedding")
    M, V = int(config.hidden_size), int(config.vocab_size)
    emb_key, norm_key = f"{shards.prefix}embed_tokens.weight", f"{shards.prefix}norm.weight"
    for key, shape in ((emb_key, (V, M)), (norm_key, (M,))):
        if key not in shards.shapes:
            raise InvalidValueError(f"the checkpoint {str(path)!r} has no {key}")
        if shards.shape(key) != shape:
            raise ShapeError(f"{key}: checkpoint {shards.shape(key)}, config {shape}")
        shards.check_float(key)
    for i in range(depth):
        check_layer_keys(base.layers[i], shards, i)
    need = 2 * max(_layer_bytes(shards, i) for i in range(depth))
    check_memory(need, f"reading one layer of {str(path)!r} in float64 (and the next)", "no layer fits")

    H = int(config.num_attention_heads)
    d = getattr(config, "head_dim", None) or M // H
    act = activation_name(config.hidden_act, "config.hidden_act")
    emb = type(base.rotary_emb)(config=config)  # on the CPU, as from_pretrained builds it
    rot = rotary(SimpleNamespace(rotary_emb=emb), config, d)
    norm = type(base.norm)(M, eps=float(base.norm.variance_epsilon)).to(torch.float64)  # on the CPU
    with torch.no_grad():
        norm.weight.copy_(shards.stored(norm_key))
    final = rms_norm("norm", norm)
    probed: set = set()

    def build(i: int) -> BlockWeights:
        layer = base.layers[i]
        load_layer(layer, shards, i)
        try:
            n = f"layers.{i}"
            with sharing():  # the block's arrays are views of the layer's float64 tensors (freed with the block)
                block = BlockWeights(_llama_attention(f"{n}.self_attn", layer.self_attn, config, rot, family),
                                     _gated_mlp(f"{n}.mlp", layer.mlp, act, family),
                                     rms_norm(f"{n}.input_layernorm", layer.input_layernorm),
                                     rms_norm(f"{n}.post_attention_layernorm", layer.post_attention_layernorm))
            if i not in probed:
                _probe_layer(layer, block, config, emb, act, i)
                probed.add(i)
        finally:
            layer.to_empty(device="meta")  # the module lets go; the block's views keep the tensors alive
        return block

    F = int(config.intermediate_size)
    source = BlockSource(depth, M, H, F, True, build, rotary=rot, origin=path)
    return StreamedStack(source, "pre_ln", act, final_norm=final), EmbeddingRows(shards, emb_key), base


def total_layers(directory: Any) -> int:
    """``num_hidden_layers`` of the checkpoint's config.json."""
    try:
        n = json.loads((Path(directory) / "config.json").read_text()).get("num_hidden_layers")
    except (OSError, ValueError, AttributeError):
        n = None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidValueError(f"the config of {str(directory)!r} has no valid num_hidden_layers ({n!r})")
    return n


def lm_logits(model: Any, hidden: Any, chunk: int = LOGIT_CHUNK) -> np.ndarray:
    r"""Logits :math:`hU^{\mathsf T}` (``hidden``: (N, M), e.g. ``form.output``, the final norm applied) of an
    out-of-core Llama model, its LM head :math:`U` (``lm_head.weight``, or the embedding when the config ties them)
    read from the mapped shard ``chunk`` vocabulary rows at a time; returns (N, V) float64."""
    rows = model.word_embeddings
    if not isinstance(rows, EmbeddingRows):
        raise InvalidValueError("lm_logits is for an out-of-core model (load(..., out_of_core=True)); a model in "
                                "memory has model.head")
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise InvalidValueError(f"chunk={chunk!r}: expected a positive int (vocabulary rows at a time)")
    shards, config = rows.shards, model.library.config
    key = "lm_head.weight"
    if key not in shards.shapes:
        if not getattr(config, "tie_word_embeddings", False):
            raise UnsupportedError(f"the checkpoint {str(shards.path)!r} has no lm_head.weight and does not tie it to "
                                   "the embeddings: a base model has no LM head")
        key = rows._key
    V, M = rows.shape
    if shards.shape(key) != (V, M):
        raise ShapeError(f"{key}: checkpoint {shards.shape(key)}, expected ({V}, {M})")
    shards.check_float(key)
    h = np.asarray(hidden, dtype=np.float64)
    if h.ndim != 2 or h.shape[1] != M or not np.all(np.isfinite(h)):
        raise ShapeError(f"hidden of shape {h.shape}: expected finite (N, {M}) float64 states")
    from safetensors import safe_open

    torch = require_torch()
    check_memory(8 * (h.shape[0] * V + 2 * min(int(chunk), V) * M), f"computing {h.shape[0]} x {V} logits",
                 "pass fewer hidden states at a time, or a smaller chunk")  # the logits, a chunk read and widened
    out = np.empty((h.shape[0], V))
    with safe_open(shards.where[key], framework="pt") as f:
        sl = f.get_slice(key)
        for start in range(0, V, int(chunk)):
            U = sl[start:start + int(chunk)].to(torch.float64).numpy()
            if not np.all(np.isfinite(U)):
                raise InvalidValueError(f"{key} has NaN or infinite entries in rows {start}..{start + len(U) - 1}")
            out[:, start:start + len(U)] = h @ U.T
    return out
