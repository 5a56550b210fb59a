r"""Where a sweep's prompts are computed: in this process, in a local process pool, or on Ray.

Each engine takes the work items (JSON payloads, :func:`~symuat.sweep.runner.encode_prompt`) and yields batches
of finished rows (JSON), in any order; the sweep writes them.  Every worker holds one loaded model
(:class:`~symuat.sweep.runner.PromptRunner`) and computes with one thread, so that a row's bits do not depend on
the engine.

- ``serial``: this process (a baseline, and for debugging).
- ``local`` (default): a pool of ``workers`` processes on this machine.  A worker that dies (killed, out of
  memory, a crash) breaks the pool: the unfinished batches go to a new pool; a batch that breaks it twice is
  split into single prompts, and a prompt that kills its worker twice becomes an error row with that reason.
- ``ray``: Ray Data's ``map_batches`` with a fixed pool of actors (``ActorPoolStrategy``), each holding a model;
  Ray restarts a dead actor and re-runs its batch.  ``address`` joins a running cluster, else ``ray.init()``
  starts one on this machine with ``workers`` CPUs.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any, Optional

from ..errors import UnsupportedError
from ..models import torch_threads
from .runner import PromptRunner, decode_prompt, error_row

__all__ = ["ENGINES", "run_engine", "one_thread"]

ENGINES = ("local", "serial", "ray")
#: the thread variables a worker is started with
_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: times a batch may break the local pool before it is split, and a single prompt before it is an error row
_RETRIES = 2


@contextmanager
def one_thread() -> Iterator[None]:
    """BLAS and torch with one thread in this process, and in the processes started meanwhile; restored after."""
    saved = {v: os.environ.get(v) for v in _THREADS}
    os.environ.update({v: "1" for v in _THREADS})
    try:
        with torch_threads(1):
            yield
    finally:
        for v, old in saved.items():
            if old is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = old


# ---- serial ---------------------------------------------------------------------------------------------------------
def _serial(directory: str, options: dict, batches: list) -> Iterator[list]:
    runner = PromptRunner(directory, options)
    for batch in batches:
        yield runner({"payload": batch})["row"]


# ---- local process pool ---------------------------------------------------------------------------------------------
_WORKER: Optional[PromptRunner] = None
_HELD: list = []  # the worker's one-thread setting, entered once and held for the process's life


def _init_worker(directory: str, options: dict) -> None:
    global _WORKER
    _HELD.append(torch_threads(1))
    _HELD[-1].__enter__()
    _WORKER = PromptRunner(directory, options)


def _run_batch(batch: list) -> list:
    assert _WORKER is not None, "the worker was not initialised"
    return _WORKER({"payload": batch})["row"]


def _died(payload: str) -> str:
    key, prompt = decode_prompt(payload)
    return json.dumps(error_row(key, prompt, "the worker process died twice while computing this prompt "
                                             "(killed, out of memory, or a crash)"))


def _local(directory: str, options: dict, batches: list, workers: int) -> Iterator[list]:
    pending = [(tuple(b), 0) for b in batches]  # (batch, times it broke the pool)
    while pending:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_init_worker, initargs=(directory, options))
        futures = {pool.submit(_run_batch, list(b)): (b, n) for b, n in pending}
        pending = []
        broken = False
        try:
            while futures:
                done, _ = wait(futures, return_when=FIRST_COMPLETED)
                for f in done:
                    b, n = futures.pop(f)
                    try:
                        rows = f.result()
                    except BrokenProcessPool:
                        broken = True
                        pending.append((b, n + 1))
                        continue
                    yield rows
                if broken:  # every other unfinished batch failed with it: collect them and start a new pool
                    for f, (b, n) in futures.items():
                        pending.append((b, n))
                    futures = {}
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        retry = []
        for b, n in pending:
            if n < _RETRIES:
                retry.append((b, n))
            elif len(b) > 1:
                retry.extend(((p,), 0) for p in b)
            else:
                yield [_died(b[0])]
        pending = retry


# ---- Ray ------------------------------------------------------------------------------------------------------------
def _ray(directory: str, options: dict, batches: list, workers: int, address: Optional[str]) -> Iterator[list]:
    try:
        import ray
        import ray.data
    except ImportError:
        raise UnsupportedError("--engine ray needs Ray Data: pip install 'symuat[ray]'") from None
    started = False
    quiet = [logging.getLogger(name) for name in ("ray", "ray.data")]
    levels = [lg.level for lg in quiet]
    for lg in quiet:  # Ray Data's INFO lines about its executor; the sweep has its own progress bar
        lg.setLevel(logging.WARNING)
    if not ray.is_initialized():
        env = {"env_vars": {v: "1" for v in _THREADS}}
        kwargs: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False, runtime_env=env,
                                      configure_logging=False)
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=workers, **kwargs)
        started = True
    try:
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        size = max(len(b) for b in batches)
        items = [{"payload": p} for b in batches for p in b]
        ds = ray.data.from_items(items, override_num_blocks=max(1, len(batches)))
        ds = ds.map_batches(PromptRunner, fn_constructor_args=(directory, options), batch_size=size,
                            compute=ray.data.ActorPoolStrategy(size=workers), num_cpus=1)
        # Ray Data starts its actors with max_restarts=-1 and max_task_retries=-1: a dead actor is restarted and
        # its batch re-run (tests/test_sweep_engines.py kills one mid-sweep)
        for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
            yield [str(r) for r in batch["row"]]
    finally:
        if started:
            ray.shutdown()
        for lg, level in zip(quiet, levels):
            lg.setLevel(level)


def run_engine(engine: str, directory: str, options: dict, batches: list, workers: int = 1,
               address: Optional[str] = None) -> Iterator[list]:
    """Batches of finished rows (JSON) of every work item in ``batches`` (module docstring)."""
    if engine == "serial":
        return _serial(directory, options, batches)
    if engine == "local":
        return _local(directory, options, batches, workers)
    if engine == "ray":
        return _ray(directory, options, batches, workers, address)
    raise UnsupportedError(f"engine must be one of {ENGINES}, got {engine!r}")
