r"""Library activation names and the σ symuat evaluates for them.

Only names whose library definition is *exactly* the formula of :mod:`symuat.numeric` are mapped;
anything else raises :class:`~symuat.errors.UnsupportedError` naming the activation.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import UnsupportedError

__all__ = ["ACTIVATION_NAMES", "activation_name", "module_activation"]

#: transformers' ``ACT2FN`` keys (and torch names) → symuat's σ.
ACTIVATION_NAMES: Mapping[str, str] = {
    "relu": "relu",
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "silu": "silu",
    "swish": "silu",
    "sigmoid": "sigmoid",
}


def activation_name(name: Any, where: str) -> str:
    r"""symuat's σ for the library activation ``name`` found at ``where``.

    >>> activation_name("gelu_new", "config.activation_function")
    'gelu_tanh'
    """
    if not isinstance(name, str) or name not in ACTIVATION_NAMES:
        raise UnsupportedError(f"unsupported activation {name!r} ({where}); supported: {sorted(ACTIVATION_NAMES)}")
    return ACTIVATION_NAMES[name]


def module_activation(fn: Any, where: str) -> str:
    r"""σ of a torch activation given as a string, a function (``F.relu``) or a module (``nn.GELU()``)."""
    if isinstance(fn, str):
        return activation_name(fn, where)
    import torch.nn.functional as F
    from torch import nn

    if fn is F.relu or isinstance(fn, nn.ReLU):
        return "relu"
    if fn is F.gelu:
        return "gelu"
    if isinstance(fn, nn.GELU):
        return "gelu" if fn.approximate == "none" else "gelu_tanh"
    if fn is F.silu or isinstance(fn, nn.SiLU):
        return "silu"
    raise UnsupportedError(f"unsupported activation {getattr(fn, '__name__', type(fn).__name__)} ({where})")
