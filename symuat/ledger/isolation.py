r"""The audit in a child process: user code can neither end the command nor write to its standard output.

:func:`audit_isolated` forks a child that loads the derivations and audits them
(:func:`~symuat.ledger.cache.audit_ledger`, with its own workers) while the parent only listens.
The child's standard output is its standard error, so ``print`` in a derivation never reaches
``symuat audit --format json``.  The child and every worker report what they begin
(:func:`~symuat.ledger.guard.report`); when the child dies without an answer (``os._exit``, a crash, a
signal) the parent names the module or entry that was running, and when an entry runs far past its
time limit (a loop that ignores ``SIGALRM``) the parent kills the child.  Children die with the parent.
Sources the derivations register (:func:`~symuat.ledger.sources.register_source`) are registered in the
parent too, so that its reports can name them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from .. import errors
from ..errors import DerivationError
from .audit import AuditRecord
from .cache import audit_ledger
from .guard import die_with_parent, entry_timeout, reporting_to
from .parallel import default_jobs, frozen_heap
from .snapshot import record_from_data, record_to_data
from .sources import Origin, Paper, origins, register_source

__all__ = ["audit_isolated"]

#: The parent kills the child this long after an entry's own time limit has passed without an answer.
_GRACE = 30.0


def _send(fd: int, message: dict[str, Any]) -> None:
    data = (json.dumps(message, ensure_ascii=True) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def _source_data(source: Origin) -> dict[str, Any]:
    return {"class": type(source).__name__, "fields": dataclasses.asdict(source)}


def _register(data: dict[str, Any]) -> None:
    """Register in this process a source the derivations registered in the child (a paper's citation, …)."""
    cls = {"Paper": Paper, "Origin": Origin}.get(data.get("class"))
    if cls is None:
        raise DerivationError(f"the audit process sent a source of unknown kind {data.get('class')!r}")
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in data["fields"].items()}
    register_source(cls(**fields))


def _child(fd: int, kwargs: dict[str, Any]) -> None:  # pragma: no cover - runs in the forked child
    code = 0
    built_in = set(origins())
    try:
        os.setpgid(0, 0)  # its own process group: the parent ends everything user code starts (a Manager, …)
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # a background group may still write to the terminal
        die_with_parent()
        sys.stdout.flush()
        null = os.open(os.devnull, os.O_RDONLY)  # user code never reads the terminal (nor stops in the background)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        with reporting_to(fd):
            records = audit_ledger(**kwargs, on_start=lambda n: _send(fd, {"kind": "start", "n": n}),
                                   on_done=lambda i: _send(fd, {"kind": "done", "id": i}))
            _send(fd, {"kind": "records", "records": [record_to_data(r) for r in records],
                       "sources": [_source_data(o) for o in origins() if o not in built_in]})
    except errors.SymuatError as exc:
        _send(fd, {"kind": "error", "type": type(exc).__name__, "message": str(exc)})
    except BaseException as exc:  # noqa: BLE001 - anything else is reported, never obeyed
        _send(fd, {"kind": "error", "type": "DerivationError",
                   "message": f"the audit failed: {type(exc).__name__}: {' '.join(str(exc).split())}"})
    finally:
        try:
            sys.stderr.flush()
        finally:
            os._exit(code)


def _error(message: dict[str, Any]) -> errors.SymuatError:
    cls = getattr(errors, str(message.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, errors.SymuatError)):
        cls = DerivationError
    return cls(str(message.get("message")))


def _running(begun: dict[str, tuple[float, str]], loading: str | None) -> str:
    if begun:
        entry_id, (_, at) = next(iter(begun.items()))
        return f"while auditing entry {entry_id!r}" + (f" (claim defined at {at})" if at else "")
    return f"while loading derivation module {loading!r}" if loading else "before it reported anything"


class _Listener:
    """What the child reported so far: the entries begun, the module loading, and its answer."""

    def __init__(self, on_start: Callable[[int], None] | None, on_done: Callable[[str], None] | None) -> None:
        self.on_start, self.on_done = on_start, on_done
        self.begun: dict[str, tuple[float, str]] = {}
        self.loading: str | None = None
        self.answer: dict[str, Any] | None = None
        self.buffer = b""

    def read(self, fd: int) -> bool:
        """Read what is ready on ``fd``; ``False`` at the end of the pipe."""
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return False
        *lines, self.buffer = (self.buffer + chunk).split(b"\n")
        for line in lines:
            message = json.loads(line)
            kind = message.get("kind")
            if kind == "load":
                self.loading = message.get("module")
            elif kind == "begin":
                self.begun[message["id"]] = (time.monotonic(), message.get("at", ""))
            elif kind == "done":
                self.begun.pop(message["id"], None)
                if self.on_done is not None:
                    self.on_done(message["id"])
            elif kind == "start" and self.on_start is not None:
                self.on_start(message["n"])
            elif kind in ("records", "error"):
                self.answer = message
        return True


def _ended(pid: int) -> int | None:
    """Whether the child ``pid`` has ended (left unreaped, so that its process group stays addressable)."""
    if not hasattr(os, "waitid"):  # pragma: no cover - macOS: reaped; the group lives on while a member does
        done_pid, status = os.waitpid(pid, os.WNOHANG)
        return None if done_pid == 0 else status
    done = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    return None if done is None else 0


def _end_group(pid: int) -> None:
    """Kill the process group of the child ``pid``: the child and whatever it started that stayed in its group."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def audit_isolated(*, on_start: Callable[[int], None] | None = None, on_done: Callable[[str], None] | None = None,
                   **kwargs: Any) -> tuple[AuditRecord, ...]:
    r""":func:`~symuat.ledger.cache.audit_ledger` in a forked child; the same arguments and records.

    Without ``fork`` (not POSIX) the audit runs in this process.
    """
    limit = entry_timeout(kwargs.pop("timeout", None))
    default_jobs()  # a bad SYMUAT_JOBS is refused here, before anything runs
    if not hasattr(os, "fork"):  # pragma: no cover - not POSIX
        return audit_ledger(**kwargs, on_start=on_start, on_done=on_done)
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    with frozen_heap():
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os.close(read_fd)
            _child(write_fd, kwargs)
    os.close(write_fd)
    try:
        os.setpgid(pid, pid)  # also here, so that the group exists before the parent may signal it
    except OSError:  # the child has already ended
        pass
    listener = _Listener(on_start, on_done)
    killed = ""
    status = None
    pipe_open = True
    try:
        while status is None:  # wait on the child, not on the pipe: a grandchild may hold the pipe open forever
            if pipe_open and select.select([read_fd], [], [], 0.2)[0]:
                pipe_open = listener.read(read_fd)
            elif not pipe_open:
                time.sleep(0.02)
            status = _ended(pid)
            while status is not None and pipe_open and select.select([read_fd], [], [], 0)[0]:
                pipe_open = listener.read(read_fd)  # what the child wrote before it ended
            overdue = [i for i, (t0, _) in listener.begun.items() if time.monotonic() - t0 > limit + _GRACE]
            if overdue and not killed:
                killed = (f"entry {overdue[0]!r} ran past its time limit of {limit:g} s (SYMUAT_ENTRY_TIMEOUT) "
                          "and did not stop; the audit was killed")
                _end_group(pid)
    finally:
        _end_group(pid)  # whatever user code started in the child's group (a Manager's server, a pool) ends too
        os.close(read_fd)
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:  # pragma: no cover - already reaped by _ended (no waitid)
            pass
    answer, begun, loading = listener.answer, listener.begun, listener.loading
    if answer is not None and answer["kind"] == "records":
        for source in answer["sources"]:
            _register(source)
        return tuple(record_from_data(r) for r in answer["records"])
    if answer is not None:
        raise _error(answer)
    if killed:
        raise DerivationError(killed)
    how = (f"exit code {os.WEXITSTATUS(status)}" if os.WIFEXITED(status)
           else f"signal {os.WTERMSIG(status)}")
    raise DerivationError(f"the audit process ended ({how}) {_running(begun, loading)}: os._exit or a crash in "
                          "user code")
