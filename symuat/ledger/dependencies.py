r"""The sources an audit depends on: every module it imported, by content or by installed version.

A cached audit may stand in for a computed one only while nothing it read has changed
(docs/cache.md).  :func:`module_sources` fingerprints modules:

=======================================  ============================================
where the module's file is               what counts
=======================================  ============================================
the standard library                     nothing (the Python version is in the key)
an installed distribution                ``site:<directory>`` → the names and versions
(``site-packages``)                      of every distribution installed there
anywhere else (symuat's own checkout,    ``file:<real path>`` → SHA-256 of the
the derivations, a helper on             content, symlinks followed
``PYTHONPATH`` or behind a symlink)
=======================================  ============================================

>>> labels = module_sources(["symuat.ledger.dependencies"])
>>> any(label.startswith("file:") and label.endswith("dependencies.py") for label in labels)
True
"""

from __future__ import annotations

import functools
import hashlib
import os
import site
import stat
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType

__all__ = ["loaded_files", "module_sources", "file_sources", "referenced_modules", "tree_sources", "current_digest",
           "changed", "is_library_path", "listing_digest"]


@functools.cache
def _site_roots() -> tuple[Path, ...]:
    paths = {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
    paths.update(getattr(site, "getsitepackages", lambda: [])())
    user = getattr(site, "getusersitepackages", lambda: None)()
    if isinstance(user, str):
        paths.add(user)
    return tuple(Path(p).resolve() for p in paths if p)


@functools.cache
def _stdlib_roots() -> tuple[Path, ...]:
    return tuple(Path(sysconfig.get_paths()[k]).resolve() for k in ("stdlib", "platstdlib"))


def _installed(root: str) -> str:
    r"""SHA-256 of the ``name-version`` of every distribution installed in ``root`` (its ``*.dist-info`` and
    ``*.egg-info`` entries): installing, upgrading or removing any of them changes it.  A directory listing,
    much cheaper than reading every distribution's file list."""
    try:
        names = sorted(n for n in os.listdir(root) if n.endswith((".dist-info", ".egg-info")))
    except OSError:
        return "missing"
    return hashlib.sha256("\n".join(names).encode()).hexdigest()


def _under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path.is_relative_to(root) for root in roots)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def is_library_path(path: str | Path) -> bool:
    """Whether ``path`` (resolved) lies in the standard library or a ``site-packages`` directory."""
    return _under(Path(path), _site_roots()) or _under(Path(path), _stdlib_roots())


def listing_digest(path: str | Path) -> str | None:
    r"""SHA-256 of the sorted names in the directory ``path`` (links followed); ``None`` if it cannot be listed.

    >>> listing_digest("/no/such/directory") is None
    True
    """
    try:
        names = sorted(os.listdir(path))
    except (OSError, ValueError):
        return None
    return hashlib.sha256("\0".join(names).encode("utf-8", "surrogateescape")).hexdigest()


def loaded_files(names: Iterable[str]) -> dict[str, str]:
    r"""Module name → its file, for the loaded modules ``names`` that have one (built-in ones have none)."""
    out = {}
    for name in names:
        file = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(file, str) and file:
            out[name] = file
    return out


def module_sources(names: Iterable[str]) -> dict[str, str]:
    r"""Label → digest of the loaded modules ``names`` (see the module docstring; stdlib modules are left out)."""
    return file_sources(loaded_files(names))


def file_sources(files: Mapping[str, str]) -> dict[str, str]:
    r"""Label → digest of modules given as ``{module name: file}``; a file that is gone contributes nothing."""
    out: dict[str, str] = {}
    for name, file in sorted(files.items()):
        try:
            path = Path(file).resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        if not path.is_file():
            continue
        site_root = next((root for root in _site_roots() if path.is_relative_to(root)), None)
        if site_root is not None:
            out[f"site:{site_root.as_posix()}"] = _installed(str(site_root))
            continue
        if _under(path, _stdlib_roots()):
            continue
        out[f"file:{path.as_posix()}"] = _sha256(path)
    return out


def _is_module(value) -> ModuleType | None:
    if isinstance(value, ModuleType):
        return value
    name = getattr(value, "__module__", None)
    return sys.modules.get(name) if isinstance(name, str) else None


def referenced_modules(roots: Iterable[ModuleType]) -> list[str]:
    r"""The modules ``roots`` reference, transitively: modules, functions and classes in their globals.

    The walk does not enter the standard library or ``site-packages`` (those count by version, not content), so
    it stays within the user's own code: a helper imported from ``PYTHONPATH``, a symlinked directory or a
    sibling package, however early it was first imported.

    >>> import symuat.ledger.dependencies as here
    >>> "symuat.ledger.dependencies" in referenced_modules([here])
    True
    """
    seen: dict[str, None] = {}
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module.__name__ in seen:
            continue
        seen[module.__name__] = None
        file = getattr(module, "__file__", None)
        try:
            path = Path(file).resolve() if isinstance(file, str) else None
        except (OSError, RuntimeError):
            path = None
        if path is None or _under(path, _site_roots()) or _under(path, _stdlib_roots()):
            continue  # counted, not entered
        for value in list(vars(module).values()):
            found = _is_module(value)
            if found is not None and found.__name__ not in seen:
                todo.append(found)
    return sorted(seen)


def tree_sources(root: Path) -> dict[str, str]:
    r"""Label → digest of every file below ``root`` (data files a derivation may read), symlinks followed: a
    symlinked directory is walked too (each real directory once, so a link loop ends)."""
    out: dict[str, str] = {}
    seen: set[str] = set()
    for here, dirs, files in os.walk(root, followlinks=True):
        real_here = os.path.realpath(here)
        if real_here in seen or "__pycache__" in Path(here).parts:
            dirs[:] = []
            continue
        seen.add(real_here)
        dirs.sort()
        for name in sorted(files):
            try:
                real = (Path(here) / name).resolve(strict=True)
                if real.is_file():
                    out[f"file:{real.as_posix()}"] = _sha256(real)
            except (OSError, RuntimeError):
                continue
    return out


def current_digest(label: str) -> str | None:
    r"""What :func:`module_sources` would record for ``label`` now (``None`` if the file is gone).

    >>> current_digest("site:/no/such/directory")
    'missing'
    """
    kind, _, what = label.partition(":")
    if kind == "site":
        return _installed(what)
    if kind == "dir":
        return listing_digest(what)
    try:  # a file replaced by a FIFO or a device is a change, never read (it could block forever)
        return _sha256(Path(what)) if kind == "file" and stat.S_ISREG(os.stat(what).st_mode) else None
    except (OSError, ValueError):
        return None


def changed(sources: Mapping[str, str]) -> bool:
    r"""Whether any recorded source differs from what it is now (a missing or edited file, another version)."""
    return any(current_digest(label) != digest for label, digest in sources.items())
