r"""Audit many entries on several processes, in ledger order.

Entries hold callables (their claims), which do not pickle; the worker processes
are therefore forked from the process that loaded the entries and receive only
indices.  Each worker returns a record as plain data
(:func:`~symuat.ledger.snapshot.record_to_data`), and the results are put back in
ledger order, so the outcome does not depend on which process finished first.
Where ``fork`` is unavailable the entries are audited in this process.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from ..evidence.protocol import InstanceCache
from .audit import audit_entry
from .entry import Entry
from .snapshot import record_to_data

__all__ = ["default_jobs", "audit_data"]

#: Below this many entries the process start-up costs more than it saves.
_MIN_PARALLEL = 8

_ENTRIES: Sequence[Entry] = ()
_SEED = 0
_INSTANCES = InstanceCache()  # filled only in the forked workers, each in its own copy


def default_jobs() -> int:
    r"""Worker processes: ``$SYMUAT_JOBS`` if set, else the usable CPU count (at most 4).

    >>> default_jobs() >= 1
    True
    """
    env = os.environ.get("SYMUAT_JOBS", "").strip()
    if env.isdigit() and int(env) >= 1:
        return int(env)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 4))


def _audit_index(index: int) -> tuple[int, dict[str, Any]]:
    return index, record_to_data(audit_entry(_ENTRIES[index], seed=_SEED, instances=_INSTANCES))


def audit_data(entries: Sequence[Entry], seed: int = 0, jobs: int | None = None,
               on_done: Callable[[str], None] | None = None,
               instances: InstanceCache | None = None) -> list[dict[str, Any]]:
    r"""Audit ``entries`` (on ``jobs`` processes) and return each record as plain data, in ledger order.

    ``on_done(entry_id)`` is called in this process after each entry.  ``instances`` receives the sides built
    when the audit runs in this process (one job); worker processes keep their own.
    """
    global _ENTRIES, _SEED
    jobs = default_jobs() if jobs is None else jobs
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
        with ProcessPoolExecutor(max_workers=min(jobs, len(entries)),
                                 mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(_audit_index, i) for i in range(len(entries))]
            for fut in as_completed(futures):
                i, data = fut.result()
                results[i] = data
                done(entries[i].id)
    finally:
        _ENTRIES = ()
    return results  # type: ignore[return-value]
