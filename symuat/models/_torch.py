r"""Reading PyTorch parameters into float64 NumPy arrays in symuat's feature-Linear orientation.

symuat writes every Linear as :math:`Y = XW + \mathbf 1b^T` with :math:`W\in\mathbb R^{M_{in}\times M_{out}}`.
``torch.nn.Linear`` stores :math:`W^T` (``out × in``); GPT-2's ``Conv1D`` stores :math:`W` itself.
:func:`linear` reads the orientation from the module's type, so a user never transposes by hand.
torch is imported lazily: importing :mod:`symuat` never imports it.  Inside :func:`sharing` the arrays are
read-only views of the tensors (no copy; ``W`` of an ``nn.Linear`` is the transposed view).
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterator, Optional, Tuple

import numpy as np

from ..errors import InvalidValueError, UnsupportedError

__all__ = ["require_torch", "array", "linear", "split_columns", "sharing", "library_base"]

_SHARE = contextvars.ContextVar("symuat_share_torch_memory", default=False)


@contextlib.contextmanager
def sharing() -> Iterator[None]:
    r"""Inside: :func:`array` returns read-only *views* of float64 CPU tensors instead of copies, so an imported
    stack holds no second copy of the weights (:func:`symuat.models.load`, which owns the library model)."""
    token = _SHARE.set(True)
    try:
        yield
    finally:
        _SHARE.reset(token)


def require_torch():
    r"""Import torch, or raise :class:`~symuat.errors.UnsupportedError` saying how to install it."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise UnsupportedError("symuat.models needs torch and transformers: pip install 'symuat[torch]'") from exc
    return torch


def array(name: str, tensor: Any) -> np.ndarray:
    r"""``tensor`` as a float64 array; NaN or infinite entries raise :class:`InvalidValueError` naming ``name``."""
    t = tensor.detach()
    if _SHARE.get() and t.device.type == "cpu" and t.dtype == require_torch().float64:
        a = t.numpy()  # the library's own memory, read-only on this side (module docstring)
        a.setflags(write=False)
    else:
        a = t.to(device="cpu").double().numpy().copy()
    if not np.all(np.isfinite(a)):
        bad = int(np.count_nonzero(~np.isfinite(a)))
        raise InvalidValueError(f"{name} has {bad} NaN or infinite entries: the model's weights are not finite")
    return a


def linear(name: str, module: Any) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    r"""``(W, b)`` of an ``nn.Linear`` or a GPT-2 ``Conv1D`` in feature orientation (``W`` is ``in × out``)."""
    torch = require_torch()
    weight, bias = getattr(module, "weight", None), getattr(module, "bias", None)
    if isinstance(module, torch.nn.Linear):
        W = array(f"{name}.weight", weight).T
    elif type(module).__name__ == "Conv1D" and weight is not None and weight.dim() == 2:
        W = array(f"{name}.weight", weight)  # Conv1D computes x @ weight + bias: already in × out
    else:
        raise UnsupportedError(f"{name} is a {type(module).__name__}, not an nn.Linear or Conv1D")
    b = None if bias is None else array(f"{name}.bias", bias)
    return (W if _SHARE.get() else np.ascontiguousarray(W)), b


def split_columns(name: str, W: np.ndarray, b: Optional[np.ndarray], widths) -> list:
    r"""Split a fused projection (e.g. QKV, gate/up) into consecutive column blocks of ``widths``.

    >>> [W.shape for W, _ in split_columns("qkv", np.zeros((4, 12)), None, (8, 2, 2))]
    [(4, 8), (4, 2), (4, 2)]
    """
    if sum(widths) != W.shape[1]:
        raise InvalidValueError(f"{name} has {W.shape[1]} output columns, expected {' + '.join(map(str, widths))}")
    out, start = [], 0
    for w in widths:
        out.append((W[:, start:start + w], None if b is None else b[start:start + w]))
        start += w
    return out


def library_base(model: Any) -> Any:
    r"""The library model's base (the stack under its head): ``model.base_model``, or, where the class's
    ``base_model_prefix`` names no attribute of it (``Llama4ForCausalLM``'s ``"language_model"``: ``base_model`` is the
    model itself), its ``model`` submodule when that holds the ``layers``."""
    base = getattr(model, "base_model", model)
    if base is model and type(model).__name__.endswith("ForCausalLM"):
        inner = getattr(model, "model", None)
        if inner is not None and hasattr(inner, "layers"):
            return inner
    return base
