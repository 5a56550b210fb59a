r"""Weights as read-only arrays, shared rather than copied when they already are read-only float64.

:func:`frozen` is :func:`symuat.validation.frozen_array` except that an argument which already is a read-only
``float64`` :class:`numpy.ndarray` (e.g. an importer's view of a library's own parameter memory) is validated and
kept as it is: a model's weights are held once, not once by the library and once by symuat.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..validation import as_finite_array, check_positive_dim, check_shape, frozen_array

__all__ = ["frozen"]


def frozen(name: str, a: Any, shape: Sequence[Optional[int]], *, optional: bool = False) -> Optional[np.ndarray]:
    r"""A validated read-only array of ``shape``: ``a`` itself when it already is read-only float64, else a copy.

    >>> w = np.ones((2, 3)); w.setflags(write=False)
    >>> frozen("W", w, (2, 3)) is w, frozen("W", np.ones((2, 3)), (2, 3)) is w
    (True, False)
    """
    if not (isinstance(a, np.ndarray) and a.dtype == np.float64 and not a.flags.writeable):
        return frozen_array(name, a, shape, optional=optional)
    arr = as_finite_array(name, a, ndim=len(shape))
    check_shape(name, arr, shape)
    for i, n in enumerate(arr.shape):
        check_positive_dim(f"{name}.shape[{i}]", n)
    return arr
