r"""The library's own outputs for a row of token ids, in float64: what a symuat result is checked against.

:func:`library_outputs` runs the library's model under :func:`~symuat.models.library_float64` and returns its last
hidden state and logits as NumPy arrays; :func:`torch_threads` runs torch (and BLAS) with a fixed number of
threads, so that a result's bits do not depend on the process it was computed in.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Iterator, Optional, Sequence

import numpy as np

from ._torch import require_torch
from .precision import library_float64

__all__ = ["library_outputs", "torch_threads", "quiet_library"]


def library_outputs(model: Any, input_ids: Sequence[int]) -> tuple[np.ndarray, Optional[np.ndarray]]:
    r"""``(hidden (N, M), logits (N, V) or None)`` of ``model.library`` at one row of ``input_ids`` (float64).

    ``hidden`` is the library's last entry of ``hidden_states`` (after the final norm), which ``form.output``
    equals; ``logits`` is the library's ``.logits`` when the model has a head.
    """
    torch = require_torch()
    with torch.no_grad(), library_float64():
        out = model.library(input_ids=torch.tensor([list(input_ids)]), output_hidden_states=True)
    hidden = out.hidden_states[-1][0].double().numpy()
    logits = getattr(out, "logits", None)
    return hidden, None if logits is None else logits[0].double().numpy()


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """torch and the BLAS libraries with ``n`` threads inside; the previous settings after."""
    torch = require_torch()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with the torch extra
        threadpool_limits = None
    before = torch.get_num_threads()
    limits = threadpool_limits(n) if threadpool_limits is not None else None
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
        if limits is not None:
            limits.restore_original_limits()


def quiet_library() -> None:
    """transformers' own progress bars and warnings off in this process (a worker prints nothing of its own)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


class _LibraryReference(Mapping):
    """``form.reference``: ``"output"``, the library's last hidden state (computed when first read, then kept), and
    with a head ``"logits"``, a function returning the library's logits and the rows it gives."""

    def __init__(self, output: Any, logits: Any = None):
        self._output, self._logits, self._value = output, logits, None

    def __getitem__(self, key: str) -> Any:
        if key == "output":
            if self._value is None:
                self._value = self._output()
            return self._value
        if key == "logits" and self._logits is not None:
            return self._logits
        raise KeyError(key)

    def __iter__(self):
        return iter(("output",) if self._logits is None else ("output", "logits"))

    def __len__(self) -> int:
        return 1 if self._logits is None else 2
