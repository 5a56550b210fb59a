r"""``from_module`` and ``from_pretrained``: a PyTorch / transformers model → :class:`~symuat.numeric.TransformerStack`.

The stack's input is what the library calls ``inputs_embeds`` (:math:`N\times M`, one sequence); position
embeddings, input norms and final norms the model applies itself belong to the stack, so
``symuat.numeric.duat_form(stack, X).output`` is the library's ``last_hidden_state``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, Tuple

from ..errors import InvalidValueError, UnsupportedError
from ..numeric import TransformerStack
from ._torch import require_torch
from .hf_bert import bert
from .hf_common import check_config
from .hf_decoders import DECODERS

__all__ = ["FAMILIES", "from_module", "from_pretrained", "load_pretrained"]

#: ``config.model_type`` → importer of the transformers base model.
FAMILIES: Dict[str, Callable[[Any, Any], TransformerStack]] = {**DECODERS, "bert": bert}


def _hf_stack(model: Any) -> TransformerStack:
    config = model.config
    family = getattr(config, "model_type", None)
    if family not in FAMILIES:
        raise UnsupportedError(f"unsupported model type {family!r} ({type(model).__name__}); supported: "
                               f"{sorted(FAMILIES)} and torch.nn.TransformerEncoder(Layer)")
    check_config(config)
    base = getattr(model, "base_model", model)
    return FAMILIES[family](base, config)


def from_module(model: Any, causal: bool = False) -> TransformerStack:
    r"""The :class:`~symuat.numeric.TransformerStack` of a torch or transformers model.

    Parameters
    ----------
    model
        ``torch.nn.TransformerEncoder`` / ``TransformerEncoderLayer``, or a transformers model of a
        family in :data:`FAMILIES` (base model or one with a head, e.g. ``GPT2LMHeadModel``).
    causal
        Only for ``torch.nn`` encoders, whose causality is an argument of the forward call
        (``is_causal`` / a causal ``mask``); transformers models carry their own.
    """
    torch = require_torch()
    if isinstance(model, (torch.nn.TransformerEncoder, torch.nn.TransformerEncoderLayer)):
        from .torch_encoder import from_torch_encoder

        return from_torch_encoder(model, causal=causal)
    if causal:
        raise InvalidValueError("causal= applies to torch.nn encoders only; a transformers model knows its own mask")
    if hasattr(model, "config") and isinstance(model, torch.nn.Module):
        return _hf_stack(model)
    raise UnsupportedError(f"unsupported module {type(model).__name__}: expected torch.nn.TransformerEncoder(Layer) "
                           f"or a transformers model of type {sorted(FAMILIES)}")


def _check_checkpoint(directory: Any) -> Path:
    path = Path(directory)
    if not path.is_dir():
        raise InvalidValueError(f"{str(path)!r} is not a directory (expected a save_pretrained checkpoint)")
    config = path / "config.json"
    if not config.is_file():
        raise InvalidValueError(f"{str(path)!r} is not a checkpoint: no config.json")
    weights = list(path.glob("*.safetensors")) + list(path.glob("*.safetensors.index.json"))
    if not weights:
        raise InvalidValueError(f"{str(path)!r} is not a checkpoint: no *.safetensors weights")
    try:
        model_type = json.loads(config.read_text()).get("model_type")
    except (ValueError, AttributeError) as exc:
        raise InvalidValueError(f"{str(config)!r} is not valid JSON: {exc}") from None
    if model_type not in FAMILIES:
        raise UnsupportedError(f"unsupported model type {model_type!r} in {str(config)!r}; supported: "
                               f"{sorted(FAMILIES)}")
    return path


def load_pretrained(directory: Any) -> Tuple[Any, TransformerStack]:
    r"""``(model, stack)``: the library's float64 model (eval mode, local files only) and its stack."""
    path = _check_checkpoint(directory)
    torch = require_torch()
    from transformers import AutoModel

    try:
        model = AutoModel.from_pretrained(str(path), local_files_only=True, dtype=torch.float64)
    except Exception as exc:  # the loader's many failure types (OSError, SafetensorError, ...) on a bad checkpoint
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidValueError(f"cannot load the checkpoint {str(path)!r}: {first}") from None
    model.eval()
    return model, from_module(model)


def from_pretrained(directory: Any) -> TransformerStack:
    r"""The stack of a local ``save_pretrained`` directory (safetensors; never touches the network)."""
    return load_pretrained(directory)[1]
