r"""Benchmark of the command line: ``symuat audit`` cold and warm, ``symuat latex`` and ``symuat build`` warm.

Every command runs in a fresh process (``python -m symuat.cli``), timed from outside with
``time.perf_counter`` (the whole process: interpreter start, imports, the derivations, the audit).  Each
measurement runs in its own small wrapper process, so that ``resource.getrusage(RUSAGE_CHILDREN)`` gives the
peak RSS of that command alone (the largest of its processes: the CLI, its audit child and workers, ``coqc``)
and its CPU seconds.  Each case runs ``--repeat`` times; the median is reported.

Cases, each with its own cache directory (``SYMUAT_CACHE_DIR``) and this user's signing key:

* ``audit cold, Coq compiled``: an empty cache directory: every entry is recomputed and ``coq/`` is compiled
  (in a forked process, in parallel with the audit);
* ``audit cold, .vo reused``: the audit cache files removed, the kept Coq build (``coq/`` in the cache directory,
  reused by content hash when its signed manifest verifies) left: every entry is recomputed, Coq only checks;
* ``audit warm``: the cache the cold run wrote;
* ``audit cold, Coq left out``: ``symuat audit --no-coq`` on an empty cache directory (no target: the levels
  without Coq, what README's test command audits);
* ``latex warm``, ``build warm``: from the warm cache (``build`` without the PDF unless ``--pdf``).

Python's bytecode cache: by default every command runs as Python runs by default, its compiled modules cached
(``PYTHONPYCACHEPREFIX``: a temporary directory, filled by one unmeasured audit first; ``PYTHONDONTWRITEBYTECODE``
removed), so that no case pays for compiling sympy's or symuat's sources.  ``--no-bytecode-cache`` measures as on a
machine that sets ``PYTHONDONTWRITEBYTECODE=1`` and has no ``__pycache__`` (every process compiles symuat again,
about 0.4 s).

Targets (issue 27): ``symuat audit`` at most 1 s warm, and at most 15 s cold with Coq by the issue's own means, "Coq
compiled in parallel and its ``.vo`` files reused by content hash": the case ``audit cold, .vo reused`` (the audit
cache empty: every entry recomputed, every linked theorem checked).  ``audit cold, Coq compiled``, the first
compile of ``coq/`` (paid again only when a file of ``coq/``, ``coqc`` or MathComp changes), is reported without a
target: its CPU, about 20 s for the entries and 22 s for Coq, cannot end within 15 s on 2 cores.  ``symuat latex``
and ``symuat build`` at most 5 s warm.  The machine's load average is printed: on a shared machine wall times
follow the load, CPU seconds much less.

Usage::

    python benchmarks/bench_cli.py [--repeat 3] [--pdf] [--only audit] [--no-bytecode-cache]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TARGETS = {"audit cold, Coq compiled": None, "audit cold, .vo reused": 15.0, "audit warm": 1.0,
           "audit cold, Coq left out": None, "latex warm": 5.0, "build warm": 5.0}

#: Runs ``argv`` with ``env`` and prints its wall seconds, CPU seconds and peak RSS (the largest process, KiB).
_WRAPPER = r"""
import json, resource, subprocess, sys, time
argv, env = json.loads(sys.argv[1]), json.loads(sys.argv[2])
t0 = time.perf_counter()
done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wall = time.perf_counter() - t0
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "cpu": use.ru_utime + use.ru_stime, "rss_kib": use.ru_maxrss,
                  "rc": done.returncode, "stderr": done.stderr[-2000:]}))
"""


def measure(args: list[str], cache: Path, pycache: Path | None) -> dict:
    r"""Wall and CPU seconds and peak RSS (KiB) of ``python -m symuat.cli ARGS`` with ``cache`` as its cache and
    ``pycache`` as Python's bytecode cache (``None``: as the environment says)."""
    env = {**os.environ, "SYMUAT_CACHE_DIR": str(cache)}
    env.pop("SYMUAT_COQ_BUILD", None)  # the CLI's own kept build, in its cache directory
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    argv = [sys.executable, "-m", "symuat.cli", *args]
    out = subprocess.run([sys.executable, "-c", _WRAPPER, json.dumps(argv), json.dumps(env)], capture_output=True,
                         text=True, check=True)
    row = json.loads(out.stdout)
    if row["rc"] not in (0, 1):
        raise SystemExit(f"symuat {' '.join(args)} failed:\n{row['stderr']}")
    return row


def _forget_audits(cache: Path) -> None:
    for path in cache.glob("audit-*.cache"):
        path.unlink()


def run(repeat: int, pdf: bool, only_audit: bool, pycache: Path | None) -> dict[str, list[dict]]:
    rows: dict[str, list[dict]] = {name: [] for name in TARGETS}

    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            cache, out = Path(tmp) / "cache", Path(tmp) / "out"
            rows["audit cold, Coq compiled"].append(measure(["audit", "--quiet"], cache, pycache))
            rows["audit warm"].append(measure(["audit", "--quiet"], cache, pycache))
            _forget_audits(cache)
            rows["audit cold, .vo reused"].append(measure(["audit", "--quiet"], cache, pycache))
            rows["audit cold, Coq left out"].append(measure(["audit", "--quiet", "--no-coq"], Path(tmp) / "no-coq",
                                                            pycache))
            if only_audit:
                continue
            rows["latex warm"].append(measure(["latex", "--out", str(out), "--quiet"], cache, pycache))
            build = ["build", "--out", str(out), "--quiet"] + ([] if pdf else ["--no-pdf"])
            measure(build, cache, pycache)  # a first build compiles the PDF; the warm figure is the rebuild
            rows["build warm"].append(measure(build, cache, pycache))
            shutil.rmtree(out, ignore_errors=True)
    return {name: runs for name, runs in rows.items() if runs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="Runs of each case (the median is reported).")
    ap.add_argument("--pdf", action="store_true", help="Let `build` compile main.tex (needs TeX).")
    ap.add_argument("--only", choices=["audit"], help="Only the audit cases.")
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="Run the commands with the environment's bytecode setting (PYTHONDONTWRITEBYTECODE=1 here).")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        pycache = None if opts.no_bytecode_cache else Path(tmp) / "pycache"
        if pycache is not None:
            measure(["audit", "--quiet"], Path(tmp) / "warm-up", pycache)  # fills the bytecode cache; not measured
        load = os.getloadavg()[0]
        rows = run(opts.repeat, opts.pdf, opts.only == "audit", pycache)
    bytecode = "off (as the environment says)" if opts.no_bytecode_cache else "cached"
    print(f"load average {load:.2f} before, {os.getloadavg()[0]:.2f} after, on {os.cpu_count()} CPUs; "
          f"median of {opts.repeat}; coqc {'found' if shutil.which('coqc') else 'missing'}; Python bytecode {bytecode}")
    print(f"{'case':<26} {'wall s':>7} {'cpu s':>7} {'peak RSS MiB':>13} {'target s':>9}  ok")
    for name, runs in rows.items():
        wall = statistics.median(r["wall"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        rss = statistics.median(r["rss_kib"] for r in runs) / 1024
        target = TARGETS[name]
        ok = "-" if target is None else "yes" if wall <= target else "NO"
        print(f"{name:<26} {wall:7.2f} {cpu:7.2f} {rss:13.0f} {'-' if target is None else f'{target:.1f}':>9}  {ok}")


if __name__ == "__main__":
    main()
