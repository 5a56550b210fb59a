r"""Refuse a module whose forward pass is not what symuat reads from it.

symuat reads a model's *weights and structure*; anything that changes the forward pass without showing
in them would make the DUAT form a silent wrong answer.  :func:`check_module` refuses, naming the
offending submodules:

* a submodule in training mode (dropout would be active);
* forward or pre-forward hooks on any submodule (transformers' own output-capturing hooks, which only
  record ``hidden_states``, excepted), and torch's global forward / pre-forward hooks
  (``register_module_forward_hook``); a ``forward`` replaced on an instance (e.g. accelerate's hooks);
* a module whose class overrides ``forward`` of the torch / transformers class it derives from (a subclass with
  its own ``forward`` computes something its weights do not say; :func:`check_forwards`);
* an attention implementation other than transformers' ``eager`` and ``sdpa``, or an ``sdpa`` entry of
  ``ALL_ATTENTION_FUNCTIONS`` that is not transformers' own function.

Backward and state-dict hooks do not change the forward pass (weights are read from the parameters
themselves) and are allowed.
"""

from __future__ import annotations

from typing import Any, List

from ..errors import UnsupportedError

__all__ = ["check_module", "check_forwards", "check_float64", "ATTENTION_IMPLEMENTATIONS"]

#: Packages whose module classes symuat knows (a class of another package derives its forward from one of them).
_KNOWN_PACKAGES = ("torch.", "transformers.")

#: transformers attention implementations whose result symuat reproduces.
ATTENTION_IMPLEMENTATIONS = ("eager", "sdpa")

_HOOKS = ("_forward_hooks", "_forward_pre_hooks")
_GLOBAL_HOOKS = ("_global_forward_hooks", "_global_forward_pre_hooks")


def _library_hook_codes() -> frozenset:
    """Code objects of transformers' own output-capturing hooks (they record ``hidden_states``, change nothing)."""
    import types

    try:
        from transformers.utils.output_capturing import install_output_capuring_hook
    except ImportError:  # pragma: no cover - other transformers releases
        return frozenset()
    return frozenset(c for c in install_output_capuring_hook.__code__.co_consts if isinstance(c, types.CodeType))


def _user_hooks(module: Any, kind: str, allowed: frozenset) -> list:
    hooks = getattr(module, kind, None) or {}
    return [h for h in hooks.values() if getattr(h, "__code__", None) not in allowed]


def _names(names: List[str], limit: int = 4) -> str:
    shown = ", ".join(n or "<root>" for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _attention_implementation(model: Any) -> None:
    config = getattr(model, "config", None)
    if config is None:
        return
    impl = getattr(config, "_attn_implementation", None) or "eager"
    if impl not in ATTENTION_IMPLEMENTATIONS:
        raise UnsupportedError(f"attention implementation {impl!r} (config._attn_implementation); symuat reproduces "
                               f"{' and '.join(ATTENTION_IMPLEMENTATIONS)} only")
    if impl == "sdpa":
        from transformers.integrations.sdpa_attention import sdpa_attention_forward
        from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

        if ALL_ATTENTION_FUNCTIONS.get("sdpa") is not sdpa_attention_forward:
            raise UnsupportedError("ALL_ATTENTION_FUNCTIONS['sdpa'] has been replaced by "
                                   f"{getattr(ALL_ATTENTION_FUNCTIONS.get('sdpa'), '__name__', '?')}: "
                                   "not transformers' attention")


def _experts_implementation(model: Any) -> None:
    impl = getattr(getattr(model, "config", None), "_experts_implementation", None)
    if impl is None or impl == "eager":
        return
    has_experts = any(hasattr(m, "gate_up_proj") or type(m).__name__.endswith("Experts") for m in model.modules())
    if has_experts:
        raise UnsupportedError(f"experts implementation {impl!r} (config._experts_implementation); symuat "
                               "reproduces the 'eager' experts only (the fused kernels have no float64): call "
                               "model.set_experts_implementation('eager')")


def _known_base(cls: type) -> Any:
    """The first class of ``cls``'s MRO defined by torch or transformers (``cls`` itself when it is one)."""
    return next((c for c in cls.__mro__ if c.__module__.startswith(_KNOWN_PACKAGES)), None)


def check_forwards(model: Any) -> None:
    r"""Refuse a module whose class's ``forward`` is not the ``forward`` of the torch / transformers class it
    derives from (``type(m).forward is not base.forward``), naming the module and both classes.

    >>> import torch
    >>> class Mine(torch.nn.Linear):
    ...     def forward(self, x):
    ...         return 2 * super().forward(x)
    >>> check_forwards(torch.nn.Sequential(Mine(2, 2)))
    Traceback (most recent call last):
    ...
    symuat.errors.UnsupportedError: 0 is a Mine, a subclass of torch Linear with its own forward: symuat reads ...
    """
    for name, m in model.named_modules():
        cls = type(m)
        base = _known_base(cls)
        if base is cls:
            continue
        if base is None or cls.forward is not base.forward:
            what = "a module of no torch or transformers class" if base is None else \
                f"a subclass of {base.__module__.split('.')[0]} {base.__name__} with its own forward"
            raise UnsupportedError(f"{name or '<root>'} is a {cls.__name__}, {what}: symuat reads "
                                   f"{'the weights' if base is None else base.__name__ + '.forward'} only, and "
                                   "cannot know what the override computes")


def check_float64(model: Any) -> None:
    """A transformers model in memory must be float64: symuat runs the library in float64 to compare with it."""
    import torch

    dtypes = sorted({str(p.dtype).replace("torch.", "") for p in model.parameters() if p.dtype != torch.float64})
    if dtypes:
        raise UnsupportedError(f"the model's parameters are {', '.join(dtypes)}, not float64: symuat runs the "
                               "library in float64 to compare with it; call model.double() first (or load the "
                               "checkpoint directory, which symuat reads in float64)")


def check_module(model: Any) -> None:
    r"""Raise :class:`~symuat.errors.UnsupportedError` unless ``model``'s forward pass is its weights' (module doc)."""
    import torch.nn.modules.module as tm

    active = [name for name, hooks in ((n, getattr(tm, n, None)) for n in _GLOBAL_HOOKS) if hooks]
    if active:
        raise UnsupportedError(f"torch has global module hooks registered ({', '.join(active)}); they change every "
                               "forward pass: remove them (handle.remove()) before importing a model")
    modules = list(model.named_modules())
    training = [name for name, m in modules if m.training]
    if training:
        raise UnsupportedError(f"the module is in training mode ({_names(training)}): dropout would be active; "
                               "call model.eval()")
    allowed = _library_hook_codes()
    for kind in _HOOKS:
        hooked = [name for name, m in modules if _user_hooks(m, kind, allowed)]
        if hooked:
            what = "pre-forward" if "pre" in kind else "forward"
            raise UnsupportedError(f"{what} hooks on {_names(hooked)}: a hook changes the forward pass and is not "
                                   "in the weights; remove it before importing")
    check_forwards(model)
    replaced = [name for name, m in modules if "forward" in vars(m)]
    if replaced:
        raise UnsupportedError(f"forward replaced on the instance of {_names(replaced)}: the module does not "
                               "compute its class's forward pass")
    _attention_implementation(model)
    _experts_implementation(model)
