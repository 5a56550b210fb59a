r"""Cached audits: computed evidence is reused only where nothing it depends on changed (docs/cache.md).

The derivations are always loaded; the cache only supplies the *computed* part of a record (status,
evidence, counterexample) for an entry whose identity — id, statement, recorded status, note,
correction and claim — is unchanged.  The key (:func:`cache_key`) covers the Python version, the seed,
symuat's own files, every file below the derivation root and every module the derivations reference:
by content, symlinks followed (a helper on ``PYTHONPATH``), or by the versions installed in its
``site-packages``.  Modules imported while auditing are recorded in the file
and re-checked when it is read.  A file is trusted only when its HMAC verifies under this user's key
(:mod:`symuat.ledger.signing`); anything unreadable, tampered, hostile or stale is a miss and is
recomputed.  Files are ``audit-<key>.cache`` in ``$SYMUAT_CACHE_DIR``, else ``$XDG_CACHE_HOME/symuat``,
else ``~/.cache/symuat``; failing to write the cache is not an error.
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import DerivationError, InvalidValueError, LedgerError
from ..evidence.protocol import InstanceCache
from .audit import AuditRecord, check_seed, with_coq, with_correction_coq
from .coq import coqc_version, correction_key, find_project, linked_evidence_later
from .dependencies import changed, file_sources, module_sources, referenced_modules, tree_sources
from .parallel import audit_data, imported_in_workers
from .reads import Reads, read_sources, recording
from .registry import USER_PACKAGE, load_entries
from .signing import sign, user_key, verify
from .snapshot import claim_kind, entry_data, record_from_data, record_to_data

__all__ = ["cache_dir", "cache_key", "id_matches", "select_ids", "audit_ledger", "clear_memory"]

_FORMAT = 3  # 3: evidence keeps its witness
_MAGIC = "symuat-audit-cache"
_MAX_BYTES = 256 * 2**20
_KEEP_FILES = 16
_MEMORY: dict[str, dict[str, Any]] = {}
#: (package, directory) → what loading its derivations read in this process.  A package is imported once per
#: process, so what it read at import stays a source of every later audit of it; a directory is imported afresh.
_LOADS: dict[tuple[str | None, str | None], Reads] = {}


def cache_dir() -> Path:
    r"""Where audit results are stored: ``$SYMUAT_CACHE_DIR``, ``$XDG_CACHE_HOME/symuat`` or ``~/.cache/symuat``.

    >>> isinstance(cache_dir(), Path)
    True
    """
    if os.environ.get("SYMUAT_CACHE_DIR"):
        return Path(os.environ["SYMUAT_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache") / "symuat"


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


def _default_package() -> str:
    """The derivation package :func:`~symuat.ledger.registry.load_entries` reads by default."""
    param = inspect.signature(load_entries).parameters.get("package")
    return param.default if param is not None and isinstance(param.default, str) else "derivations"


def _derivation_modules(package: str | None, directory: str | Path | None) -> list[ModuleType]:
    """The loaded modules of the derivations: the package (or the ``--derivations`` directory's package)."""
    name = USER_PACKAGE if directory is not None else (package or _default_package())
    return [m for n, m in sorted(sys.modules.items()) if (n == name or n.startswith(name + ".")) and m is not None]


def cache_key(seed: int = 0, package: str | None = None, directory: str | Path | None = None,
              read: dict[str, str] | None = None, coq: bool = True) -> str:
    r"""The SHA-256 key of an audit of the derivations as loaded now (load them first).

    It covers the cache format, the Python version, the seed, every file of the symuat package, every file below
    the derivation root (data files included), every module the derivation modules reference, transitively
    (:func:`~symuat.ledger.dependencies.referenced_modules`: a helper on ``PYTHONPATH`` or behind a symlink, by
    content; an installed distribution, by the versions installed beside it), and the Coq project with the
    ``coqc`` that checks it (or, ``coq=False``, that the Coq level is left out); and ``read``, the labels and digests
    of what loading the derivations read (:func:`~symuat.ledger.reads.read_sources`).

    >>> _ = load_entries()
    >>> len(cache_key(0)) == 64 and cache_key(0) != cache_key(1) and cache_key(0) != cache_key(0, coq=False)
    True
    """
    h = hashlib.sha256()
    h.update(repr((_FORMAT, sys.version, seed)).encode())
    root = _derivation_root(package or _default_package(), directory)
    sources = {**tree_sources(Path(__file__).resolve().parents[1]), **tree_sources(root),
               **module_sources(referenced_modules(_derivation_modules(package, directory)))}
    project = find_project(root)
    if not coq:  # left out: every linked theorem is undecided with its own reason, whatever the project holds
        sources["coq level"] = "left out"
    elif project is not None:  # the coq level: the project's files and the coqc that compiles them
        sources.update({**tree_sources(project.root), "coqc": coqc_version()})
    for label, digest in (read or {}).items():
        if not _counted_by_content(label, digest, sources):
            sources[label] = digest
    for label in sorted(sources):
        h.update(label.encode() + b"\0" + sources[label].encode() + b"\0")
    return h.hexdigest()


def _counted_by_content(label: str, digest: str, sources: dict[str, str]) -> bool:
    """Whether a file read through another path (a symlinked package: ``symuat_paper/x.py`` for
    ``derivations/x.py``) is a file the key already covers, with the same content.  Such a read is noted only when
    the module is first imported during the audit, so counting it would make the key depend on what this process
    happened to import before (a test session that imported the derivations at collection)."""
    kind, _, path = label.partition(":")
    if kind != "file":
        return False
    try:
        real = Path(path).resolve(strict=True).as_posix()
    except (OSError, RuntimeError):
        return False
    return sources.get(f"file:{real}") == digest


def id_matches(entry_id: str, pattern: str) -> bool:
    r"""Whether ``pattern`` selects ``entry_id``: the id itself, an id prefix ending at a dot, or a glob.

    >>> [id_matches("duat:eq9.step1", p) for p in ("duat:eq9", "duat:eq", "*step?", "duat:eq9.step1")]
    [True, False, True, True]
    """
    return entry_id == pattern or entry_id.startswith(pattern + ".") or fnmatch.fnmatchcase(entry_id, pattern)


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
        return any(id_matches(i, p) for p in patterns)

    chosen = tuple(i for i in ids if hit(i))
    if not chosen:
        raise InvalidValueError(f"no ledger entry matches {', '.join(map(repr, patterns))}")
    return chosen


def _file(key: str) -> Path:
    return cache_dir() / f"audit-{key}.cache"


def _read(key: str, secret: bytes) -> dict[str, Any] | None:
    r"""The verified content of the cache file of ``key``, or ``None`` for anything else.

    The file is ``<header> <mac>\n<json>``; the MAC is checked before the JSON is parsed, so a file this
    user's symuat did not write is never interpreted.  Any failure while reading (a missing, huge,
    unreadable, tampered or hostile file) is a miss.
    """
    path = _file(key)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_BYTES:  # a FIFO or /dev/zero would never end
            return None
        with path.open("rb") as fh:
            raw = fh.read(_MAX_BYTES + 1)
        header, _, payload = raw.partition(b"\n")
        magic, version, mac = header.decode("ascii").split(" ")
        if magic != _MAGIC or version != str(_FORMAT) or not verify(secret, payload, mac):
            return None
        data = json.loads(payload.decode("utf-8"))
    except Exception:  # noqa: BLE001 - deep nesting (RecursionError), bad bytes, I/O: all mean "not cached"
        return None
    if not (isinstance(data, dict) and data.get("key") == key and isinstance(data.get("records"), dict)
            and isinstance(data.get("late"), dict) and not changed(data["late"])):
        return None
    return data


def _write(key: str, data: dict[str, Any], secret: bytes) -> None:
    directory = cache_dir()
    payload = json.dumps(data, ensure_ascii=False).encode("utf-8")  # key order kept: it is the order shown
    tmp = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".audit-", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(f"{_MAGIC} {_FORMAT} {sign(secret, payload)}\n".encode("ascii") + payload)
        os.chmod(tmp, 0o644)
        os.replace(tmp, _file(key))
        tmp = None
        old = sorted(directory.glob("audit-*.cache"), key=lambda p: p.stat().st_mtime, reverse=True)
        for stale in old[_KEEP_FILES:]:
            stale.unlink(missing_ok=True)
    except OSError:
        return
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def clear_memory() -> None:
    """Forget the in-memory cache (the files stay)."""
    _MEMORY.clear()


def _loaded(package: str | None, directory: str | Path | None, reads: Reads) -> Reads:
    """What loading the derivations read: this load's reads, and for a package also those of earlier loads in
    this process (its modules were imported, and read their files, only the first time)."""
    where = (package, str(Path(directory).resolve()) if directory is not None else None)
    if directory is not None:
        _LOADS[where] = reads
        return reads
    _LOADS.setdefault(where, Reads()).update(reads)
    return _LOADS[where]


def _describe(value: Any, depth: int = 0) -> Any:
    """A plain description of a claim: its types, declared data and where its callables are defined."""
    if depth > 6:
        return "..."
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    code = getattr(value, "__code__", None)
    if code is not None:
        return f"<{getattr(value, '__qualname__', '?')} at {code.co_filename}:{code.co_firstlineno}>"
    fields = getattr(value, "__dataclass_fields__", None)
    if fields:
        return {"type": type(value).__qualname__,
                **{name: _describe(getattr(value, name, None), depth + 1) for name in fields}}
    if isinstance(value, Mapping):
        return {str(k): _describe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_describe(v, depth + 1) for v in value]
    return f"<{type(value).__qualname__}>"


def _identity(entry) -> dict[str, Any]:
    """What must be unchanged for a cached record of ``entry`` to stand: its printed part and its claim."""
    return {**entry_data(entry), "claim": _describe(entry.claim), "coq": _describe(entry.coq),
            "correction_claim": _describe(entry.correction.identity) if entry.correction is not None else None,
            "correction_coq": _describe(getattr(entry.correction, "coq", None))}


def _cached(data: dict[str, Any], entry) -> AuditRecord | None:
    held = data["records"].get(entry.id)
    try:
        if not isinstance(held, dict) or held.get("identity") != _identity(entry):
            return None
        printed = entry_data(entry)
        if {k: held["record"].get(k) for k in printed} != printed:  # the printed part always comes from the entry
            return None
        return record_from_data(held["record"])
    except (KeyError, TypeError, LedgerError):
        return None


def audit_ledger(directory: str | Path | None = None, seed: int = 0, only: Iterable[str] = (),
                 use_cache: bool = True, jobs: int | None = None, package: str | None = None,
                 on_start: Callable[[int], None] | None = None,
                 on_done: Callable[[str], None] | None = None,
                 instances: InstanceCache | None = None, coq: bool = True) -> tuple[AuditRecord, ...]:
    r"""Audit the ledger (or the entries matching ``only``), taking computed evidence from the cache when it may.

    The derivations are always loaded.  A cached record stands in for an entry only when the cache file
    verifies under this user's key (:mod:`symuat.ledger.signing`), every source the audit depended on is
    unchanged (:func:`cache_key`, and the modules imported while auditing), and the entry's identity — id,
    statement, recorded status, note, correction and claim — equals the live entry's; anything else is
    recomputed (docs/cache.md).
    ``on_start(n)`` is called before ``n`` entries are audited afresh, ``on_done(id)`` after each.
    ``instances`` (an :class:`~symuat.evidence.protocol.InstanceCache`) keeps the sides built by an audit in
    this process (``jobs=1``) for later checks of the same claims, e.g. a seed sweep.
    ``coq=False`` leaves the Coq level out (no compile): each linked theorem is undecided
    (:data:`~symuat.ledger.coq.LEFT_OUT`), and the other levels decide the status alone.
    Records come back in ledger order; their ``entry`` is an
    :class:`~symuat.ledger.snapshot.EntrySnapshot`.
    """
    check_seed(seed)
    only = tuple(only)
    with recording() as loading:  # every file the derivations open while loading (symuat.ledger.reads)
        entries = (load_entries(directory=directory) if package is None
                   else load_entries(package, directory=directory))
    loaded = _loaded(package, directory, loading)
    if not entries:
        where = (f"directory {str(directory)!r}" if directory is not None
                 else f"package {package or _default_package()!r}")
        raise DerivationError(f"no entries found in derivations {where}")
    ids = set(select_ids([e.id for e in entries], only))
    chosen = [e for e in entries if e.id in ids]
    read, untrackable = read_sources(loaded)
    secret = user_key(outside=cache_dir()) if use_cache and not untrackable else None  # else: never cached
    key = cache_key(seed, package, directory, read, coq) if secret is not None else ""
    data = _MEMORY.get(key) if secret is not None else None
    if data is not None and changed(data["late"]):  # a file read while auditing changed since: nothing stands
        data = None
    if data is None and secret is not None:
        data = _read(key, secret)
    if data is None:
        data = {"key": key, "late": {}, "records": {}}
    found = {e.id: _cached(data, e) for e in chosen}
    missing = [e for e in chosen if found[e.id] is None]
    if on_start is not None and missing:
        on_start(len(missing))
    before, before_workers = set(sys.modules), imported_in_workers()
    coq_later = linked_evidence_later(missing, find_project(_derivation_root(package or _default_package(), directory)),
                                      keep=cache_dir() / "coq" if use_cache else None, run=coq)  # .vo reused by content
    with recording() as auditing:  # what the entries read, in worker processes too
        try:
            audited = audit_data(missing, seed=seed, jobs=jobs, on_done=on_done, instances=instances)
        except BaseException:
            coq_later(cancel=True)
            raise
        linked = coq_later()
    late_read, late_untrackable = read_sources(auditing)
    fresh = {}
    for e, rec in zip(missing, audited):
        record = record_from_data(rec)
        if e.id in linked:
            record = with_coq(record, linked[e.id], denial=claim_kind(e) == "denial")
        if correction_key(e.id) in linked:
            record = with_correction_coq(record, linked[correction_key(e.id)])
        if e.id in linked or correction_key(e.id) in linked:
            rec = record_to_data(record)
        fresh[e.id] = {"identity": _identity(e), "record": rec}
        found[e.id] = record
    if secret is not None and missing and not late_untrackable:  # a FIFO, a device, a vanished file: not stored
        in_workers = {n: f for n, f in imported_in_workers().items() if n not in before_workers}
        data = {"key": key,
                "late": {**data["late"], **module_sources(set(sys.modules) - before), **file_sources(in_workers),
                         **late_read},
                "records": {**data["records"], **fresh}}
        _MEMORY[key] = data
        _write(key, data, secret)
    elif secret is not None and not missing:
        _MEMORY[key] = data
    return tuple(found[e.id] for e in chosen)  # type: ignore[misc]
