r"""Cached audits: recompute the ledger only when something it depends on changed.

The key is a SHA-256 over the symuat version, the content of every ``*.py`` file
of the symuat package itself (editing the engine invalidates the cache), every
file of the derivation sources (the ``derivations`` package or the
``--derivations`` directory), the Python, SymPy and NumPy versions, and the seed.
Records are kept as plain data (:mod:`symuat.ledger.snapshot`) in memory and in
``audit-<key>.json`` under the cache directory: ``$SYMUAT_CACHE_DIR``, else
``$XDG_CACHE_HOME/symuat``, else ``~/.cache/symuat``.  A file that does not parse,
has another format or key, or lacks a requested entry is ignored and rewritten;
failing to write the cache is not an error.
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib.util
import inspect
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from ..errors import DerivationError, InvalidValueError, LedgerError
from ..evidence.protocol import InstanceCache
from .audit import AuditRecord, check_seed
from .parallel import audit_data
from .registry import load_entries
from .snapshot import record_from_data

__all__ = ["cache_dir", "cache_key", "select_ids", "audit_ledger", "clear_memory"]

_FORMAT = 1
_KEEP_FILES = 16
_MEMORY: dict[str, dict[str, Any]] = {}


def cache_dir() -> Path:
    r"""Where audit results are stored: ``$SYMUAT_CACHE_DIR``, ``$XDG_CACHE_HOME/symuat`` or ``~/.cache/symuat``.

    >>> isinstance(cache_dir(), Path)
    True
    """
    if os.environ.get("SYMUAT_CACHE_DIR"):
        return Path(os.environ["SYMUAT_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache") / "symuat"


def _hash_tree(h, root: Path, pattern: str) -> None:
    for path in sorted(p for p in root.rglob(pattern) if p.is_file() and "__pycache__" not in p.parts):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())


def _derivation_root(package: str, directory: str | Path | None) -> Path:
    if directory is not None:
        root = Path(directory)
        if not root.is_dir():
            raise DerivationError(f"derivations directory {str(root)!r} does not exist")
        return root
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise DerivationError(f"derivation package {package!r} cannot be found")
    return Path(next(iter(spec.submodule_search_locations)))


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "unknown"


def _default_package() -> str:
    """The derivation package :func:`~symuat.ledger.registry.load_entries` reads by default."""
    param = inspect.signature(load_entries).parameters.get("package")
    return param.default if param is not None and isinstance(param.default, str) else "derivations"


def cache_key(seed: int = 0, package: str | None = None, directory: str | Path | None = None) -> str:
    r"""The SHA-256 key of an audit: symuat version and sources, derivation sources, library versions, seed.

    >>> len(cache_key(0)) == 64 and cache_key(0) != cache_key(1)
    True
    """
    h = hashlib.sha256()
    versions = (_FORMAT, _version("symuat"), sys.version, _version("sympy"), _version("numpy"), seed)
    h.update(repr(versions).encode())
    _hash_tree(h, Path(__file__).resolve().parents[1], "*.py")
    h.update(b"\0derivations\0")
    _hash_tree(h, _derivation_root(package or _default_package(), directory), "*")
    return h.hexdigest()


def select_ids(ids: Sequence[str], patterns: Iterable[str]) -> tuple[str, ...]:
    r"""The ids matching any pattern — an exact id, an id prefix ending at a dot, or a glob — in ledger order.

    >>> select_ids(["duat:eq9", "duat:eq9.step1", "duat:eq10"], ["duat:eq9"])
    ('duat:eq9', 'duat:eq9.step1')
    >>> select_ids(["duat:eq9", "duat:eq10"], ["*eq1?"])
    ('duat:eq10',)
    """
    patterns = tuple(patterns)
    if not patterns:
        return tuple(ids)

    def hit(i: str) -> bool:
        return any(i == p or i.startswith(p + ".") or fnmatch.fnmatchcase(i, p) for p in patterns)

    chosen = tuple(i for i in ids if hit(i))
    if not chosen:
        raise InvalidValueError(f"no ledger entry matches {', '.join(map(repr, patterns))}")
    return chosen


def _file(key: str) -> Path:
    return cache_dir() / f"audit-{key}.json"


def _read(key: str) -> dict[str, Any] | None:
    try:
        data = json.loads(_file(key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not (isinstance(data, dict) and data.get("format") == _FORMAT and data.get("key") == key
            and isinstance(data.get("ids"), list) and isinstance(data.get("records"), dict)):
        return None
    return data


def _write(key: str, data: dict[str, Any]) -> None:
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".audit-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, ensure_ascii=False)
        os.chmod(tmp, 0o644)
        os.replace(tmp, _file(key))
        old = sorted(directory.glob("audit-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for stale in old[_KEEP_FILES:]:
            stale.unlink(missing_ok=True)
    except OSError:
        return


def clear_memory() -> None:
    """Forget the in-memory cache (the files stay)."""
    _MEMORY.clear()


def _records(data: dict[str, Any], ids: Sequence[str]) -> tuple[AuditRecord, ...] | None:
    try:
        return tuple(record_from_data(data["records"][i]) for i in ids)
    except (KeyError, TypeError, LedgerError):
        return None


def audit_ledger(directory: str | Path | None = None, seed: int = 0, only: Iterable[str] = (),
                 use_cache: bool = True, jobs: int | None = None, package: str | None = None,
                 on_start: Callable[[int], None] | None = None,
                 on_done: Callable[[str], None] | None = None,
                 instances: InstanceCache | None = None) -> tuple[AuditRecord, ...]:
    r"""Audit the ledger (or the entries matching ``only``), from the cache when it is current.

    ``on_start(n)`` is called before ``n`` entries are audited afresh, ``on_done(id)`` after each.
    ``instances`` (an :class:`~symuat.evidence.protocol.InstanceCache`) keeps the sides built by an audit in
    this process (``jobs=1``) for later checks of the same claims, e.g. a seed sweep.
    Records come back in ledger order; their ``entry`` is an
    :class:`~symuat.ledger.snapshot.EntrySnapshot`.
    """
    check_seed(seed)
    only = tuple(only)
    key = cache_key(seed, package, directory) if use_cache else ""
    data = (_MEMORY.get(key) or _read(key)) if use_cache else None
    if data is not None:
        ids = select_ids(data["ids"], only)
        cached = _records(data, ids)
        if cached is not None:
            _MEMORY[key] = data
            return cached
    entries = load_entries(directory=directory) if package is None else load_entries(package, directory=directory)
    if not entries:
        where = (f"directory {str(directory)!r}" if directory is not None
                 else f"package {package or _default_package()!r}")
        raise DerivationError(f"no entries found in derivations {where}")
    all_ids = [e.id for e in entries]
    ids = select_ids(all_ids, only)
    data = data if data is not None and data["ids"] == all_ids else {"format": _FORMAT, "key": key, "ids": all_ids,
                                                                     "records": {}}
    missing = [e for e in entries if e.id in set(ids) and not _valid(data["records"].get(e.id))]
    if on_start is not None:
        on_start(len(missing))
    for e, rec in zip(missing, audit_data(missing, seed=seed, jobs=jobs, on_done=on_done, instances=instances)):
        data["records"][e.id] = rec
    if use_cache:
        _MEMORY[key] = data
        _write(key, data)
    records = _records(data, ids)
    assert records is not None  # every selected id was just audited
    return records


def _valid(rec: Any) -> bool:
    try:
        record_from_data(rec)
    except (LedgerError, TypeError):
        return False
    return True
