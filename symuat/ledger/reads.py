r"""What an audit reads: every file user code opens while the derivations load and while entries are audited.

A cached verdict may stand only while everything it was computed from is unchanged (docs/cache.md).  Imports
are one way a derivation reads; ``open``, ``numpy.load``, ``Path.read_text`` and ``os.listdir`` are others.
Python raises an *audit event* for each (:pep:`578`): ``open`` (``open``, ``io.open_code``, ``os.open`` and all
that build on them), ``sqlite3.connect``, ``os.listdir`` and ``os.scandir``.  One hook
(:func:`sys.addaudithook`, installed once per process; hooks cannot be removed) notes them while a
:func:`recording` is active, in worker processes too (:mod:`symuat.ledger.parallel` sends theirs back).
:func:`read_sources` turns what was noted into labels and digests for the cache key:

=========================================  ===================================================================
what was read                              what counts
=========================================  ===================================================================
a regular file                             ``file:<path as opened>`` → SHA-256 of its content, symlinks
                                           followed when it is read again (a re-pointed link is a change)
a directory listed (or opened)             ``dir:<path as listed>`` → SHA-256 of its sorted names
a file of the standard library or of       nothing / ``site:<directory>`` (versions, as for modules)
``site-packages``; a ``.pyc``; /dev/null
a FIFO, a device, a socket, anything in    *untrackable*: the audit is not cached
``/proc`` or ``/sys``, a file that is gone
or changed while the audit ran, a network
connection
symuat's memory probe: ``/proc/meminfo``   nothing: it can only refuse, and a refusal stops the audit
read before a DUAT form is evaluated       (:func:`symuat.numeric.memory.probing`)
=========================================  ===================================================================

Files opened only for writing, or created or truncated by the opening (``"w"``, ``"x"``, ``O_TRUNC``,
``O_CREAT|O_EXCL``), hold what user code wrote itself and are not sources.  An already open descriptor
(``open(3)``: a pipe from a program the derivation ran) is not followed: what a program computes is outside
this model, like a file a C extension opens with ``fopen`` (HDF5, Arrow) or a file whose existence alone is
tested (``Path.exists`` raises no event).

>>> import tempfile, pathlib
>>> with tempfile.TemporaryDirectory() as d:
...     data = pathlib.Path(d, "k.txt")
...     _ = data.write_text("2")
...     with recording() as reads:
...         _ = data.read_text()
...     labels, untrackable = read_sources(reads)
>>> [label.startswith("file:") and label.endswith("k.txt") for label in labels], untrackable
([True], [])
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..numeric.memory import probing
from .dependencies import file_sources, is_library_path, listing_digest

__all__ = ["Reads", "recording", "note", "read_sources"]

#: Directories whose "files" are the kernel's live state, never content that stays put.
_VOLATILE = ("/proc", "/sys")


def _signature(path: str) -> list[int] | None:
    """What must be unchanged between the open and the hashing: device, inode, size and modification time."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


@dataclass
class Reads:
    r"""What user code read while a :func:`recording` was active (plain data: it travels from worker processes).

    ``files`` and ``listings`` map each absolute path opened for reading, or listed, to its :func:`os.stat`
    signature at the first open (``None``: it could not be examined); ``other`` holds what can never be tracked
    (a network connection).
    """

    files: dict[str, list[int] | None] = field(default_factory=dict)
    listings: dict[str, list[int] | None] = field(default_factory=dict)
    other: set[str] = field(default_factory=set)

    def update(self, more: Reads) -> None:
        """Add ``more`` (the first signature of a file or directory is kept)."""
        for mine, theirs in ((self.files, more.files), (self.listings, more.listings)):
            for path, sig in theirs.items():
                mine.setdefault(path, sig)
        self.other |= more.other

    def to_data(self) -> dict[str, Any]:
        return {"files": dict(self.files), "listings": dict(self.listings), "other": sorted(self.other)}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Reads:
        return cls(dict(data["files"]), dict(data["listings"]), set(data["other"]))


#: The audit events noted: files opened, SQLite databases opened (by SQLite's own C code), directories listed,
#: and network connections (never trackable).
_EVENTS = frozenset({"open", "sqlite3.connect", "os.listdir", "os.scandir", "socket.connect", "urllib.Request"})
_ACTIVE: list[Reads] = []
_LOCK = threading.Lock()
_GUARD = threading.local()
_INSTALLED: list[bool] = []


def _fresh_lock() -> None:
    """In a forked child: a new lock (another thread of the parent may have held the old one at the fork)."""
    global _LOCK
    _LOCK = threading.Lock()


os.register_at_fork(after_in_child=_fresh_lock)


def _self_written(mode: Any, flags: Any) -> bool:
    """Whether an open only writes, or creates or truncates what it opens (content the opener writes itself)."""
    if isinstance(mode, str):
        return "w" in mode or "x" in mode or ("a" in mode and "+" not in mode)
    if not isinstance(flags, int):
        return False
    return (flags & os.O_ACCMODE) == os.O_WRONLY or bool(flags & os.O_TRUNC) \
        or (flags & (os.O_CREAT | os.O_EXCL)) == (os.O_CREAT | os.O_EXCL)


def _hook(event: str, args: tuple) -> None:
    if not _ACTIVE or getattr(_GUARD, "busy", False) or probing():  # the memory probe is no source (its doc)
        return
    if event not in _EVENTS:
        return
    _GUARD.busy = True
    try:
        if event in ("open", "sqlite3.connect"):
            path, mode, flags = (tuple(args) + (None, None, None))[:3] if event == "open" else (args[0], "r", None)
            if isinstance(path, int) or path is None or path == ":memory:" or _self_written(mode, flags):
                return
            where = os.path.abspath(os.fsdecode(path))
            sig = _signature(where)
            with _LOCK:
                for reads in _ACTIVE:
                    reads.files.setdefault(where, sig)
        elif event in ("os.listdir", "os.scandir"):
            path = args[0] if args else None
            if isinstance(path, int):
                return
            where = os.path.abspath(os.fsdecode(path if path is not None else "."))
            sig = _signature(where)
            with _LOCK:
                for reads in _ACTIVE:
                    reads.listings.setdefault(where, sig)
        else:
            what = f"{event} {args[1] if event == 'socket.connect' and len(args) > 1 else args[0] if args else ''}"
            with _LOCK:
                for reads in _ACTIVE:
                    reads.other.add(what)
    except Exception:  # noqa: BLE001 - an odd argument: noted as untrackable rather than raised into user code
        with _LOCK:
            for reads in _ACTIVE:
                reads.other.add(f"{event} (arguments not understood)")
    finally:
        _GUARD.busy = False


def _install() -> None:
    if not _INSTALLED:
        sys.addaudithook(_hook)
        _INSTALLED.append(True)


@contextmanager
def recording() -> Iterator[Reads]:
    """Note every file read (opened, listed) in this process until the block ends; nested recordings all see it."""
    _install()
    reads = Reads()
    with _LOCK:
        _ACTIVE.append(reads)
    try:
        yield reads
    finally:
        with _LOCK:  # by identity: two recordings that read the same are equal, not the same
            del _ACTIVE[next(i for i, r in enumerate(_ACTIVE) if r is reads)]


def note(reads: Reads) -> None:
    """Add what another process read (a worker's :class:`Reads`) to every active recording of this one."""
    with _LOCK:
        for active in _ACTIVE:
            active.update(reads)


def _file(path: str, sig: list[int] | None) -> tuple[str, str] | str:
    """``(label, digest)`` of a file read, ``""`` when it does not count, or why it cannot be tracked."""
    if path == os.devnull or (path.endswith(".pyc") and "__pycache__" in Path(path).parts):
        return ""
    real = os.path.realpath(path)
    if is_library_path(real):
        return next(iter(file_sources({"_": real}).items()), "")
    if real.startswith(tuple(v + "/" for v in _VOLATILE)):
        return f"{path} is live kernel state"
    try:
        st = os.stat(path)
    except OSError:
        return f"{path} is gone"
    if stat.S_ISDIR(st.st_mode):
        return _listing(path, sig)
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file (a FIFO, device or socket)"
    if sig is None or sig != _signature(path):
        return f"{path} changed while the audit read it"
    try:
        with open(path, "rb") as fh:  # noqa: PTH123 - the path as opened, links followed
            return f"file:{path}", hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return f"{path} cannot be read again"


def _listing(path: str, sig: list[int] | None) -> tuple[str, str] | str:
    """``(label, digest)`` of a directory listed, ``""`` when it does not count, or why it cannot be tracked."""
    real = os.path.realpath(path)
    if is_library_path(real) or "__pycache__" in Path(path).parts:
        return ""
    if real.startswith(tuple(v + "/" for v in (*_VOLATILE, "/dev"))) or real in (*_VOLATILE, "/dev"):
        return f"{path} is live kernel state"
    if sig is None or sig != _signature(path):
        return f"{path} changed while the audit listed it"
    digest = listing_digest(path)
    if digest is None:
        return f"{path} cannot be listed again"
    return f"dir:{path}", digest


def read_sources(reads: Reads) -> tuple[dict[str, str], list[str]]:
    r"""Label → digest of what was read (see the module docstring), and why any of it cannot be tracked."""
    labels: dict[str, str] = {}
    untrackable = sorted(reads.other)
    for found in [*(_file(p, s) for p, s in sorted(reads.files.items())),
                  *(_listing(p, s) for p, s in sorted(reads.listings.items()))]:
        if isinstance(found, tuple):
            labels[found[0]] = found[1]
        elif found:
            untrackable.append(found)
    return labels, untrackable
