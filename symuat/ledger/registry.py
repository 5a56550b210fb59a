r"""Collect ledger entries from derivation modules.

A derivation module is a Python module that defines ``entries()`` returning an
iterable of :class:`~symuat.ledger.entry.Entry`.  The default source is the
``symuat_paper`` package shipped with symuat (the project's ``derivations/``
folder).  A directory can be given instead (``symuat audit --derivations DIR``):
it is imported as the package ``symuat_user_derivations``, running its
``__init__.py`` when there is one, so relative imports between its modules work.
The package's ``__init__`` may define ``entries()`` too; every public submodule
(name not starting with ``_``) must.  A module that fails to import, raises, or
returns anything else — ``SystemExit`` included — gives a :class:`~symuat.errors.DerivationError` naming its
file; so does a directory that yields no entries at all.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
import weakref
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from ..errors import DerivationError
from .entry import Entry
from .guard import entry_timeout, report, time_limit, user_code

__all__ = ["load_entries", "entries_from_module", "PAPER_PACKAGE", "USER_PACKAGE"]

#: The package holding the paper's derivations (the ``derivations/`` folder, installed under this name).
PAPER_PACKAGE = "symuat_paper"
#: The package name a ``--derivations`` directory is imported as.
USER_PACKAGE = "symuat_user_derivations"


def _label(module: ModuleType) -> str:
    return str(getattr(module, "__file__", None) or module.__name__)


#: module -> (its entries(), what that returned): a module loaded again gives the same Entry objects, so the
#: sides a check built for a claim (an InstanceCache) serve every later check of it in this process.
_LOADED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def entries_from_module(module: ModuleType) -> tuple[Entry, ...]:
    """Call ``module.entries()`` (once per module and function) and validate what it returns; errors name the
    module's file."""
    name = _label(module)
    factory = getattr(module, "entries", None)
    if not callable(factory):
        raise DerivationError(f"derivation module {name!r} defines no callable entries()")
    held = _LOADED.get(module)
    if held is not None and held[0] is factory:
        return held[1]
    with user_code(f"derivation module {name!r}"), time_limit(entry_timeout(), name):  # crashes, exits, loops
        produced = tuple(factory())
    for item in produced:
        if not isinstance(item, Entry):
            raise DerivationError(
                f"derivation module {name!r} returned {type(item).__name__}, expected symuat Entry objects"
            )
    _LOADED[module] = (factory, produced)
    return produced


def _import(name: str, loader) -> ModuleType:
    report("load", module=name)
    with user_code(f"derivation module {name!r}", action="failed to import:"), time_limit(entry_timeout(), name):
        return loader()


def _submodules(pkg: ModuleType) -> Iterable[ModuleType]:
    """The package itself when its ``__init__`` defines ``entries()``, then its public submodules."""
    if callable(getattr(pkg, "entries", None)):
        yield pkg
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            full = f"{pkg.__name__}.{info.name}"
            where = str(Path(pkg.__path__[0]) / (info.name + ("/__init__.py" if info.ispkg else ".py")))
            yield _import(where, lambda full=full: importlib.import_module(full))


def _package_modules(package: str) -> Iterable[ModuleType]:
    yield from _submodules(_import(package, lambda: importlib.import_module(package)))


def _directory_package(directory: Path) -> ModuleType:
    """Import ``directory`` as :data:`USER_PACKAGE` (its ``__init__.py`` if any), forgetting an earlier one."""
    for name in [n for n in sys.modules if n == USER_PACKAGE or n.startswith(USER_PACKAGE + ".")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    init = directory / "__init__.py"
    if init.is_file():
        spec = importlib.util.spec_from_file_location(USER_PACKAGE, init, submodule_search_locations=[str(directory)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[USER_PACKAGE] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[USER_PACKAGE]
            raise
        return module
    module = ModuleType(USER_PACKAGE, f"derivations in {directory}")
    module.__path__ = [str(directory)]
    module.__file__ = None
    module.__spec__ = importlib.util.spec_from_loader(USER_PACKAGE, loader=None, is_package=True)
    module.__spec__.submodule_search_locations = [str(directory)]
    sys.modules[USER_PACKAGE] = module
    return module


def _directory_modules(directory: Path) -> Iterable[ModuleType]:
    if not directory.is_dir():
        raise DerivationError(f"derivations directory {str(directory)!r} does not exist")
    init = str(directory / "__init__.py")
    yield from _submodules(_import(init, lambda: _directory_package(directory.resolve())))


def load_entries(package: str = PAPER_PACKAGE, directory: str | Path | None = None) -> tuple[Entry, ...]:
    """All entries of a derivations ``package`` (or of the package or ``*.py`` files in ``directory``), ids unique.

    >>> len(load_entries()) > 200
    True
    """
    modules = _directory_modules(Path(directory)) if directory is not None else _package_modules(package)
    seen: dict[str, str] = {}
    out: list[Entry] = []
    for module in modules:
        for entry in entries_from_module(module):
            if entry.id in seen:
                raise DerivationError(
                    f"entry id {entry.id!r} is defined twice (in {seen[entry.id]!r} and {_label(module)!r})"
                )
            seen[entry.id] = _label(module)
            out.append(entry)
    if not out:
        where = str(directory) if directory is not None else package
        raise DerivationError(f"no entries found in {where}")
    return tuple(out)
