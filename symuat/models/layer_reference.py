r"""The per-layer library reference for models too big for the library's whole float64 forward (issue 30, item 2).

:func:`layer_reference` runs the library's *own* decoder-layer modules one at a time in float64, chained:

1. the base model is built on the ``meta`` device (``AutoModel.from_config``: no memory; the library's own
   attention implementation is chosen as for a loaded model);
2. the input :math:`X = E[t]` is the library's ``embed_tokens`` output: the module must be a plain
   ``torch.nn.Embedding`` (whose forward is the row look-up ``F.embedding``), and only the rows of the prompt's
   ids are read from the memory-mapped safetensors file, so the :math:`V\times M` table is never widened;
3. the rotary tables are the output of the library's ``rotary_emb`` module, built on the CPU exactly as
   ``from_pretrained`` builds it (its ``inv_freq`` is bit-identical to a loaded model's), at positions
   :math:`0..N-1`;
4. the mask of layer :math:`i` is what the family's ``forward`` passes it, made by the public
   ``transformers.masking_utils`` functions: ``create_causal_mask`` (Llama; Mistral without a sliding window; a
   ``full_attention`` layer of Qwen2/Qwen3/GPT-OSS) or ``create_sliding_window_causal_mask`` (Mistral with
   ``sliding_window``; a ``sliding_attention`` layer) or ``create_chunked_causal_mask`` (Llama 4's
   ``chunked_attention`` layers); a mixture of experts runs its eager experts (float64);
5. layer :math:`i` (``base.layers[i]``) is materialised with ``to_empty(device="cpu")``, its tensors read with
   ``safetensors.safe_open`` at their stored dtype (bf16 included) and widened to float64, every key checked
   (missing, unexpected, wrong shape, non-finite: :class:`~symuat.errors.InvalidValueError`), run under
   :func:`~symuat.models.library_float64` on the previous layer's output, and freed (``to_empty(device="meta")``)
   before the next one.

The peak memory is one layer in float64 plus :math:`O(N\cdot M)` per layer output.  Supported families: those
whose base model is ``embed_tokens``, ``layers``, ``rotary_emb``, ``norm`` and whose ``forward`` is the chain
above (:data:`REFERENCE_FAMILIES`); any other is refused with one :class:`~symuat.errors.UnsupportedError`,
with the reason for the families symuat reads but this chain does not run (:data:`NOT_REFERENCED`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from ..errors import InvalidValueError, ShapeError, UnsupportedError
from ._torch import require_torch
from .precision import library_float64
from .shards import Shards, load_layer

__all__ = ["REFERENCE_FAMILIES", "NOT_REFERENCED", "LayerReference", "layer_reference"]


def _full(config: Any, i: int) -> str:
    return "full_attention"


def _mistral(config: Any, i: int) -> str:
    return "full_attention" if getattr(config, "sliding_window", None) is None else "sliding_attention"


def _typed(config: Any, i: int) -> str:
    return str(config.layer_types[i])


#: ``model_type`` → the attention type its ``forward`` gives layer ``i`` (what mask it passes).
REFERENCE_FAMILIES: Dict[str, Callable[[Any, int], str]] = {
    "llama": _full, "mistral": _mistral, "qwen2": _typed, "qwen3": _typed,
    "gpt_oss": _typed, "llama4_text": _typed,
}

#: Families symuat reads whose layers this chain does not run, and why (named in the refusal).
NOT_REFERENCED: Dict[str, str] = {
    "deepseek_v2": "its checkpoints store the routed experts one by one (experts.<e>.gate_proj, ...) while the "
                   "library's layer holds them fused (experts.gate_up_proj): the per-layer loader reads the tensors "
                   "as stored and does not re-fuse them",
    "deepseek_v3": "its checkpoints store the routed experts one by one (experts.<e>.gate_proj, ...) while the "
                   "library's layer holds them fused (experts.gate_up_proj): the per-layer loader reads the tensors "
                   "as stored and does not re-fuse them",
    "modernbert": "its base model is embeddings (with a LayerNorm), layers with a rotary module per layer type and "
                  "bidirectional masks, final_norm: not the embed_tokens/layers/rotary_emb/norm chain",
    "t5": "an encoder (or encoder–decoder) of T5Stack blocks with a relative position bias passed between layers: not "
          "the embed_tokens/layers/rotary_emb/norm chain",
}
NOT_REFERENCED.update(mt5=NOT_REFERENCED["t5"], umt5=NOT_REFERENCED["t5"])


@dataclass(frozen=True)
class LayerReference:
    r"""The library's layer-by-layer outputs for one row of token ids.

    Attributes
    ----------
    inputs_embeds : (N, M) array
        :math:`X = E[t]`, the library's embedding output (the DUAT form's :math:`X_0`).
    outputs : tuple of (N, M) arrays
        ``outputs[i]`` is the output of decoder layer ``i`` (0-based), before any final norm.
    """

    inputs_embeds: np.ndarray
    outputs: Tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        shapes = {a.shape for a in (self.inputs_embeds, *self.outputs)}
        if len(shapes) != 1 or self.inputs_embeds.ndim != 2:
            raise ShapeError(f"layer outputs of shapes {sorted(shapes)}: expected one (N, M) shape")


def _config(path: Path, layers: Optional[int]) -> Any:
    from transformers import AutoConfig

    model_type = json.loads((path / "config.json").read_text()).get("model_type") \
        if (path / "config.json").is_file() else None
    if model_type not in REFERENCE_FAMILIES:
        why = f" ({NOT_REFERENCED[model_type]})" if model_type in NOT_REFERENCED else ""
        raise UnsupportedError(f"layer_reference: model type {model_type!r} of {str(path)!r} is not supported{why}; "
                               f"supported: {sorted(REFERENCE_FAMILIES)}")
    config = AutoConfig.from_pretrained(str(path), local_files_only=True)
    if config.model_type != model_type:  # transformers read the config as another family's
        raise UnsupportedError(f"layer_reference: the config of {str(path)!r} says {model_type!r} but transformers "
                               f"reads it as {config.model_type!r}")
    total = int(config.num_hidden_layers)
    if layers is None:
        layers = total
    if isinstance(layers, bool) or not isinstance(layers, (int, np.integer)) or not 1 <= layers <= total:
        raise InvalidValueError(f"layers={layers!r}: expected an int in 1..{total} (the checkpoint's depth)")
    return config, int(layers)


def layer_reference(directory: Any, input_ids: Any, layers: Optional[int] = None) -> LayerReference:
    r"""The library's decoder layers run one at a time in float64 on one row of ``input_ids`` (module docstring).

    Parameters
    ----------
    directory
        A local ``save_pretrained`` checkpoint of a family in :data:`REFERENCE_FAMILIES` (safetensors).
    input_ids : 1-D sequence of ints
    layers : int, optional
        Run only the first ``layers`` decoder layers (default: all of them).

    Returns
    -------
    LayerReference
        The embedding output and every layer's output; each is what the library's whole float64 forward computes
        at that layer (``tests/test_layer_reference.py`` checks it within 1e-12).

    >>> ref = layer_reference("path/to/llama", [1, 2, 3], layers=2)   # doctest: +SKIP
    >>> len(ref.outputs), ref.outputs[0].shape                          # doctest: +SKIP
    (2, (3, 4096))
    """
    torch = require_torch()
    path = Path(directory)
    if not path.is_dir():
        raise InvalidValueError(f"{str(path)!r} is not a directory (expected a save_pretrained checkpoint)")
    config, depth = _config(path, layers)
    ids = np.asarray(input_ids)
    if ids.ndim != 1 or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer):
        raise InvalidValueError(f"input_ids of shape {ids.shape} and dtype {ids.dtype}: expected a non-empty 1-D "
                                "row of ints")
    V = int(config.vocab_size)
    if ids.min() < 0 or ids.max() >= V:
        raise InvalidValueError(f"input_ids outside 0..{V - 1} (vocab_size): {int(ids.min())}..{int(ids.max())}")
    weights = Shards(path)
    from transformers import AutoModel
    from transformers.masking_utils import (
        create_causal_mask,
        create_chunked_causal_mask,
        create_sliding_window_causal_mask,
    )

    from .importer import EAGER_EXPERTS

    extra = {"experts_implementation": "eager"} if config.model_type in EAGER_EXPERTS else {}  # float64 experts
    with torch.device("meta"):
        base = AutoModel.from_config(config, dtype=torch.float64, **extra)
    if not all(hasattr(base, a) for a in ("embed_tokens", "layers", "rotary_emb", "norm")):
        raise UnsupportedError(f"{type(base).__name__} is not embed_tokens, layers, rotary_emb, norm")
    if type(base.embed_tokens) is not torch.nn.Embedding:
        raise UnsupportedError(f"the embedding module is a {type(base.embed_tokens).__name__}, not an nn.Embedding")
    emb_key = f"{weights.prefix}embed_tokens.weight"
    if weights.shape(emb_key) != (V, int(config.hidden_size)):
        raise InvalidValueError(f"{emb_key}: checkpoint {weights.shape(emb_key)}, config "
                                f"({V}, {config.hidden_size})")
    rows, inverse = np.unique(ids, return_inverse=True)
    table = weights.rows(emb_key, rows)
    if not bool(torch.isfinite(table).all()):
        raise InvalidValueError(f"{emb_key} has NaN or infinite entries at the prompt's ids")
    config = base.config  # with the attention implementation the library chose, as a loaded model's
    rotary = type(base.rotary_emb)(config=config)  # on the CPU, as from_pretrained builds it
    kind = REFERENCE_FAMILIES[config.model_type]
    outputs = []
    with torch.no_grad(), library_float64():
        h = torch.nn.functional.embedding(torch.from_numpy(inverse.reshape(1, -1)), table)  # = nn.Embedding(ids)
        X = h[0].numpy().copy()
        position_ids = torch.arange(ids.size)[None]
        position_embeddings = rotary(h, position_ids)
        masks = {}
        for i in range(depth):
            attention = kind(config, i)
            if attention not in masks:
                make = {"full_attention": create_causal_mask, "sliding_attention": create_sliding_window_causal_mask,
                        "chunked_attention": create_chunked_causal_mask}.get(attention)
                if make is None:
                    raise UnsupportedError(f"layer {i} has attention type {attention!r}")
                if attention == "chunked_attention" and getattr(config, "attention_chunk_size", None) is None:
                    raise UnsupportedError(f"layer {i} is a chunked_attention layer but the config has no "
                                           "attention_chunk_size (the chunk the library's mask would need)")
                if attention == "sliding_attention" and getattr(config, "sliding_window", None) is None:
                    raise InvalidValueError(f"layer {i} is a sliding_attention layer but the config's "
                                            "sliding_window is None")
                masks[attention] = make(config=config, inputs_embeds=h, attention_mask=None, past_key_values=None,
                                        position_ids=position_ids)
            layer = base.layers[i]
            load_layer(layer, weights, i)
            h = layer(h, attention_mask=masks[attention], position_ids=position_ids,
                      position_embeddings=position_embeddings, past_key_values=None, use_cache=False)
            layer.to_empty(device="meta")  # frees the layer's float64 tensors before the next one
            if isinstance(h, tuple):  # older releases return (hidden_states, ...)
                h = h[0]
            outputs.append(h[0].detach().numpy().copy())
    return LayerReference(X, tuple(outputs))
