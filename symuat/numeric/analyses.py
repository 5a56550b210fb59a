r"""The analyses of a :class:`~symuat.numeric.duat_form.DUATForm`, registered from the layer above.

The numeric core holds the form's data and knows no analysis (docs/architecture.md): the convenience methods of
``DUATForm`` (``form.attribution(...)``, ``form.frozen()``, ``form.attention(l, h)``, …) look their function up
here by name, and :mod:`symuat.analysis` registers each one when it is imported.  This is pandas' accessor
pattern: an extension plugs into the value without the value importing it.  The package root adds a *loader*
(:func:`add_loader`) that imports :mod:`symuat.analysis` the first time an analysis is looked up, so that
``import symuat`` (and every CLI command that never touches a form's analyses) does not pay for importing them.

The analyses are NumPy code: a form evaluated on another backend (torch, :mod:`symuat.numeric.backend`) is refused by
name (:class:`~symuat.errors.UnsupportedError`); ``form.to_numpy()`` re-evaluates it with NumPy.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

from ..errors import UnsupportedError

#: name → function(form, *args, **kwargs); filled by :mod:`symuat.analysis`.
_ANALYSES: dict[str, Callable] = {}
#: callables run once, in order, the first time a name is missing (each registers analyses)
_LOADERS: list[Callable[[], object]] = []


def add_loader(loader: Callable[[], object]) -> None:
    """Run ``loader()`` (which registers analyses) the first time an analysis is looked up and missing."""
    _LOADERS.append(loader)


def register_analysis(name: str, function: Callable) -> Callable:
    """Make ``function`` the analysis ``name`` of every form; returns ``function``."""
    _ANALYSES[name] = function
    return function


def analysis(name: str, method: Optional[str] = None) -> Callable:
    """The registered analysis ``name``.

    >>> analysis("attribution").__module__
    'symuat.analysis.attribution'
    """
    while name not in _ANALYSES and _LOADERS:
        _LOADERS.pop(0)()
    try:
        function = _ANALYSES[name]
    except KeyError:
        raise UnsupportedError(f"no analysis named {name!r} is registered (import symuat.analysis); "
                               f"registered: {sorted(_ANALYSES)}") from None

    called = f"form.{method or name}()"

    @functools.wraps(function)
    def on_numpy(form: Any, *args: Any, **kwargs: Any) -> Any:
        backend = getattr(form, "backend", "numpy")
        if backend != "numpy":  # the analyses are NumPy code: refused by name, never run on mixed arrays
            raise UnsupportedError(f"{called} runs on the NumPy backend only; this form is on {backend}: "
                                   "form.to_numpy() re-evaluates it with NumPy first")
        others = [(f"argument {i + 1}", a) for i, a in enumerate(args)] + [(k, a) for k, a in kwargs.items()]
        for where, other in others:  # a second form (a patch's source, a pair): on the NumPy backend too
            if getattr(other, "backend", "numpy") != "numpy" and hasattr(other, "to_numpy"):
                raise UnsupportedError(f"{called}: its {where} is a form on {other.backend}, this one on NumPy: "
                                       f"convert it with .to_numpy() first")
        return function(form, *args, **kwargs)

    return on_numpy


__all__ = ["register_analysis", "add_loader", "analysis"]
