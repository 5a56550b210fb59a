r"""The torch backend: a stack's weights and an input moved to a torch device (CPU or GPU), in float64.

The numeric core reads its backend from its arguments (:mod:`symuat.numeric.backend`): a stack whose arrays are torch
``float64`` tensors on a device, and an input there, evaluate the same DUAT form by the same code, on that device.
:func:`to_device` makes such a stack from an imported (NumPy) one; :func:`symuat.models.load` with ``device=`` does it
once for the model.

>>> from symuat.models import to_device                          # doctest: +SKIP
>>> form = duat_form(to_device(stack, "cuda"), to_device(X, "cuda"))  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from typing import Any, Optional

import numpy as np

from ..errors import InvalidValueError
from ..numeric.backend import on_backend
from ._torch import require_torch

__all__ = ["to_device", "check_device"]


def check_device(device: Any) -> Optional[str]:
    r"""``None`` (the NumPy backend) or the name of a torch device that exists here (``"cpu"``, ``"cuda"``,
    ``"cuda:1"``, …); anything else raises :class:`~symuat.errors.InvalidValueError` naming it."""
    if device is None:
        return None
    torch = require_torch()
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):  # torch's own message lists every device type, or its argument signatures
        raise InvalidValueError(f"device must be None (NumPy) or a torch device such as 'cpu' or 'cuda', got "
                                f"{device!r}") from None
    if dev.type == "cpu" and dev.index not in (None, 0):
        raise InvalidValueError(f"device={device!r}: the CPU has no device index; use 'cpu'")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InvalidValueError(f"device={device!r}: torch sees no CUDA device here (torch.cuda.is_available() is "
                                "False); use device='cpu' or None")
    if dev.type not in ("cpu", "cuda"):
        raise InvalidValueError(f"device={device!r}: the torch backend is tested on 'cpu' and 'cuda' only")
    return str(dev)


def to_device(value: Any, device: Any, cache: Optional[dict] = None) -> Any:
    r"""``value`` (a :class:`~symuat.numeric.TransformerStack`, any weights bundle, or an array) with every NumPy
    array as a torch ``float64`` tensor on ``device``.

    On ``"cpu"`` a float64 array is shared, not copied (the tensors are never written); ``cache`` (a dict kept by the
    caller) maps arrays already moved to their tensors, so a stack re-made for other positions moves only its new
    arrays.  Integer and boolean arrays keep their dtype.
    """
    torch = require_torch()
    if check_device(device) is None:
        raise InvalidValueError("to_device needs a torch device such as 'cpu' or 'cuda'; device=None is the NumPy "
                                "backend, where the arrays already are")
    dev = torch.device(check_device(device))

    def convert(a: Any) -> Any:
        if isinstance(a, torch.Tensor):  # already a tensor (another device, or this one)
            return a.to(device=dev, dtype=torch.float64 if a.is_floating_point() else a.dtype)
        key = id(a)
        if cache is not None and key in cache and cache[key][0] is a:
            return cache[key][1]
        if a.dtype.kind == "f" and a.dtype != np.float64:
            a64 = a.astype(np.float64)
        else:
            a64 = a
        with warnings.catch_warnings():  # a read-only array: torch warns that the tensor could write it (it never does)
            warnings.simplefilter("ignore", UserWarning)
            try:  # strided views too (an nn.Linear's W is the transposed view of its weight): no copy
                t = torch.from_numpy(a64)
            except ValueError:  # negative strides
                t = torch.from_numpy(np.ascontiguousarray(a64))
        t = t.to(dev)
        if cache is not None:
            cache[key] = (a, t)
        return t

    if isinstance(value, (np.ndarray, torch.Tensor)):
        return convert(value)
    return on_backend(value, convert)
