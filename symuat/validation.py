r"""Argument validation shared by every symuat module.

One exception type per kind of mistake (all in :mod:`symuat.errors`, each also
the matching builtin):

* a dimension that is not a positive integer, shapes that do not fit → :class:`~symuat.errors.ShapeError`;
* an argument of the wrong type → :class:`~symuat.errors.ArgumentTypeError`;
* a value outside its domain (NaN, depth < 1, an unknown name) → :class:`~symuat.errors.InvalidValueError`.

Messages name the argument, what was received and what was expected.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .errors import ArgumentTypeError, InvalidValueError, ShapeError

__all__ = ["check_positive_int", "check_callable", "as_finite_array", "check_shape", "check_positive_dim",
           "check_real_number", "frozen_array", "check_path", "MAX_PATH_BYTES", "MAX_NAME_BYTES"]

#: The longest path (bytes) and path component that symuat accepts: Linux's PATH_MAX - 1 and NAME_MAX.
MAX_PATH_BYTES, MAX_NAME_BYTES = 4095, 255


def check_path(name: str, value: object) -> str:
    r"""A usable file-system path: a non-empty string without NUL, at most 4095 bytes, components at most 255.

    >>> check_path("--out", "latex")
    'latex'
    >>> check_path("--out", "")
    Traceback (most recent call last):
    ...
    symuat.errors.InvalidValueError: --out must be a non-empty path, got ''
    """
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be a path (a string), got {type(value).__name__}")
    if not value.strip():
        raise InvalidValueError(f"{name} must be a non-empty path, got {value!r}")
    if "\0" in value:
        raise InvalidValueError(f"{name} must not contain a NUL character")
    raw = os.fsencode(value)
    if len(raw) > MAX_PATH_BYTES or any(len(part) > MAX_NAME_BYTES for part in raw.split(b"/")):
        raise InvalidValueError(f"{name} is too long: {len(raw)} bytes (at most {MAX_PATH_BYTES}, "
                                f"{MAX_NAME_BYTES} per component)")
    return value


def check_positive_int(name: str, value: object, error: type[Exception] = ShapeError) -> int:
    """Return ``value`` as a positive ``int``.

    A value that is not an integer (``bool`` included) raises
    :class:`~symuat.errors.ArgumentTypeError`; an integer < 1 raises ``error``:
    :class:`~symuat.errors.ShapeError` for a dimension (the default),
    :class:`~symuat.errors.InvalidValueError` for a count such as a depth.

    >>> check_positive_int("N", 3)
    3
    >>> check_positive_int("N", 0)
    Traceback (most recent call last):
    ...
    symuat.errors.ShapeError: N=0 must be a positive integer (>= 1)
    >>> check_positive_int("depth", 2.0, InvalidValueError)
    Traceback (most recent call last):
    ...
    symuat.errors.ArgumentTypeError: depth must be an integer, got float 2.0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if value <= 0:
        raise error(f"{name}={value!r} must be a positive integer (>= 1)")
    return int(value)


def check_positive_dim(name: str, n: Any) -> int:
    """A dimension: :func:`check_positive_int` with :class:`~symuat.errors.ShapeError`."""
    return check_positive_int(name, n, ShapeError)


def check_callable(name: str, value: object) -> Callable:
    """Return ``value`` if it is callable, else raise :class:`~symuat.errors.ArgumentTypeError`.

    >>> check_callable("lhs", len) is len
    True
    """
    if not callable(value):
        raise ArgumentTypeError(f"{name} must be callable, got {type(value).__name__} {value!r}")
    return value


def as_finite_array(name: str, a: Any, ndim: int | None = None) -> np.ndarray:
    r"""Return ``a`` as a finite ``float64`` array.

    Parameters
    ----------
    name : str
        Argument name used in error messages.
    a : array_like
        Real data.
    ndim : int, optional
        Required number of dimensions.

    Returns
    -------
    numpy.ndarray
        A ``float64`` array (a copy only if a conversion was needed).

    Raises
    ------
    InvalidValueError
        If ``a`` is not real numeric data or contains NaN / inf.
    ShapeError
        If ``a.ndim != ndim``.
    """
    if isinstance(a, (str, bytes)) or a is None:
        raise InvalidValueError(f"{name} must be a real numeric array, got {type(a).__name__} {a!r}")
    try:
        arr = np.asarray(a)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise InvalidValueError(f"{name} could not be converted to an array: {exc}") from exc
    if arr.dtype.kind not in "biuf":
        raise InvalidValueError(
            f"{name} must be a real numeric array, got dtype {arr.dtype} (shape {arr.shape})"
        )
    arr = arr.astype(np.float64, copy=False)
    if ndim is not None and arr.ndim != ndim:
        raise ShapeError(f"{name} must be {ndim}-D, got {arr.ndim}-D array of shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise InvalidValueError(
            f"{name} must be finite, got {bad} NaN/inf entr{'y' if bad == 1 else 'ies'} "
            f"(shape {arr.shape})"
        )
    return arr


def check_shape(name: str, a: np.ndarray, expected: Sequence[int | None]) -> None:
    r"""Raise :class:`ShapeError` unless ``a.shape`` matches ``expected``.

    ``None`` in ``expected`` matches any length along that axis.
    """
    shape = tuple(np.shape(a))
    exp = tuple(expected)
    ok = len(shape) == len(exp) and all(e is None or s == e for s, e in zip(shape, exp))
    if not ok:
        pretty = "(" + ", ".join("*" if e is None else str(e) for e in exp) + ("," if len(exp) == 1 else "") + ")"
        raise ShapeError(f"{name} must have shape {pretty}, got {shape}")


def check_real_number(name: str, x: Any, *, positive: bool = False) -> float:
    r"""Return ``x`` as a finite ``float`` (strictly positive if ``positive``)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise InvalidValueError(f"{name} must be a real number, got {type(x).__name__} {x!r}")
    v = float(x)
    if not np.isfinite(v):
        raise InvalidValueError(f"{name} must be finite, got {v}")
    if positive and v <= 0:
        raise InvalidValueError(f"{name} must be > 0, got {v}")
    return v


def frozen_array(name: str, a: Any, shape: Sequence[int | None], *, optional: bool = False) -> np.ndarray | None:
    """A validated read-only copy of ``a``: finite, of ``shape`` (``None`` = any size), every size at least 1.

    ``optional`` lets ``a`` be ``None`` (an absent bias), returned as is.

    >>> frozen_array("b", [1.0, 2.0], (2,)).flags.writeable
    False
    """
    if a is None and optional:
        return None
    arr = as_finite_array(name, a, ndim=len(shape))
    check_shape(name, arr, shape)
    for i, n in enumerate(arr.shape):
        check_positive_dim(f"{name}.shape[{i}]", n)
    arr = arr.copy()
    arr.setflags(write=False)
    return arr
