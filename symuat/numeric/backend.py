r"""Array backends of the numeric core: NumPy (the default) and torch (CPU or GPU), through the array API standard.

The numeric core's functions read their backend from their arguments (:func:`namespace`, which is
``array_api_compat.array_namespace``): NumPy arrays in, NumPy arrays out, by the very code the core always ran
(its NumPy results are unchanged, bit for bit); torch ``float64`` tensors in, torch tensors out, on their device.
The core never imports torch: a stack is moved to a backend by :func:`on_backend` with a conversion the caller
supplies (:func:`symuat.models.to_device` is the torch one), and its arrays were validated once, on the host, when the
stack was built.

>>> x = np.ones(3)
>>> is_numpy(x), backend_name(x), to_numpy(x) is x
(True, 'numpy', True)
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Callable

import numpy as np

from ..errors import InvalidValueError, ShapeError, UnsupportedError
from ..validation import as_finite_array

try:
    import array_api_compat
except ImportError:  # the torch extra installs it; the NumPy backend needs none of it
    array_api_compat = None

__all__ = [
    # which backend
    "namespace", "is_numpy", "is_array", "device_of", "backend_name",
    # checks at an API boundary
    "as_backend_array", "check_backend_array", "check_same_backend",
    # moving and making arrays
    "to_numpy", "on_backend", "copy_array", "zeros_like_backend", "tile", "stack",
]


def namespace(*arrays: Any) -> Any:
    r"""The array-API namespace of ``arrays`` (``array_api_compat.numpy`` for NumPy, ``array_api_compat.torch``, …).

    >>> namespace(np.ones(2)).__name__
    'array_api_compat.numpy'
    """
    if array_api_compat is None:
        raise UnsupportedError("a backend other than NumPy needs array-api-compat: pip install 'symuat[torch]'")
    return array_api_compat.array_namespace(*[a for a in arrays if a is not None])


def is_numpy(a: Any) -> bool:
    """Whether ``a`` is a NumPy array (the default backend) rather than another library's array."""
    return isinstance(a, (np.ndarray, np.generic))


def is_array(a: Any) -> bool:
    """Whether ``a`` is an array of any array-API library (NumPy included)."""
    return isinstance(a, np.ndarray) or (array_api_compat is not None and array_api_compat.is_array_api_obj(a))


def device_of(a: Any) -> Any:
    """The device ``a`` lives on (``"cpu"`` for NumPy)."""
    if is_numpy(a):
        return "cpu"
    namespace(a)  # refuses by name without array-api-compat
    return array_api_compat.device(a)


def backend_name(a: Any) -> str:
    """``"numpy"``, or the library and device of ``a``, e.g. ``"torch:cpu"``, ``"torch:cuda:0"``."""
    if is_numpy(a):
        return "numpy"
    return f"{type(a).__module__.split('.')[0]}:{device_of(a)}"


def to_numpy(a: Any) -> Any:
    """``a`` as a NumPy array (copied to the host when it lives on another device); NumPy arrays are returned as they
    are and ``None`` stays ``None``."""
    if a is None or is_numpy(a):
        return a
    if hasattr(a, "detach"):  # torch: leave the autograd graph and the device
        return a.detach().cpu().numpy()
    return np.asarray(array_api_compat.to_device(a, "cpu"))


def copy_array(a: Any) -> Any:
    """A copy of ``a`` on its own backend (``ndarray.copy`` for NumPy)."""
    if is_numpy(a):
        return a.copy()
    return namespace(a).asarray(a, copy=True)


def zeros_like_backend(like: Any, n: Any) -> Any:
    """A float64 zero array of shape ``n`` (a length or a shape tuple) on the backend and device of ``like``."""
    if like is None or is_numpy(like):
        return np.zeros(n)
    xp = namespace(like)
    return xp.zeros(n, dtype=xp.float64, device=device_of(like))


def tile(c: Any, N: int) -> Any:
    r""":math:`\mathbf 1_N \otimes c` (``np.tile(c, N)``) on the backend of ``c``."""
    return np.tile(c, N) if is_numpy(c) else namespace(c).tile(c, (N,))


def stack(arrays: Any) -> Any:
    """``np.stack(arrays)`` on the backend of the arrays."""
    return np.stack(arrays) if is_numpy(arrays[0]) else namespace(arrays[0]).stack(list(arrays))


def on_backend(value: Any, convert: Callable[[np.ndarray], Any]) -> Any:
    r"""``value`` (a stack, block, weights bundle, or a tuple/list/dict of them) with every array (NumPy, or another
    backend's) replaced by ``convert(array)``.

    Frozen dataclasses are copied attribute by attribute without running ``__post_init__`` again: their arrays were
    validated when they were built, and the conversion changes their backend, not their values.

    >>> from symuat.numeric import RMSNormWeights
    >>> on_backend(RMSNormWeights(np.ones(2)), lambda a: 2 * a).weight.tolist()
    [2.0, 2.0]
    """
    if is_array(value):
        return convert(value)
    if isinstance(value, tuple):
        return tuple(on_backend(v, convert) for v in value)
    if isinstance(value, list):
        return [on_backend(v, convert) for v in value]
    if isinstance(value, dict):
        return {k: on_backend(v, convert) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = copy.copy(value)  # fields and the arrays a __post_init__ derived (MoEFFNWeights' stacked experts)
        for name, v in vars(value).items():
            object.__setattr__(out, name, on_backend(v, convert))
        return out
    return value


def check_backend_array(name: str, a: Any, ndim: int) -> Any:
    r"""Validate an array of a non-NumPy backend at an API boundary: ``float64``, ``ndim`` dimensions, finite.

    Returns ``a`` itself (on its device); a NumPy array goes through :func:`symuat.validation.as_finite_array`
    instead (its callers keep that path).
    """
    xp = namespace(a)
    if a.dtype != xp.float64:
        raise InvalidValueError(f"{name} must be a float64 array on the {backend_name(a)} backend, got dtype "
                                f"{a.dtype} (convert it with .to(torch.float64))")
    if a.ndim != ndim:
        raise ShapeError(f"{name} must be {ndim}-D, got {a.ndim}-D array of shape {tuple(a.shape)}")
    if not bool(xp.all(xp.isfinite(a))):
        raise InvalidValueError(f"{name} must be finite (no NaN or inf), got non-finite entries on the "
                                f"{backend_name(a)} backend")
    return a


def as_backend_array(name: str, a: Any, ndim: int) -> Any:
    r"""An input array checked on its own backend: :func:`symuat.validation.as_finite_array` for NumPy and array-likes
    (unchanged), :func:`check_backend_array` for another library's array (kept on its device, never converted).

    >>> as_backend_array("v", [1, 2], 1).tolist()
    [1.0, 2.0]
    """
    if is_array(a) and not is_numpy(a):
        return check_backend_array(name, a, ndim)
    return as_finite_array(name, a, ndim=ndim)


def check_same_backend(name: str, a: Any, weights: Any) -> None:
    """Raise :class:`~symuat.errors.InvalidValueError` unless the input ``a`` (called ``name``) lives on the backend
    (library and device) of the array ``weights``: a NumPy array never meets a torch tensor in one operation."""
    have, want = backend_name(a), backend_name(weights)
    if have != want:
        raise InvalidValueError(f"{name} is on the {have} backend but the weights are on {want}: move the weights "
                                "with symuat.models.to_device(weights, device) or the input to the weights' device")
