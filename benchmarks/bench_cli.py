r"""Benchmark of the command line: cold and warm audits, ``latex`` and ``build`` from a warm cache.

Every command runs in a fresh process with its own empty cache directory
(``SYMUAT_CACHE_DIR``), so "cold" recomputes every ledger entry and "warm" reads
the cache the cold run wrote.  Reports wall-clock and CPU seconds (the process and
its worker processes) and the load average, since this machine is shared.

Targets (issue 13): ``symuat audit`` at most 15 s cold and 2 s warm;
``symuat latex`` and ``symuat build`` at most 5 s warm.

Usage::

    python benchmarks/bench_cli.py [--repeat 1] [--pdf]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS = {"audit (cold)": 15.0, "audit (warm)": 2.0, "latex (warm)": 5.0, "build (warm)": 5.0}


def _run(args: list[str], cache: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``python -m symuat.cli ARGS`` (CPU includes its worker processes)."""
    env = {**os.environ, "SYMUAT_CACHE_DIR": str(cache)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "symuat.cli", *args], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"symuat {' '.join(args)} failed:\n{done.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1, help="Runs of each command (the best is reported).")
    ap.add_argument("--pdf", action="store_true", help="Let `build` compile main.tex (needs TeX).")
    opts = ap.parse_args()
    rows: dict[str, list[tuple[float, float]]] = {name: [] for name in TARGETS}
    for _ in range(opts.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            cache, out = Path(tmp) / "cache", Path(tmp) / "out"
            rows["audit (cold)"].append(_run(["audit", "--quiet"], cache))
            rows["audit (warm)"].append(_run(["audit", "--quiet"], cache))
            rows["latex (warm)"].append(_run(["latex", "--out", str(out), "--quiet"], cache))
            build = ["build", "--out", str(out), "--quiet"] + ([] if opts.pdf else ["--no-pdf"])
            _run(build, cache)  # a first build compiles the PDF; the warm figure is the rebuild
            rows["build (warm)"].append(_run(build, cache))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; best of {opts.repeat}")
    print(f"{'command':<14} {'wall s':>8} {'cpu s':>8} {'target s':>9}  ok")
    for name, runs in rows.items():
        wall, cpu = min(runs)
        print(f"{name:<14} {wall:8.2f} {cpu:8.2f} {TARGETS[name]:9.1f}  {'yes' if wall <= TARGETS[name] else 'NO'}")


if __name__ == "__main__":
    main()
