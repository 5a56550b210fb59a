r"""Input validation helpers shared by :mod:`symuat.numeric`.

Every public function of the numeric package funnels its arguments through
these helpers so that a bad input always raises a :class:`~symuat.errors.SymuatError`
subclass whose message names the argument, what was received and what was
expected:

* wrong number of dimensions or wrong shape → :class:`~symuat.errors.ShapeError`;
* a dimension that is not a positive integer → :class:`~symuat.errors.ShapeError`;
* NaN / ±inf entries or non-numeric data → :class:`~symuat.errors.InvalidValueError`.
"""

from __future__ import annotations

import numbers
from typing import Any, Optional, Sequence

import numpy as np

from symuat.errors import InvalidValueError, ShapeError

__all__ = ["as_finite_array", "check_shape", "check_positive_dim", "check_real_number"]


def as_finite_array(name: str, a: Any, ndim: Optional[int] = None) -> np.ndarray:
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


def check_shape(name: str, a: np.ndarray, expected: Sequence[Optional[int]]) -> None:
    r"""Raise :class:`ShapeError` unless ``a.shape`` matches ``expected``.

    ``None`` in ``expected`` matches any length along that axis.
    """
    shape = tuple(np.shape(a))
    exp = tuple(expected)
    ok = len(shape) == len(exp) and all(e is None or s == e for s, e in zip(shape, exp))
    if not ok:
        pretty = "(" + ", ".join("*" if e is None else str(e) for e in exp) + ("," if len(exp) == 1 else "") + ")"
        raise ShapeError(f"{name} must have shape {pretty}, got {shape}")


def check_positive_dim(name: str, n: Any) -> int:
    r"""Return ``n`` as ``int`` if it is an integer :math:`\geq 1`.

    Raises
    ------
    InvalidValueError
        If ``n`` is not an integer (``bool`` is rejected).
    ShapeError
        If ``n <= 0``.
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise InvalidValueError(f"{name} must be an integer, got {type(n).__name__} {n!r}")
    if n <= 0:
        raise ShapeError(f"{name} must be a positive dimension (>= 1), got {n}")
    return int(n)


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
