r"""``from_module`` and ``from_pretrained``: a PyTorch / transformers model → :class:`~symuat.numeric.TransformerStack`.

The stack's input is what the library calls ``inputs_embeds`` (:math:`N\times M`, one sequence); position
embeddings, input norms and final norms the model applies itself belong to the stack, so
``symuat.numeric.duat_form(stack, X).output`` is the library's ``last_hidden_state``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Dict, Tuple

import numpy as np

from ..errors import InvalidValueError, UnsupportedError
from ..numeric import TransformerStack
from ..numeric.memory import format_bytes, out_of_memory
from ._torch import library_base, require_torch
from .guards import check_float64, check_module
from .hf_alibi import ALIBI
from .hf_bert import bert, roberta
from .hf_common import MAX_POSITIONS, check_config, static_rope_positions
from .hf_decoders import DECODERS
from .hf_decoders_extra import EXTRA_DECODERS
from .hf_deepseek import DEEPSEEK
from .hf_distilbert import distilbert
from .hf_gemma import GEMMA
from .hf_gpt_oss import GPT_OSS
from .hf_granite import GRANITE
from .hf_layernorm import LAYERNORM_DECODERS
from .hf_llama4 import LLAMA4, llama4_positions
from .hf_llama_kin import LLAMA_KIN
from .hf_modernbert import MODERNBERT
from .hf_moe import MOE
from .hf_parallel import PARALLEL
from .hf_phimoe import PHIMOE
from .hf_t5 import T5
from .precision import library_float64

#: Families whose checkpoints are loaded with the eager experts (the fused kernels have no float64).
EAGER_EXPERTS = (*MOE, "granitemoe", "granitemoeshared", "phimoe", "gpt_oss", "deepseek_v2", "deepseek_v3")

__all__ = ["FAMILIES", "from_module", "from_pretrained", "load_pretrained", "load_library", "checkpoint_shape",
           "probe_model", "probe_torch_encoder"]

#: ``config.model_type`` → importer of the transformers base model.
FAMILIES: Dict[str, Callable[[Any, Any], TransformerStack]] = {
    **DECODERS, **LAYERNORM_DECODERS, **PARALLEL, **GEMMA, **MOE,
    "bert": bert, "roberta": roberta, "distilbert": distilbert,
    **GRANITE, **EXTRA_DECODERS, **ALIBI, **PHIMOE, **LLAMA_KIN, **GPT_OSS, **DEEPSEEK, **MODERNBERT, **T5,
    **LLAMA4,
}


def _hf_stack(model: Any) -> TransformerStack:
    config = model.config
    family = getattr(config, "model_type", None)
    if family not in FAMILIES:
        raise UnsupportedError(f"unsupported model type {family!r} ({type(model).__name__}); supported: "
                               f"{sorted(FAMILIES)} and torch.nn.TransformerEncoder(Layer)")
    check_config(config)
    check_module(model)
    check_float64(model)  # the norm and activation probes run the modules in float64
    base = library_base(model)
    stack = FAMILIES[family](base, config)
    probe_model(base, stack)
    return stack


def probe_model(base: Any, stack: TransformerStack, tokens: int = 4, tol: float = 1e-10) -> None:
    r"""Run the library and the stack on one short random input; a layer that differs raises
    :class:`UnsupportedError` naming it (the module computes something its weights and config do not say)."""
    import numpy as np

    from ..numeric import hidden_states

    torch = require_torch()
    n = min(tokens, 8 if stack.position_embeddings is None else stack.position_embeddings.shape[0])
    X = np.random.default_rng(1).standard_normal((n, stack.width))
    with torch.no_grad(), library_float64():
        out = base(inputs_embeds=torch.from_numpy(X)[None], output_hidden_states=True)
    want = [h[0].detach().double().numpy() for h in out.hidden_states][1:]
    got = hidden_states(stack, X)[1:]
    for i, (w, g) in enumerate(zip(want, got), start=1):
        err = float(np.max(np.linalg.norm(w - g, axis=1) / np.maximum(np.linalg.norm(w, axis=1), 1e-300)))
        if not err <= tol:
            raise UnsupportedError(f"layer {i} of the module does not compute what its weights and config say "
                                   f"(relative difference {err:.1e} on a probe input): a patched forward, "
                                   "attention function or submodule?")


def probe_torch_encoder(module: Any, stack: TransformerStack, causal: bool, tokens: int = 4,
                        tol: float = 1e-10) -> None:
    r"""Run a ``torch.nn`` encoder (layer) and its stack on one probe input; a difference raises
    :class:`UnsupportedError` (the module computes something its weights do not say)."""
    from ..numeric import stack_output

    torch = require_torch()
    X = np.random.default_rng(1).standard_normal((tokens, stack.width))
    layer = module if isinstance(module, torch.nn.TransformerEncoderLayer) else module.layers[0]
    batch_first = bool(getattr(getattr(layer, "self_attn", None), "batch_first", False))
    dtype = next(module.parameters()).dtype
    x = torch.from_numpy(X).to(dtype)
    x = x[None] if batch_first else x[:, None]
    kw = {}
    if causal:
        kw = {"is_causal": True, ("src_mask" if module is layer else "mask"):
              torch.nn.Transformer.generate_square_subsequent_mask(tokens, dtype=dtype)}
    try:
        with torch.no_grad():
            out = module(x, **kw)
    except Exception as exc:  # noqa: BLE001 - whatever the module's own forward raises on a plain input
        raise UnsupportedError(f"the module {type(module).__name__} fails on a probe input: "
                               f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    want = (out[0] if batch_first else out[:, 0]).detach().double().numpy()
    got = stack_output(stack, X)
    err = float(np.max(np.linalg.norm(want - got, axis=1) / np.maximum(np.linalg.norm(want, axis=1), 1e-300)))
    if dtype != torch.float64:
        tol = max(tol, 1e-4)  # a float32 module is compared at its own precision
    if not err <= tol:
        raise UnsupportedError(f"the module {type(module).__name__} does not compute what its weights and options say "
                               f"(relative difference {err:.1e} on a probe input): a patched forward or submodule?")


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

        check_module(model)
        stack = from_torch_encoder(model, causal=causal)
        probe_torch_encoder(model, stack, causal)
        return stack
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


def checkpoint_shape(directory: Any) -> Tuple[int, int]:
    r"""``(width, max_tokens)`` of a checkpoint from its config alone (no weights are read): the hidden size and the
    longest input the imported stack covers (positions, :data:`MAX_POSITIONS`)."""
    path = _check_checkpoint(directory)
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - the loader's many failure types on a malformed config
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidValueError(f"cannot read the config of {str(path)!r}: {first}") from None
    width = getattr(config, "hidden_size", None)
    if not isinstance(width, int) or width < 1:
        raise InvalidValueError(f"the config of {str(path)!r} has no valid hidden_size ({width!r})")
    limit = int(min(MAX_POSITIONS, getattr(config, "max_position_embeddings", None) or MAX_POSITIONS))
    rope = getattr(config, "rope_parameters", None)
    rope_type = rope.get("rope_type") if isinstance(rope, dict) else None
    if rope_type == "longrope" or (isinstance(rope_type, str) and "dynamic" in rope_type):
        emb = SimpleNamespace(original_max_seq_len=getattr(config, "max_position_embeddings", None))
        limit = min(limit, static_rope_positions(emb, config, rope_type))
    if getattr(config, "model_type", None) == "roberta":  # its positions start after the padding row
        limit -= int(getattr(config, "pad_token_id", None) or 0) + 1
    if getattr(config, "model_type", None) in ("llama4_text", "llama4"):  # the chunk size and floor_scale - 1
        limit = min(limit, llama4_positions(getattr(config, "text_config", None) or config))
    return width, limit


def _model_class(config: dict) -> Any:
    """The class named by ``config["architectures"]`` (keeps an LM head), else ``AutoModel``."""
    import transformers

    for arch in config.get("architectures") or ():
        cls = getattr(transformers, arch, None) if isinstance(arch, str) else None
        if isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel):
            return cls
    return transformers.AutoModel


def _parameter_count(path: Path) -> int:
    """Number of tensor entries in the checkpoint's safetensors files (from their headers)."""
    from safetensors import safe_open

    n = 0
    for f in sorted(path.glob("*.safetensors")):
        with safe_open(str(f), framework="np") as st:
            for key in st.keys():
                shape = st.get_slice(key).get_shape()
                n += int(np.prod(shape)) if shape else 1
    return n


def _describe(key: Any) -> str:
    if isinstance(key, tuple) and len(key) == 3:  # mismatched: (name, checkpoint shape, model shape)
        return f"{key[0]}: checkpoint {tuple(key[1])}, model {tuple(key[2])}"
    return str(key)


def _check_loading_info(path: Path, info: dict) -> None:
    problems = []
    for key, what in (("missing_keys", "missing"), ("unexpected_keys", "unexpected"),
                      ("mismatched_keys", "mismatched"), ("error_msgs", "load errors")):
        items = sorted(_describe(k) for k in (info.get(key) or ()))
        if items:
            shown = ", ".join(items[:3]) + (f" and {len(items) - 3} more" if len(items) > 3 else "")
            problems.append(f"{len(items)} {what} ({shown})")
    if problems:
        raise InvalidValueError(f"the checkpoint {str(path)!r} does not match its config: {'; '.join(problems)} "
                                "weights; symuat never uses randomly initialised weights")


def load_pretrained(directory: Any) -> Tuple[Any, TransformerStack]:
    r"""``(model, stack)``: the library's float64 model (eval mode, local safetensors only, :func:`load_library`)
    and its stack."""
    model = load_library(directory)
    return model, from_module(model)


def load_library(directory: Any) -> Any:
    r"""The library's float64 model of a checkpoint directory (eval mode, local safetensors only).

    The model class is the checkpoint's ``architectures[0]`` when transformers has it (so an LM head is kept),
    else ``AutoModel``.  Missing, unexpected or mismatched weights raise :class:`InvalidValueError`: a
    weight the library would initialise at random is never used.
    """
    path = _check_checkpoint(directory)
    torch = require_torch()
    config = json.loads((path / "config.json").read_text())
    cls = _model_class(config)
    try:
        extra = {"experts_implementation": "eager"} if config.get("model_type") in EAGER_EXPERTS else {}
        model, info = cls.from_pretrained(str(path), local_files_only=True, dtype=torch.float64, use_safetensors=True,
                                          output_loading_info=True, ignore_mismatched_sizes=True, **extra)
    except MemoryError as exc:
        size = sum(f.stat().st_size for f in path.glob("*.safetensors"))
        raise out_of_memory(exc, f"loading the checkpoint {str(path)!r} in float64 (weights {format_bytes(size)} on "
                            "disk)", 8 * _parameter_count(path)) from None
    except Exception as exc:  # the loader's many failure types (OSError, SafetensorError, ...) on a bad checkpoint
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidValueError(f"cannot load the checkpoint {str(path)!r}: {first}") from None
    _check_loading_info(path, info)
    model.eval()
    with torch.no_grad():  # weights the library keeps in float32 whatever the dtype asked for (DeepSeek-V2's router
        for p in model.parameters():  # from transformers 5.24): widened, which is exact (a float32 is a float64)
            if p.is_floating_point() and p.dtype != torch.float64:
                p.data = p.data.to(torch.float64)
    return model


def from_pretrained(directory: Any) -> TransformerStack:
    r"""The stack of a local ``save_pretrained`` directory (safetensors; never touches the network)."""
    return load_pretrained(directory)[1]
