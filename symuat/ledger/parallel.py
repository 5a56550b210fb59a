r"""Audit many entries on several processes, in ledger order.

Entries hold callables (their claims), which do not pickle; the worker processes
are therefore forked from the process that loaded the entries and receive only
indices.  Each worker returns a record as plain data
(:func:`~symuat.ledger.snapshot.record_to_data`), and the results are put back in
ledger order, so the outcome does not depend on which process finished first.
Where ``fork`` is unavailable the entries are audited in this process.  Workers die with their parent
(``PR_SET_PDEATHSIG``); a worker that dies (``os._exit`` in user code, a crash) is traced to its entry.  What a
worker reads (:mod:`symuat.ledger.reads`) is noted in this process's recordings, so the cache sees it.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any

from ..errors import DerivationError, InvalidValueError
from ..evidence.protocol import InstanceCache
from ..validation import check_positive_int
from .audit import audit_entry
from .dependencies import loaded_files
from .entry import Entry
from .guard import defined_at, die_with_parent
from .reads import Reads, note, recording
from .snapshot import record_to_data

__all__ = ["default_jobs", "audit_data", "imported_in_workers", "frozen_heap"]

#: Below this many entries the process start-up costs more than it saves.
_MIN_PARALLEL = 8

_ENTRIES: Sequence[Entry] = ()
_SEED = 0
_INSTANCES = InstanceCache()  # filled only in the forked workers, each in its own copy
_IMPORTED: dict[str, str] = {}  # modules the workers imported while auditing (the cache's dependencies)


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def default_jobs() -> int:
    r"""Worker processes: ``$SYMUAT_JOBS`` if set (1 to the usable CPU count), else the CPU count (at most 4).

    >>> default_jobs() >= 1
    True
    """
    env = os.environ.get("SYMUAT_JOBS", "").strip()
    if not env:
        return max(1, min(_cpus(), 4))
    if not env.isdigit() or not 1 <= int(env) <= _cpus():
        raise InvalidValueError(f"SYMUAT_JOBS must be a whole number from 1 to the {_cpus()} usable CPUs, "
                                f"got {env!r}")
    return int(env)


@contextmanager
def frozen_heap() -> Iterator[None]:
    r"""Every object alive is frozen (``gc.freeze``) while processes are forked inside, so that they never collect
    the heap they inherit: a collection touches every object, and so copies every page, of it (about a quarter of
    a cold audit's CPU).  This process unfreezes it afterwards, unless objects were frozen already (a forked audit
    process: it keeps its inherited heap frozen)."""
    inherited = gc.get_freeze_count() > 0
    gc.freeze()
    try:
        yield
    finally:
        if not inherited:
            gc.unfreeze()


def _audit_index(index: int) -> tuple[int, dict[str, Any], dict[str, str], dict[str, Any]]:
    before = set(sys.modules)
    entry = _ENTRIES[index]
    with recording() as reads:  # the files it read go back to the parent (symuat.ledger.reads)
        data = record_to_data(audit_entry(entry, seed=_SEED, instances=_INSTANCES))
    return index, data, loaded_files(set(sys.modules) - before), reads.to_data()


def _culprit(entries: Sequence[Entry], pending: Sequence[int]) -> DerivationError:
    """The entry whose process died: each unfinished entry is re-run alone in a fresh worker until one dies."""
    for i in pending:
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"),
                                 initializer=die_with_parent) as pool:
            try:
                pool.submit(_audit_index, i).result()
            except BrokenProcessPool:
                at = defined_at(entries[i].claim)
                return DerivationError(f"entry {entries[i].id!r} ended the process auditing it (os._exit or a "
                                       f"crash)" + (f"; its claim is defined at {at}" if at else ""))
            except DerivationError as exc:
                return exc
    return DerivationError("a worker process of the audit died (os._exit or a crash), and no single entry "
                           "reproduces it")


def audit_data(entries: Sequence[Entry], seed: int = 0, jobs: int | None = None,
               on_done: Callable[[str], None] | None = None,
               instances: InstanceCache | None = None) -> list[dict[str, Any]]:
    r"""Audit ``entries`` (on ``jobs`` processes) and return each record as plain data, in ledger order.

    ``on_done(entry_id)`` is called in this process after each entry.  ``instances`` receives the sides built
    when the audit runs in this process (one job); worker processes keep their own.
    """
    global _ENTRIES, _SEED
    jobs = default_jobs() if jobs is None else check_positive_int("jobs", jobs, InvalidValueError)
    done = on_done or (lambda _id: None)
    if jobs <= 1 or len(entries) < _MIN_PARALLEL or "fork" not in multiprocessing.get_all_start_methods():
        out, instances = [], InstanceCache() if instances is None else instances  # shared by the entries
        for e in entries:
            out.append(record_to_data(audit_entry(e, seed=seed, instances=instances)))
            done(e.id)
        return out
    _ENTRIES, _SEED = tuple(entries), seed
    results: list[dict[str, Any] | None] = [None] * len(entries)
    try:
        with ProcessPoolExecutor(max_workers=min(jobs, len(entries)), mp_context=multiprocessing.get_context("fork"),
                                 initializer=die_with_parent) as pool:
            with frozen_heap():  # the workers are forked at the first submit
                futures = [pool.submit(_audit_index, i) for i in range(len(entries))]
            try:
                for fut in as_completed(futures):
                    i, data, imported, reads = fut.result()
                    results[i] = data
                    _IMPORTED.update(imported)
                    note(Reads.from_data(reads))  # as if this process had read them
                    done(entries[i].id)
            except BrokenProcessPool:
                raise _culprit(entries, [i for i, r in enumerate(results) if r is None]) from None
            except BaseException:
                for fut in futures:
                    fut.cancel()
                raise
    finally:
        _ENTRIES = ()
    return results  # type: ignore[return-value]


def imported_in_workers() -> dict[str, str]:
    """``{module: file}`` of the modules the worker processes of this process's audits imported while auditing."""
    return dict(_IMPORTED)
