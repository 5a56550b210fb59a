r"""Collect ledger entries from derivation modules.

A derivation module is a Python module that defines ``entries()`` returning an
iterable of :class:`~symuat.ledger.entry.Entry`.  The default source is the
``derivations`` package shipped with symuat; a directory of ``*.py`` files can be
given instead.  A module that fails to import, raises, or returns anything else
gives a :class:`~symuat.errors.DerivationError` naming the module.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from ..errors import DerivationError, SymuatError
from .entry import Entry

__all__ = ["load_entries", "entries_from_module"]


def entries_from_module(module: ModuleType) -> tuple[Entry, ...]:
    """Call ``module.entries()`` and validate what it returns."""
    name = module.__name__
    factory = getattr(module, "entries", None)
    if not callable(factory):
        raise DerivationError(f"derivation module {name!r} defines no callable entries()")
    try:
        produced = tuple(factory())
    except SymuatError as exc:
        raise DerivationError(f"derivation module {name!r}: {exc}") from None
    except Exception as exc:  # a derivation that crashes is reported, not propagated raw
        raise DerivationError(f"derivation module {name!r} raised {type(exc).__name__}: {exc}") from None
    for item in produced:
        if not isinstance(item, Entry):
            raise DerivationError(
                f"derivation module {name!r} returned {type(item).__name__}, expected symuat Entry objects"
            )
    return produced


def _import(name: str, loader) -> ModuleType:
    try:
        return loader()
    except SymuatError as exc:
        raise DerivationError(f"derivation module {name!r} failed to import: {exc}") from None
    except Exception as exc:
        raise DerivationError(
            f"derivation module {name!r} failed to import: {type(exc).__name__}: {exc}"
        ) from None


def _package_modules(package: str) -> Iterable[ModuleType]:
    pkg = _import(package, lambda: importlib.import_module(package))
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            full = f"{package}.{info.name}"
            yield _import(full, lambda full=full: importlib.import_module(full))


def _directory_modules(directory: Path) -> Iterable[ModuleType]:
    if not directory.is_dir():
        raise DerivationError(f"derivations directory {str(directory)!r} does not exist")
    for path in sorted(directory.glob("*.py")):
        if path.name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(f"symuat_user_derivations.{path.stem}", path)

        def load(spec=spec):
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module

        yield _import(path.name, load)


def load_entries(package: str = "derivations", directory: str | Path | None = None) -> tuple[Entry, ...]:
    """All entries of a derivations ``package`` (or of the ``*.py`` files in ``directory``), ids unique."""
    modules = _directory_modules(Path(directory)) if directory is not None else _package_modules(package)
    seen: dict[str, str] = {}
    out: list[Entry] = []
    for module in modules:
        for entry in entries_from_module(module):
            if entry.id in seen:
                raise DerivationError(
                    f"entry id {entry.id!r} is defined twice (in {seen[entry.id]!r} and {module.__name__!r})"
                )
            seen[entry.id] = module.__name__
            out.append(entry)
    return tuple(out)
