r"""``load(dir, layers=k)``: the first :math:`k` layers of a checkpoint, for checking a prefix of a big model
(issue 30, item 1).

The library's base model (``AutoModel``, no LM head) is built from the checkpoint's config with
``num_hidden_layers = k`` (per-layer lists such as ``layer_types`` cut to their first :math:`k` entries) and loaded
in float64 from the safetensors files.  The tensors of layers :math:`\ge k` and of the LM head are expected to stay
unread; any other missing, unexpected or mismatched key is refused as by
:func:`~symuat.models.importer.load_pretrained`.  The final norm is kept: the prefix is *the library's own*
:math:`k`-layer model, so ``form.output`` is its ``last_hidden_state`` (the final norm applied after layer
:math:`k`) and every library comparison (``symuat model --layers K``, :func:`~symuat.models.library_outputs`) holds
unchanged.  The residual stream after layer :math:`k` is the form's box :math:`k` (``duat_form(..., on_box=...)``),
which :func:`~symuat.models.layer_reference` checks.  There is no LM head (logits after :math:`k` of :math:`L`
layers are no model's output, and its :math:`V\times M` float64 table is the largest tensor of a big model).
"""

from __future__ import annotations

import json
import numbers
import re
from typing import Any, Tuple

from ..errors import InvalidValueError
from ..numeric import TransformerStack
from ..numeric.memory import format_bytes, out_of_memory
from ._torch import require_torch

__all__ = ["load_prefix", "prefix_config"]

#: a key of decoder layer ``n`` (``layers.n.``, GPT-2's ``h.n.``, BERT's ``layer.n.``), with any prefix
_LAYER_KEY = re.compile(r"(?:^|\.)(?:layers|h|layer)\.(\d+)\.")
#: keys of an LM head, which the base model does not have
_HEAD_KEY = re.compile(r"^(?:lm_head|embed_out|cls|score|classifier)\.")


def prefix_config(directory: Any, layers: Any) -> Tuple[Any, int]:
    r"""``(config, total)``: the checkpoint's config cut to its first ``layers`` layers, and its full depth."""
    from transformers import AutoConfig

    from .importer import _check_checkpoint

    path = _check_checkpoint(directory)
    config = AutoConfig.from_pretrained(str(path), local_files_only=True)
    total = getattr(config, "num_hidden_layers", None)
    if not isinstance(total, int) or total < 1:
        raise InvalidValueError(f"the config of {str(path)!r} has no valid num_hidden_layers ({total!r})")
    if isinstance(layers, bool) or not isinstance(layers, numbers.Integral) or not 1 <= layers <= total:
        raise InvalidValueError(f"layers={layers!r}: expected an int in 1..{total} (the checkpoint's depth)")
    layers = int(layers)
    config.num_hidden_layers = layers
    for name in ("layer_types",):  # per-layer lists the config validates against num_hidden_layers
        value = getattr(config, name, None)
        if isinstance(value, (list, tuple)) and len(value) == total:
            setattr(config, name, type(value)(value[:layers]))
    return config, total


def _expected(key: Any, layers: int) -> bool:
    """A key the prefix leaves unread on purpose: a later layer's or the LM head's."""
    if not isinstance(key, str):
        return False
    m = _LAYER_KEY.search(key)
    return bool(_HEAD_KEY.match(key)) or (m is not None and int(m.group(1)) >= layers)


def load_prefix(directory: Any, layers: int) -> Tuple[Any, TransformerStack]:
    r"""``(library, stack)`` of the first ``layers`` layers (module docstring)."""
    from pathlib import Path

    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    from .importer import EAGER_EXPERTS, _check_loading_info, _parameter_count, from_module

    torch = require_torch()
    config, _ = prefix_config(directory, layers)
    layers = int(layers)
    path = Path(directory)
    family = json.loads((path / "config.json").read_text()).get("model_type")
    verbosity = hf_logging.get_verbosity()
    try:
        extra = {"experts_implementation": "eager"} if family in EAGER_EXPERTS else {}
        # the later layers' weights are unexpected by design: symuat checks the loading info itself, below (a key
        # that the prefix does not explain is refused), so the library's report of them is not printed
        hf_logging.set_verbosity_error()
        model, info = AutoModel.from_pretrained(str(path), config=config, local_files_only=True, dtype=torch.float64,
                                                use_safetensors=True, output_loading_info=True,
                                                ignore_mismatched_sizes=True, **extra)
    except MemoryError as exc:
        size = sum(f.stat().st_size for f in path.glob("*.safetensors"))
        raise out_of_memory(exc, f"loading {layers} layers of {str(path)!r} in float64 (weights "
                            f"{format_bytes(size)} on disk)", 8 * _parameter_count(path)) from None
    except Exception as exc:  # the loader's many failure types (OSError, SafetensorError, ...) on a bad checkpoint
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidValueError(f"cannot load the checkpoint {str(path)!r}: {first}") from None
    finally:
        hf_logging.set_verbosity(verbosity)
    info = dict(info)
    info["unexpected_keys"] = [k for k in (info.get("unexpected_keys") or ()) if not _expected(k, layers)]
    _check_loading_info(path, info)
    model.eval()
    return model, from_module(model)
