r"""Memory of one sweep worker, estimated from the checkpoint before any worker starts.

A worker holds the model once in float64 (the stack shares the library's tensors) and, for its longest prompt of
:math:`N` tokens, the DUAT form, the library's forward pass with its hidden states and logits, and the
attribution's :math:`(P, N, M)` values (:math:`P` parts of ``by``), all float64:

.. math::
    8\,\bigl(W + 2HN^2 + 4NF + (2L + 8)NM + NV + (P + 1)NM\bigr) + \text{base},

and, for a patching sweep, twice the form and library terms (the clean and the corrupted run) and the clean
run's recorded sites, :math:`3(L+1)NM`, instead of the attribution's values;
with :math:`W` the checkpoint's parameter count (read from the safetensors headers), :math:`M, L, H, F, V` width,
depth, heads, FFN width and vocabulary from ``config.json``, and a fixed base for Python, torch and transformers.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from ..errors import InvalidValueError

__all__ = ["worker_bytes", "BASE_BYTES"]

#: a worker's interpreter with numpy, torch and transformers imported (measured: about 0.5 GiB)
BASE_BYTES = 768 * 2 ** 20


def _parameters(directory: Path) -> int:
    """Parameter count of the checkpoint's safetensors files (their headers only)."""
    total = 0
    for f in sorted(directory.glob("*.safetensors")):
        with f.open("rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(n))
        for name, info in header.items():
            if name != "__metadata__":
                count = 1
                for d in info["shape"]:
                    count *= int(d)
                total += count
    return total


def _config(directory: Path) -> dict:
    try:
        cfg = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidValueError(f"cannot read {str(directory / 'config.json')!r}: {exc}") from None
    for key in ("text_config",):  # multimodal wrappers keep the language model's shape inside
        if isinstance(cfg.get(key), dict):
            cfg = {**cfg, **cfg[key]}
    return cfg


def _first(cfg: dict, *names: str, default: Any = None) -> int:
    for n in names:
        if isinstance(cfg.get(n), int):
            return int(cfg[n])
    if default is None:
        raise InvalidValueError(f"config.json names none of {names}: cannot estimate the sweep's memory")
    return int(default)


def worker_bytes(directory: Any, tokens: int, by: str, patch: bool = False) -> int:
    """Estimated peak bytes of one worker at ``tokens`` tokens attributing by ``by``, or patching (module
    docstring)."""
    directory = Path(directory)
    cfg = _config(directory)
    M = _first(cfg, "hidden_size", "n_embd", "d_model")
    L = _first(cfg, "num_hidden_layers", "n_layer", "num_layers")
    H = _first(cfg, "num_attention_heads", "n_head", "num_heads")
    F = _first(cfg, "intermediate_size", "n_inner", "ffn_dim", "hidden_dim", default=4 * M)
    V = _first(cfg, "vocab_size", default=0)
    F *= max(1, _first(cfg, "num_experts_per_tok", default=1))
    N = int(tokens)
    parts = {"term": L + 2, "layer": L + 1, "head": 1 + L * (H + 1), "neuron": 1 + L * (F + 1), "source": N}[by]
    W = _parameters(directory)
    if patch:
        runs = 2 * (2 * H * N * N + 4 * N * F + (2 * L + 8) * N * M + N * V)
        return 8 * (W + runs + 3 * (L + 1) * N * M) + BASE_BYTES
    return 8 * (W + 2 * H * N * N + 4 * N * F + (2 * L + 8) * N * M + N * V + (parts + 1) * N * M) + BASE_BYTES
