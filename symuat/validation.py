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
from collections.abc import Callable

from .errors import ArgumentTypeError, ShapeError

__all__ = ["check_positive_int", "check_callable"]


def check_positive_int(name: str, value: object, error: type[Exception] = ShapeError) -> int:
    """Return ``value`` as a positive ``int``, else raise ``error`` naming ``name``.

    >>> check_positive_int("N", 3)
    3
    >>> check_positive_int("N", 0)
    Traceback (most recent call last):
    ...
    symuat.errors.ShapeError: dimension N=0 must be a positive integer
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise error(f"dimension {name}={value!r} must be a positive integer")
    return int(value)


def check_callable(name: str, value: object) -> Callable:
    """Return ``value`` if it is callable, else raise :class:`~symuat.errors.ArgumentTypeError`.

    >>> check_callable("lhs", len) is len
    True
    """
    if not callable(value):
        raise ArgumentTypeError(f"{name} must be callable, got {type(value).__name__} {value!r}")
    return value
