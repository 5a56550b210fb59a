r"""User code under guard: whatever a derivation does, the audit ends with a verdict or one DerivationError.

Derivation modules, claim builders, references and prose proxies are user code.  :func:`user_code`
turns *every* exception they raise — ``BaseException`` included (``SystemExit``, a ``GeneratorExit``
raised by hand), only ``KeyboardInterrupt`` passes — into a :class:`~symuat.errors.DerivationError`
that names the entry (or module) and the ``file:line`` where it was raised.  :func:`time_limit` bounds
one entry (``$SYMUAT_ENTRY_TIMEOUT`` seconds, default :data:`DEFAULT_ENTRY_TIMEOUT`).  A process that
dies outright (``os._exit``, a crash) is caught one level up, by :mod:`symuat.ledger.isolation`, which
reads the progress that :func:`report` writes.

>>> with user_code("entry 'demo:x'"):  # doctest: +ELLIPSIS
...     1 / 0
Traceback (most recent call last):
...
symuat.errors.DerivationError: entry 'demo:x' raised ZeroDivisionError: division by zero (<doctest ...>:2)
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import signal
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import DerivationError, InvalidValueError, SymuatError

__all__ = ["DEFAULT_ENTRY_TIMEOUT", "MAX_ENTRY_TIMEOUT", "entry_timeout", "user_code", "time_limit", "report",
           "reporting_to", "defined_at", "die_with_parent"]

#: Seconds one entry may take unless ``$SYMUAT_ENTRY_TIMEOUT`` says otherwise (the slowest shipped entry takes ~3 s).
DEFAULT_ENTRY_TIMEOUT = 600.0
#: The largest per-entry limit accepted (a day).
MAX_ENTRY_TIMEOUT = 86400.0

_SYMUAT = Path(__file__).resolve().parents[1]
_PR_SET_PDEATHSIG = 1
_REPORT_FD: int | None = None


class EntryTimeout(BaseException):
    """Raised inside an entry that ran past its time limit (a BaseException: user code cannot swallow it)."""


def entry_timeout(value: Any = None) -> float:
    r"""The per-entry time limit in seconds: ``value``, else ``$SYMUAT_ENTRY_TIMEOUT``, else the default.

    >>> entry_timeout("30")
    30.0
    >>> entry_timeout("0")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symuat.errors.InvalidValueError: the per-entry time limit (SYMUAT_ENTRY_TIMEOUT) must be ... got '0'
    """
    raw = os.environ.get("SYMUAT_ENTRY_TIMEOUT", "") if value is None else value
    if isinstance(raw, str) and not raw.strip():
        return DEFAULT_ENTRY_TIMEOUT
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        seconds = math.nan
    if not (0 < seconds <= MAX_ENTRY_TIMEOUT):
        raise InvalidValueError("the per-entry time limit (SYMUAT_ENTRY_TIMEOUT) must be a number of seconds in "
                                f"(0, {MAX_ENTRY_TIMEOUT:g}], got {raw!r}")
    return seconds


def _where(tb) -> str:
    """``file:line`` of the innermost frame outside symuat (the user's code), else of the innermost frame."""
    frames = traceback.extract_tb(tb)
    if not frames:
        return ""
    outside = [f for f in frames if not Path(f.filename).resolve().is_relative_to(_SYMUAT)]
    frame = (outside or frames)[-1]
    return f"{frame.filename}:{frame.lineno}"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"SystemExit (sys.exit({exc.code!r}))"
    text = " ".join(str(exc).split())
    return type(exc).__name__ + (f": {text}" if text else "")


@contextmanager
def user_code(what: str, action: str = "raised") -> Iterator[None]:
    r"""Run user code; any exception but ``KeyboardInterrupt`` becomes one DerivationError naming ``what``.

    The message reads ``<what> <action> <Type>: <message> (<file>:<line>)``; a symuat error keeps its own text.
    """
    try:
        yield
    except KeyboardInterrupt:
        raise
    except DerivationError:
        raise
    except BaseException as exc:  # noqa: BLE001 - user code: SystemExit and friends are reported, not obeyed
        where = (f"{exc.filename}:{exc.lineno}" if isinstance(exc, SyntaxError) and exc.filename  # the user's file
                 else _where(exc.__traceback__))
        suffix = f" ({where})" if where else ""
        if isinstance(exc, EntryTimeout):
            raise DerivationError(f"{what} {exc}{suffix}") from None
        if isinstance(exc, SymuatError):
            raise DerivationError(f"{what}: {' '.join(str(exc).split())}{suffix}") from None
        raise DerivationError(f"{what} {action} {_describe(exc)}{suffix}") from None


@contextmanager
def time_limit(seconds: float, what: str) -> Iterator[None]:
    r"""Raise :class:`EntryTimeout` in this (main) thread once ``seconds`` have passed; a no-op in other threads."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(_signum, _frame):
        raise EntryTimeout(f"exceeded the time limit of {seconds:g} s (SYMUAT_ENTRY_TIMEOUT)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def die_with_parent() -> None:
    """In a forked process: the kernel kills it when its parent dies (Linux ``PR_SET_PDEATHSIG``)."""
    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def defined_at(obj: Any) -> str:
    r"""``file:line`` where a claim's first callable is defined, ``""`` when none is found.

    >>> defined_at(lambda: 0).startswith("<doctest")
    True
    """
    seen: set[int] = set()
    todo = [obj]
    while todo:
        item = todo.pop(0)
        if id(item) in seen:
            continue
        seen.add(id(item))
        code = getattr(item, "__code__", None)
        if code is not None:
            return f"{code.co_filename}:{code.co_firstlineno}"
        fields = getattr(item, "__dataclass_fields__", None)
        if fields:
            todo.extend(getattr(item, name, None) for name in fields)
        elif isinstance(item, dict):
            todo.extend(item.values())
    return ""


def report(kind: str, **payload: Any) -> None:
    r"""Tell the isolating parent process what this process is about to do (a no-op when nobody listens).

    One message is one ``write`` of at most a pipe buffer, so messages of several workers never interleave.
    """
    if _REPORT_FD is None:
        return
    line = (json.dumps({"kind": kind, **payload}, ensure_ascii=True) + "\n").encode()
    if len(line) <= 4096:
        try:
            os.write(_REPORT_FD, line)
        except OSError:
            pass


@contextmanager
def reporting_to(fd: int | None) -> Iterator[None]:
    """Send :func:`report` messages to ``fd`` (inherited by forked workers) while the block runs."""
    global _REPORT_FD
    previous, _REPORT_FD = _REPORT_FD, fd
    try:
        yield
    finally:
        _REPORT_FD = previous
