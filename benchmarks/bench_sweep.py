"""``symuat sweep`` throughput: serial vs a local pool of 2 workers vs Ray with 2 actors (issue 31).

A GPT-2-shaped checkpoint (6 layers, width 384, 6 heads, vocab 50257, random weights, float32 on disk) is saved
once to a temporary folder; ``--prompts`` prompts of ``--tokens`` random token ids are swept ``--by head`` with
the target the library's top token, by each engine into its own folder.  Reported per engine: wall seconds
(model loading and worker start-up included), prompts per second, and the peak RSS of each worker process
(sampled every 0.2 s with psutil; the serial engine's is the process's own ``ru_maxrss``).  Every engine's
``data/`` must equal the serial one's byte for byte.

    python benchmarks/bench_sweep.py [--prompts 1000] [--tokens 64] [--engines serial,local,ray] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _checkpoint(path: Path) -> None:
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_embd=384, n_head=6, n_layer=6, n_positions=1024, vocab_size=50257)
    transformers.GPT2LMHeadModel(cfg).save_pretrained(path)


def _prompts(path: Path, count: int, tokens: int) -> None:
    rng = np.random.default_rng(0)
    with path.open("w") as f:
        for _ in range(count):
            f.write(json.dumps({"input_ids": rng.integers(0, 50257, tokens).tolist()}) + "\n")


class _Peak:
    """Peak RSS of every descendant process (the workers), sampled in a thread."""

    def __init__(self):
        self.peaks: dict = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        me = psutil.Process()
        while not self._stop.is_set():
            procs = me.children(recursive=True) + [p for p in psutil.process_iter(["cmdline"])
                                                   if "MapBatches(PromptRunner)" in " ".join(p.info["cmdline"] or ())]
            for p in procs:
                try:
                    self.peaks[p.pid] = max(self.peaks.get(p.pid, 0), p.memory_info().rss)
                except psutil.Error:
                    pass
            self._stop.wait(0.2)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def main() -> None:
    from symuat.sweep import sweep

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=1000)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--engines", default="serial,local,ray")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    _checkpoint(root / "gpt2")
    _prompts(root / "prompts.jsonl", args.prompts, args.tokens)
    results = []
    for engine in args.engines.split(","):
        out = root / engine
        start = time.perf_counter()
        with _Peak() as peak:
            res = sweep(root / "gpt2", root / "prompts.jsonl", out, by="head", engine=engine,
                        workers=None if engine == "serial" else 2, batch_size=8)
        wall = time.perf_counter() - start
        if engine == "serial":
            workers = [resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024]
        else:  # the two busiest processes are the workers (Ray also starts small helper processes)
            workers = sorted(peak.peaks.values(), reverse=True)[:2]
        same = all(a.read_bytes() == b.read_bytes() for a, b in zip(sorted((root / "serial" / "data").iterdir()),
                                                                     sorted((out / "data").iterdir())))
        results.append({"engine": engine, "prompts": res.rows, "seconds": round(wall, 1),
                        "prompts_per_s": round(res.rows / wall, 2),
                        "peak_rss_per_worker_GiB": [round(w / 2 ** 30, 2) for w in workers],
                        "same_bytes_as_serial": same})
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        for r in results:
            print(f"{r['engine']:>7}: {r['prompts']} prompts in {r['seconds']} s = {r['prompts_per_s']} prompts/s; "
                  f"peak RSS per worker {r['peak_rss_per_worker_GiB']} GiB; same bytes as serial: "
                  f"{r['same_bytes_as_serial']}")


if __name__ == "__main__":
    main()
