"""Fault injection at what an audit reads: a data file the statement depends on changes, and the cache must notice.

Each derivation reads ``k`` from a data file and claims ``A = k A - A``: true for ``k = 2``, false for ``k = 3``.
Every case audits (proved), audits again (from the cache: the builder does not run), sets ``k = 3`` by the case's
own route (an edit, a re-pointed symlink, a new file in a listed folder…) and audits once more: the entry must be
recomputed and refuted.  A read that cannot be tracked (a FIFO, a device, ``/proc``, a file that vanished or changed
while it was read, a socket) must make the audit uncacheable: the builder runs every time, with the right verdict.
The builder logs each of its calls (several per audit: one per evidence level) in a file opened for appending
(what a derivation writes is never one of its sources): an audit from the cache adds nothing to the log.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
from pathlib import Path

import numpy
import pytest
from faults_support import HEADER, audit_json, run

from symuat.ledger.cache import audit_ledger, clear_memory

#: The claim ``A = kA - A`` with ``k`` from ``_k()``, which each case defines; ``_count()`` logs each run.
CLAIM = HEADER + '''
import os
from pathlib import Path

LOG = {log!r}
DATA = {data!r}

def _count():
    with open(LOG, "a") as fh:
        fh.write("x")

def _rhs(e, d):
    _count()
    return _k() * e["A"] - e["A"]

def entries():
    return [Entry(f"duat:eq{{i}}", Source("duat", f"Eq. {{i}}"), "A = kA - A", Status.PROVED,
                  Identity(shapes=lambda d: {{"A": (d["N"], d["N"])}}, lhs=lambda e, d: e["A"], rhs=_rhs,
                           dims=dims_grid(N=(1,))))
            for i in range(1, {n} + 1)]
'''

#: how the builder reads k → (the data file's name below the data folder, how k = 2 and k = 3 are written).
READERS = {
    "open": ('def _k():\n    with open(os.path.join(DATA, "k.txt")) as fh:\n        return int(fh.read())\n', "text"),
    "path_read_text": ('def _k():\n    return int(Path(DATA, "k.txt").read_text())\n', "text"),
    "os_open": ('def _k():\n    fd = os.open(os.path.join(DATA, "k.txt"), os.O_RDONLY)\n'
                '    try:\n        return int(os.read(fd, 64))\n    finally:\n        os.close(fd)\n', "text"),
    "json_load": ('import json\ndef _k():\n    with open(os.path.join(DATA, "k.txt")) as fh:\n'
                  '        return json.load(fh)\n', "text"),
    "numpy_load": ('import numpy\ndef _k():\n    return int(numpy.load(os.path.join(DATA, "k.npy"))[0])\n', "npy"),
    "numpy_loadtxt": ('import numpy\ndef _k():\n    return int(numpy.loadtxt(os.path.join(DATA, "k.txt")))\n',
                      "text"),
    "numpy_memmap": ('import numpy\ndef _k():\n    return int(numpy.load(os.path.join(DATA, "k.npy"), '
                     'mmap_mode="r")[0])\n', "npy"),
    "listing": ('def _k():\n    return len(os.listdir(DATA)) + 1\n', "count"),
    "glob": ('def _k():\n    return len(list(Path(DATA).glob("*.part"))) + 1\n', "count"),
}


def _set_k(data: Path, k: int, how: str) -> None:
    data.mkdir(parents=True, exist_ok=True)
    if how == "text":
        (data / "k.txt").write_text(str(k))
    elif how == "npy":
        numpy.save(data / "k.npy", numpy.array([k]))
    else:  # k - 1 files in the folder
        for i in range(k - 1):
            (data / f"{i}.part").write_text("")


def _derivation(root: Path, log: Path, data: Path, reader: str, n: int = 1) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "mine.py").write_text(CLAIM.format(log=str(log), data=str(data), n=n) + reader)
    return root


def _runs(log: Path) -> int:
    return len(log.read_text()) if log.exists() else 0


def _cached_then_refuted(root: Path, log: Path, change, **kw) -> None:
    """Proved and computed; proved from the cache (the builder does not run); ``change()``; refuted, computed."""
    first = _audit(root, **kw)
    assert set(first) == {True} and _runs(log) > 0
    calls = _runs(log)
    assert _audit(root, **kw) == first and _runs(log) == calls  # from the cache
    change()
    assert set(_audit(root, **kw)) == {False} and _runs(log) > calls  # recomputed: refuted


def _never_cached(root: Path, log: Path, before=None) -> None:
    """Proved three times, and the builder ran each time."""
    calls = 0
    for _ in range(3):
        if before is not None:
            before()
        assert _audit(root) == [True] and _runs(log) > calls
        calls = _runs(log)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMUAT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    clear_memory()
    yield tmp_path
    clear_memory()


def _audit(root: Path, **kw) -> list[bool]:
    """Whether each entry agrees with its record (proved): ``False`` is a refuted ``A = kA - A``."""
    return [r.agrees for r in audit_ledger(directory=root, **kw)]


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_data_file_read_by_a_builder_is_a_source(cache, reader):
    """Outside the derivation root, read by each route: an edit is seen even in the same process."""
    body, how = READERS[reader]
    data, log = cache / "data", cache / "runs.log"
    _set_k(data, 2, how)
    root = _derivation(cache / "d", log, data, body)
    _cached_then_refuted(root, log, lambda: _set_k(data, 3, how))


def test_a_file_in_a_symlinked_folder_under_the_root_is_a_source(cache):
    outside, log = cache / "outside", cache / "runs.log"
    _set_k(outside, 2, "text")
    root = _derivation(cache / "d", log, str(cache / "d" / "data"), READERS["open"][0])
    (root / "data").symlink_to(outside, target_is_directory=True)
    _cached_then_refuted(root, log, lambda: _set_k(outside, 3, "text"))


def test_a_re_pointed_symlinked_folder_is_a_change(cache):
    """The file behind the link is unchanged; the link now names another folder, whose k is 3."""
    first, second, log = cache / "first", cache / "second", cache / "runs.log"
    _set_k(first, 2, "text")
    _set_k(second, 3, "text")
    link = cache / "link"
    link.symlink_to(first, target_is_directory=True)
    root = _derivation(cache / "d", log, str(link), READERS["open"][0])

    def re_point():
        link.unlink()
        link.symlink_to(second, target_is_directory=True)

    _cached_then_refuted(root, log, re_point)


@pytest.mark.parametrize("when", ["import", "entries"])
def test_a_file_read_while_loading_is_in_the_key(cache, when):
    data, log = cache / "data", cache / "runs.log"
    _set_k(data, 2, "text")
    read = 'K = int(Path(DATA, "k.txt").read_text())\n'
    body = (read + "def _k():\n    return K\n" if when == "import" else
            "_K = []\n_entries = entries\ndef entries():\n    _K[:] = [int(Path(DATA, 'k.txt').read_text())]\n"
            "    return _entries()\ndef _k():\n    return _K[0]\n")
    root = _derivation(cache / "d", log, data, body)
    _cached_then_refuted(root, log, lambda: _set_k(data, 3, "text"))


def test_a_file_read_in_worker_processes_is_a_source(cache):
    data, log = cache / "data", cache / "runs.log"
    _set_k(data, 2, "text")
    root = _derivation(cache / "d", log, data, READERS["open"][0], n=9)  # 8 entries or more: worker processes
    _cached_then_refuted(root, log, lambda: _set_k(data, 3, "text"), jobs=2)


def test_the_command_line_recomputes_an_edited_data_file_and_exits_1(cache):
    """``symuat audit`` in its child process: proved (exit 0), then k = 3: refuted, exit 1."""
    outside, log = cache / "outside", cache / "runs.log"
    _set_k(outside, 2, "text")
    root = _derivation(cache / "d", log, str(cache / "d" / "data"), READERS["open"][0])
    (root / "data").symlink_to(outside, target_is_directory=True)
    assert audit_json(root)["entries"][0]["agrees"]
    calls = _runs(log)
    assert audit_json(root)["entries"][0]["agrees"] and _runs(log) == calls  # from the cache
    _set_k(outside, 3, "text")
    result = run(["audit", "--derivations", str(root), "--quiet"])
    assert result.exit_code == 1 and "1 entry disagrees with its record: duat:eq1" in result.stderr
    assert _runs(log) > calls


# --- reads that cannot be tracked: never cached ------------------------------------------------------------

#: how the builder reads (k is always 2) → what the test prepares at ``DATA`` (a path).
UNTRACKABLE = {
    "fifo": ('def _k():\n    fd = os.open(DATA, os.O_RDONLY | os.O_NONBLOCK)\n    os.close(fd)\n    return 2\n',
             lambda p: os.mkfifo(p)),
    "dev_urandom": ('def _k():\n    with open("/dev/urandom", "rb") as fh:\n        fh.read(1)\n    return 2\n',
                    None),
    "proc": ('def _k():\n    Path("/proc/self/status").read_text()\n    return 2\n', None),
    "proc_meminfo_read_by_the_derivation": ('def _k():\n    Path("/proc/meminfo").read_text()\n    return 2\n', None),
    "vanished": ('def _k():\n    with open(DATA, "w") as fh:\n        fh.write("2")\n'
                 '    k = int(Path(DATA).read_text())\n    os.unlink(DATA)\n    return k\n', None),
    "changed_while_read": ('def _k():\n    k = int(Path(DATA).read_text()[:1])\n'
                           '    with open(DATA, "a") as fh:\n        fh.write(" again")\n    return k\n',
                           lambda p: p.write_text("2")),
    "missing_then_default": ('def _k():\n    try:\n        return int(Path(DATA).read_text())\n'
                             '    except FileNotFoundError:\n        return 2\n', None),
    "directory_of_dev": ('def _k():\n    os.listdir("/dev")\n    return 2\n', None),
}


@pytest.mark.parametrize("case", sorted(UNTRACKABLE))
def test_an_untrackable_read_is_recomputed_every_time(cache, case):
    body, prepare = UNTRACKABLE[case]
    data, log = cache / "thing", cache / "runs.log"
    if prepare is not None:
        prepare(data)
    root = _derivation(cache / "d", log, data, body)
    _never_cached(root, log, (lambda: data.write_text("2")) if case == "changed_while_read" else None)


def test_a_socket_connection_is_recomputed_every_time(cache):
    path = cache / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    stop = threading.Event()

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            conn.sendall(b"2")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    body = ('import socket\ndef _k():\n    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n'
            '    s.connect(DATA)\n    k = int(s.recv(8))\n    s.close()\n    return k\n')
    try:
        _never_cached(_derivation(cache / "d", cache / "runs.log", path, body), cache / "runs.log")
    finally:
        stop.set()
        thread.join()
        server.close()


def test_a_data_file_replaced_by_a_fifo_never_blocks_the_cache_check(cache):
    """The cached digest of ``k.txt`` is checked against a FIFO: a change (never a read that waits for a writer);
    the builder then finds no file to read and the entry is recomputed."""
    data, log = cache / "data", cache / "runs.log"
    _set_k(data, 2, "text")
    body = ('def _k():\n    p = os.path.join(DATA, "k.txt")\n    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)\n'
            '    try:\n        return int(os.read(fd, 64) or b"3")\n    finally:\n        os.close(fd)\n')
    root = _derivation(cache / "d", log, data, body)

    def to_fifo():
        (data / "k.txt").unlink()
        os.mkfifo(data / "k.txt")  # an empty FIFO: the builder reads k = 3

    _cached_then_refuted(root, log, to_fifo)


def test_writing_a_file_does_not_make_it_a_source(cache):
    """The run log itself (opened for appending) changes on every run; the audit stays cached."""
    data, log = cache / "data", cache / "runs.log"
    _set_k(data, 2, "text")
    root = _derivation(cache / "d", log, data, READERS["open"][0])
    assert _audit(root) == [True]
    calls = _runs(log)
    for _ in range(3):
        assert _audit(root) == [True]
    assert _runs(log) == calls


def test_a_sqlite_database_is_a_source(cache):
    """SQLite opens its file in C; ``sqlite3.connect`` is the event that names it."""
    db, log = cache / "k.db", cache / "runs.log"
    with sqlite3.connect(db) as con:
        con.execute("create table k (v integer)")
        con.execute("insert into k values (2)")
    con.close()
    body = ("import sqlite3\ndef _k():\n    con = sqlite3.connect(DATA)\n    try:\n"
            "        return con.execute('select v from k').fetchone()[0]\n    finally:\n        con.close()\n")
    root = _derivation(cache / "d", log, db, body)

    def edit():
        with sqlite3.connect(db) as con:
            con.execute("update k set v = 3")
        con.close()

    _cached_then_refuted(root, log, edit)


#: k from a DUAT form the builder evaluates: ``duat_form`` checks the memory available (reads /proc/meminfo) first
FORM = ('import numpy as np\nfrom symuat.numeric import duat_form, random_stack\n'
        'def _k():\n    form = duat_form(random_stack(np.random.default_rng(0), 1, 4, 2, 8), np.ones((2, 4)))\n'
        '    assert np.all(np.isfinite(form.output))\n'
        '    return int(Path(DATA, "k.txt").read_text())\n')


def test_symuats_own_memory_probe_is_no_source_and_the_audit_is_cached(cache):
    """Evaluating a DUAT form reads /proc/meminfo (the memory check), yet the audit is cached; the data file read
    after it is still a source (an edit is recomputed)."""
    data, log = cache / "data", cache / "runs.log"
    _set_k(data, 2, "text")
    root = _derivation(cache / "d", log, data, FORM)
    _cached_then_refuted(root, log, lambda: _set_k(data, 3, "text"))


def test_a_memory_refusal_inside_a_builder_stops_the_audit_and_nothing_is_cached(cache, monkeypatch):
    """With 1 KiB available the form's memory check refuses: the audit stops with that refusal, named by entry (no
    level turns it into a verdict), and the next audit with memory computes afresh."""
    from symuat.errors import DerivationError

    data, log = cache / "data", cache / "runs.log"
    _set_k(data, 2, "text")
    root = _derivation(cache / "d", log, data, FORM)
    monkeypatch.setenv("SYMUAT_MEMORY_LIMIT", "1K")
    with pytest.raises(DerivationError, match=r"entry 'duat:eq1': out of memory evaluating the DUAT form at N=2"):
        _audit(root)
    assert not list((cache / "cache").glob("audit-*.cache"))
    monkeypatch.delenv("SYMUAT_MEMORY_LIMIT")
    assert _audit(root) == [True] and _runs(log) > 0
