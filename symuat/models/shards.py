r"""A checkpoint's safetensors shards read lazily: tensors by name, one at a time, at their stored dtype.

:class:`Shards` reads only the headers when it is made (names, shapes, dtypes, which file holds which tensor; the
index ``model.safetensors.index.json`` when there is one, every ``*.safetensors`` file otherwise).  A tensor is
read when asked, from a file mapped only while it is read, so the pages of tensors already used do not stay in
the process.  :func:`load_layer` materialises one decoder-layer module of the library (built on the ``meta``
device) on the CPU in float64 and copies that layer's tensors in, each widened from its stored dtype, which is
exact for bf16, f16 and f32 (every such number is a float64).  Used by :func:`~symuat.models.layer_reference` and by
the out-of-core loader (:mod:`symuat.models.out_of_core`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Tuple

import numpy as np

from ..errors import InvalidValueError
from ._torch import require_torch

__all__ = ["Shards", "load_layer", "FLOAT_DTYPES"]

#: the stored dtypes widened to float64 (exactly); any other dtype of a weight is refused
FLOAT_DTYPES = ("BF16", "F16", "F32", "F64")


def _files(path: Path) -> list:
    index = path / "model.safetensors.index.json"
    if not index.is_file():
        return sorted(str(f) for f in path.glob("*.safetensors"))
    try:
        names = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidValueError(f"{str(index)!r} is not a safetensors index (a JSON object with a 'weight_map'): "
                                f"{exc}") from None
    missing = [n for n in names if not (path / n).is_file()]
    if missing:
        raise InvalidValueError(f"the index of {str(path)!r} names {len(missing)} shard(s) that are not there: "
                                f"{missing[:3]}")
    return [str(path / n) for n in names]


class Shards:
    """The tensors of the checkpoint at ``path``, read on demand (module docstring)."""

    def __init__(self, path: Any):
        from safetensors import safe_open

        path = Path(path)
        files = _files(path)
        if not files:
            raise InvalidValueError(f"{str(path)!r} is not a checkpoint: no *.safetensors weights")
        self.path = path
        self.where: Dict[str, str] = {}
        self.shapes: Dict[str, Tuple[int, ...]] = {}
        self.dtypes: Dict[str, str] = {}
        for f in files:
            try:
                with safe_open(f, framework="pt") as h:
                    for key in h.keys():
                        sl = h.get_slice(key)
                        self.where[key], self.shapes[key] = f, tuple(sl.get_shape())
                        self.dtypes[key] = str(sl.get_dtype())
            except Exception as exc:  # noqa: BLE001 - safetensors' own error types on a damaged file
                raise InvalidValueError(f"cannot read the safetensors header of {f!r}: {exc}") from None
        prefixes = [p for p in ("", "model.") if f"{p}embed_tokens.weight" in self.where]
        if len(prefixes) != 1:
            raise InvalidValueError(f"the checkpoint {str(path)!r} has {'no' if not prefixes else 'two'} "
                                    "embed_tokens.weight (expected exactly one, with or without 'model.')")
        self.prefix = prefixes[0]

    def shape(self, key: str) -> Tuple[int, ...]:
        return self.shapes[key]

    def nbytes64(self, keys: Any = None) -> int:
        """Bytes of the tensors ``keys`` (default: all) in float64."""
        keys = self.shapes if keys is None else keys
        return 8 * sum(int(np.prod(self.shapes[k])) for k in keys)

    def check_float(self, key: str) -> None:
        if self.dtypes[key] not in FLOAT_DTYPES:
            raise InvalidValueError(f"{key} is stored as {self.dtypes[key]} in {self.where[key]!r}: expected a "
                                    f"floating-point weight ({', '.join(FLOAT_DTYPES)})")

    def rows(self, key: str, ids: np.ndarray) -> Any:
        """Rows ``ids`` (sorted, unique) of a 2-D tensor, read without the rest of it, widened to float64."""
        from safetensors import safe_open

        torch = require_torch()
        self.check_float(key)
        with safe_open(self.where[key], framework="pt") as h:
            sl = h.get_slice(key)
            return torch.stack([sl[int(i):int(i) + 1][0] for i in ids]).to(torch.float64)

    def stored(self, key: str) -> Any:
        """The tensor at its stored dtype (bf16 included), copied out of the file."""
        from safetensors import safe_open

        self.check_float(key)
        with safe_open(self.where[key], framework="pt") as h:
            return h.get_tensor(key).clone()


def check_layer_keys(layer: Any, shards: Shards, i: int) -> None:
    """Layer ``i``'s tensors in the checkpoint are exactly the module's, with its shapes and a float dtype."""
    prefix = f"{shards.prefix}layers.{i}."
    want = {name: tuple(t.shape) for name, t in layer.state_dict().items()}
    have = {k[len(prefix):] for k in shards.where if k.startswith(prefix)}
    missing, unexpected = sorted(set(want) - have), sorted(have - set(want))
    if missing or unexpected:
        raise InvalidValueError(f"layer {i} of the checkpoint does not match its config: missing {missing}, "
                                f"unexpected {unexpected}; symuat never uses randomly initialised weights")
    for name, shape in want.items():
        if shards.shape(prefix + name) != shape:
            raise InvalidValueError(f"{prefix}{name}: checkpoint {shards.shape(prefix + name)}, model {shape}")
        shards.check_float(prefix + name)


def load_layer(layer: Any, shards: Shards, i: int) -> None:
    """Materialise ``layer`` on the CPU and copy its tensors in, each widened from its stored dtype in place (no
    float64 copy besides the layer's own); keys, shapes and dtypes checked first, non-finite entries refused."""
    torch = require_torch()
    check_layer_keys(layer, shards, i)
    prefix = f"{shards.prefix}layers.{i}."
    layer.to_empty(device="cpu")
    with torch.no_grad():
        for name, target in layer.state_dict(keep_vars=True).items():  # the layer's own tensors
            target.copy_(shards.stored(prefix + name))
            if not bool(torch.isfinite(target).all()):
                raise InvalidValueError(f"{prefix}{name} has NaN or infinite entries: the model's weights are "
                                        "not finite")
