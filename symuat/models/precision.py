r"""Run a transformers model with its float32 upcasts widened to float64.

transformers computes some steps in float32 *even when the model is float64*: RMSNorm
(``hidden_states.to(torch.float32)``), the rotary angles (``position_ids.float() * inv_freq``) and
the eager softmax (``softmax(..., dtype=torch.float32)``).  Those steps round to float32
(relative error ~1e-7), so the library's own float64 forward pass is only float32-accurate there.
Inside :func:`library_float64` the modelling modules see a ``torch`` whose ``float32``/``float`` are
``float64`` and ``Tensor.float()`` returns float64: the library's *own code* runs unchanged, in float64
throughout.  Nothing is patched outside the ``with`` block.
"""

from __future__ import annotations

import contextlib
import sys
import types
from typing import Iterator

from ._torch import require_torch

__all__ = ["library_float64"]

_PREFIXES = ("transformers.models.", "transformers.integrations.sdpa_attention", "transformers.modeling_rope_utils",
             "transformers.masking_utils", "transformers.activations")


class _WideTorch(types.ModuleType):
    """A view of ``torch`` whose float32 dtypes are float64."""

    def __init__(self, torch) -> None:
        super().__init__("torch")
        self._torch = torch

    def __getattr__(self, name: str):
        if name in ("float32", "float"):
            return self._torch.float64
        return getattr(self._torch, name)


@contextlib.contextmanager
def library_float64() -> Iterator[None]:
    r"""Context manager: transformers' float32 upcasts become float64 (module docstring).

    >>> with torch.no_grad(), library_float64():                       # doctest: +SKIP
    ...     want = model.double()(inputs_embeds=X).last_hidden_state
    """
    torch = require_torch()
    wide = _WideTorch(torch)
    patched = []
    for name, mod in list(sys.modules.items()):
        # the module's own namespace: getattr on transformers' lazy modules would import every submodule
        if mod is not None and name.startswith(_PREFIXES) and getattr(mod, "__dict__", {}).get("torch") is torch:
            patched.append(mod)
            mod.torch = wide
    original_float = torch.Tensor.float

    def wide_float(self, *args, **kwargs):
        return self.to(torch.float64)

    torch.Tensor.float = wide_float
    try:
        yield
    finally:
        torch.Tensor.float = original_float
        for mod in patched:
            mod.torch = torch
