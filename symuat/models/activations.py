r"""Library activation names and the σ symuat evaluates for them.

Only names whose library definition is *exactly* the formula of :mod:`symuat.numeric` are mapped;
anything else raises :class:`~symuat.errors.UnsupportedError` naming the activation.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import UnsupportedError

__all__ = ["ACTIVATION_NAMES", "FAMILY_ACTIVATIONS", "activation_name", "module_activation", "check_activation"]

#: transformers' ``ACT2FN`` keys (and torch names) → symuat's σ.
ACTIVATION_NAMES: Mapping[str, str] = {
    "relu": "relu",
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "silu": "silu",
    "swish": "silu",
    "sigmoid": "sigmoid",
    "quick_gelu": "quick_gelu",
    "relu2": "relu2",
    "gelu_fast": "gelu_fast",
}


#: A family's own activation class (not in ``ACT2FN``) → symuat's σ.
FAMILY_ACTIVATIONS: Mapping[str, str] = {
    "transformers.models.bloom.modeling_bloom.BloomGelu": "gelu_bloom",
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


def _module_sigma(fn: Any) -> Any:
    """σ of a transformers / torch activation module by its exact class, or ``None`` when unknown."""
    from torch import nn
    from transformers.activations import ACT2FN

    if type(fn) is nn.GELU:
        return "gelu" if fn.approximate == "none" else "gelu_tanh"
    for key, sigma in ACTIVATION_NAMES.items():
        if type(fn) is type(ACT2FN[key]):
            return sigma
    return FAMILY_ACTIVATIONS.get(type(fn).__module__ + "." + type(fn).__qualname__)


def check_activation(fn: Any, sigma: str, where: str) -> str:
    r"""Check that the activation module ``fn`` found at ``where`` computes σ = ``sigma`` (what the config says).

    The module's class must be one transformers uses for ``sigma``, and on a probe grid of
    :math:`[-30, 30]` it must agree with symuat's σ to :math:`10^{-13}\max(1,|\sigma|)`; otherwise
    :class:`~symuat.errors.UnsupportedError` names both.  Returns ``sigma``.
    """
    import numpy as np
    import torch

    from ..numeric import activation_function
    from .precision import library_float64

    found = _module_sigma(fn)
    if found != sigma:
        raise UnsupportedError(f"{where} is {type(fn).__name__} ({found or 'unknown'}) but the config says {sigma}: "
                               "the module differs from its config")
    t = torch.linspace(-30.0, 30.0, 241, dtype=torch.float64)
    with torch.no_grad(), library_float64():
        got = fn(t).detach().double().numpy()
    want = activation_function(sigma)(t.numpy())
    err = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1.0)))
    if not err <= 1e-13:
        raise UnsupportedError(f"{where} ({type(fn).__name__}) does not compute {sigma}: it differs by {err:.1e} "
                               "on a probe grid")
    return sigma
