r"""Kill rates of the three evidence levels on mutants of every proved statement.

Runs (1) every mutant of every ``proved`` ledger Identity / OpaqueIdentity and of
the depth-3 DUAT substitution table (:mod:`symuat.soundness`), printing per
family and level the fraction rejected, the equivalent mutants and any false
rejection; (2) the exact and float levels of every true ledger identity (and
every erratum's proved correction) over many seeds, which must never fail.

Usage::

    python benchmarks/bench_kill_rates.py                 # everything, 1000 seeds (~20 min)
    python benchmarks/bench_kill_rates.py --sample 10     # every 10th ledger mutant
    python benchmarks/bench_kill_rates.py --seeds 0       # mutants only
    python benchmarks/bench_kill_rates.py --seeds 0 --only 'ext:granite*'   # the mutants of some entries only
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from fnmatch import fnmatch

from symuat.ledger.registry import load_entries
from symuat.soundness import assess, kill_rates, ledger_mutants, true_statement_sweep
from symuat.soundness.kill_rate import table_kill_outcomes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=1, help="assess every k-th ledger mutant (default: all)")
    ap.add_argument("--seeds", type=int, default=1000, help="seeds for the true-statement sweep")
    ap.add_argument("--seed", type=int, default=0, help="seed of the mutants' randomized levels")
    ap.add_argument("--depth", type=int, default=3, help="depth of the mutated substitution table")
    ap.add_argument("--no-mutants", action="store_true", help="only run the true-statement sweep")
    ap.add_argument("--only", action="append", default=[], metavar="PATTERN",
                    help="mutate only the entries whose id matches (an id, a prefix or a glob; repeatable); the"
                         " substitution table's mutants are then left out")
    args = ap.parse_args()
    if not args.no_mutants:
        _mutants(args)
    if args.seeds:
        _sweep(args.seeds)


def _mutants(args) -> None:
    t0 = time.perf_counter()
    chosen = None
    if args.only:
        chosen = [e for e in load_entries() if any(e.id == p or e.id.startswith(p + ".") or fnmatch(e.id, p)
                                                   for p in args.only)]
        if not chosen:
            raise SystemExit(f"no entry matches {args.only}")
    mutants = ledger_mutants(chosen)[:: args.sample] if chosen else ledger_mutants()[:: args.sample]
    print(f"{len(mutants)} ledger mutants; operators: {dict(Counter(m.operator for m in mutants))}")
    outcomes = [assess(m, seed=args.seed) for m in mutants]
    if not chosen:
        outcomes += table_kill_outcomes(args.depth, seed=args.seed)
    report = kill_rates(outcomes)
    print(report.to_text())
    per_op: dict[str, Counter] = {}
    for o in outcomes:
        c = per_op.setdefault(o.mutant.operator, Counter())
        c["mutants"] += 1
        c["equivalent"] += o.equivalent
    print("per operator:", {op: dict(c) for op, c in sorted(per_op.items())})
    print(f"mutants assessed in {time.perf_counter() - t0:.0f} s")


def _sweep(seeds: int) -> None:
    t0 = time.perf_counter()
    runs, failures = true_statement_sweep(range(seeds))
    print(f"true statements: {runs} randomized checks over seeds 0..{seeds - 1}, "
          f"{len(failures)} false rejections ({time.perf_counter() - t0:.0f} s)")
    for f in failures[:20]:
        print("  FALSE REJECTION", f)


if __name__ == "__main__":
    main()
