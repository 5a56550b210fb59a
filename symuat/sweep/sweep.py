r"""``symuat sweep``: exact attributions of a model over a file of prompts, resumable, on one machine or on Ray.

The sweep reads the prompts, keys each one (:func:`~symuat.sweep.options.prompt_key`), skips the keys already in
``out`` (a re-run resumes after Ctrl-C or a crash), checks the memory of its workers against the memory available
now, computes the rest with the chosen engine (:mod:`symuat.sweep.engines`) and writes each finished batch at
once (:class:`~symuat.sweep.store.Store`); when every prompt has its row it writes the Parquet dataset
``out/data/``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ..errors import InvalidValueError, OutOfMemoryError
from ..numeric.memory import available_bytes, format_bytes
from .engines import ENGINES, one_thread, run_engine
from .estimate import worker_bytes
from .options import SweepOptions, model_hash, prompt_key
from .prompts import read_prompts
from .runner import encode_prompt
from .store import Store

__all__ = ["SweepResult", "sweep"]

#: the format of the dataset (bumped when a column changes meaning)
FORMAT = 1


@dataclass(frozen=True)
class SweepResult:
    """What a sweep did: ``rows`` in ``out/data/``, of which ``computed`` now and ``skipped`` from earlier runs."""

    out: Path
    rows: int
    computed: int
    skipped: int
    seconds: float

    def __str__(self) -> str:
        rate = self.computed / self.seconds if self.seconds > 0 else 0.0
        return (f"{self.rows} rows in {self.out / 'data'} ({self.computed} computed, {self.skipped} already done; "
                f"{rate:.2f} prompts/s)")


def _longest(prompts, tokenizer_free: bool) -> int:
    """Tokens of the longest prompt (a text counts one token per character at most, a safe bound)."""
    n = 1
    for p in prompts:
        if p.input_ids is not None:
            n = max(n, len(p.input_ids))
        elif p.text is not None and not tokenizer_free:
            n = max(n, len(p.text) + 2)
    return n


def _check_memory(directory: Path, prompts, options: SweepOptions, workers: int, engine: str,
                  max_tokens: int) -> int:
    """Refuse before any worker starts when the workers' estimate exceeds the memory available now."""
    tokens = min(_longest(prompts, False), max_tokens)
    by = options.by if options.patch is None else f"patch {options.patch}"
    each = worker_bytes(directory, tokens, options.by, patch=options.patch is not None)
    count = 1 if engine == "serial" else workers
    need, (have, how) = each * count, available_bytes()  # SYMUAT_MEMORY_LIMIT caps it
    if need > have:
        raise OutOfMemoryError(f"the sweep needs about {format_bytes(need)} ({count} worker(s) × "
                               f"{format_bytes(each)} at {tokens} tokens by {by!r}), but only {format_bytes(have)} "
                               f"is {how}; use fewer --workers, a coarser --by or shorter prompts")
    return each


def _max_tokens(directory: Path) -> int:
    try:
        cfg = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 2 ** 31
    for k in ("max_position_embeddings", "n_positions", "n_ctx"):
        if isinstance(cfg.get(k), int):
            return int(cfg[k])
    return 2 ** 31


def sweep(model: Any, prompts: Any, out: Any, *, by: str = "head", target: Any = "top", top: int = 0,
          engine: str = "local", workers: Optional[int] = None, address: Optional[str] = None, batch_size: int = 8,
          tolerance: float = 1e-10, patch: Optional[str] = None, patch_mode: str = "recomputed",
          on_start: Any = None, on_rows: Any = None) -> SweepResult:
    r"""Attribute every prompt of the file ``prompts`` with the checkpoint ``model`` into the dataset ``out``.

    Parameters
    ----------
    model : path
        A ``save_pretrained`` checkpoint directory (:func:`symuat.models.load`).
    prompts : path
        ``.jsonl``, ``.parquet`` or ``.txt`` (:func:`~symuat.sweep.prompts.read_prompts`).
    out : path
        The sweep's directory (new, empty, or an earlier run of the same sweep to resume).
    by, target, top, tolerance, patch, patch_mode
        :class:`~symuat.sweep.options.SweepOptions`; with ``patch``, a patching sweep (each prompt with its
        ``corrupt`` or ``corrupt_ids``) instead of an attribution.
    engine : {"local", "serial", "ray"}
        :mod:`symuat.sweep.engines`.
    workers : int, optional
        Processes or Ray actors (default: the CPU count, fewer if memory is short).
    address : str, optional
        A Ray cluster's address (``--engine ray`` only).
    batch_size : int
        Prompts per task: a finished batch is written at once.
    on_start, on_rows : callables, optional
        ``on_start(total, done)`` once, ``on_rows(n)`` after each written batch (the CLI's progress bar).
    """
    options = SweepOptions(by=by, target=target, top=top, tolerance=tolerance, patch=patch, patch_mode=patch_mode)
    if engine not in ENGINES:
        raise InvalidValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise InvalidValueError(f"workers must be an integer >= 1, got {workers!r}")
    if address is not None and engine != "ray":
        raise InvalidValueError("address is for engine 'ray' only")
    directory = Path(model)
    items = read_prompts(prompts)
    digest = model_hash(directory)
    store = Store(out, {"format": FORMAT, "model": digest, "options": options.as_dict()})
    done = store.done_keys()
    work, seen, skipped = [], set(), 0
    for p in items:
        key = prompt_key(p, digest, options)
        if key in seen:
            continue
        seen.add(key)
        if key in done:
            skipped += 1
        else:
            work.append((key, p))
    if on_start is not None:
        on_start(len(work) + len(done), len(done))
    start = time.perf_counter()
    if work:
        wanted = workers or max(1, os.cpu_count() or 1)
        each = _check_memory(directory, [p for _, p in work], options, wanted, engine, _max_tokens(directory))
        if workers is None and engine == "local":  # as many as fit in the memory available now
            wanted = max(1, min(wanted, available_bytes()[0] // max(each, 1)))
        payloads = [encode_prompt(k, p) for k, p in work]
        batches = [payloads[i:i + batch_size] for i in range(0, len(payloads), batch_size)]
        with one_thread():
            for rows in run_engine(engine, str(directory), options.as_dict(), batches, wanted, address):
                decoded = [json.loads(r) for r in rows]
                fresh = [r for r in decoded if r["key"] not in done]
                store.add(fresh)
                done.update(r["key"] for r in fresh)
                if on_rows is not None:
                    on_rows(len(fresh))
    total = store.finish()
    return SweepResult(store.root, total, len(work), skipped, time.perf_counter() - start)
