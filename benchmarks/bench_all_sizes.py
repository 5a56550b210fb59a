r"""Soundness figures of the all-sizes level (``symuat.allsizes``).

1. Every explicit ledger identity (claims, readings, denials, corrections): the grid's symbolic
   verdict against the all-sizes verdict.  A true identity must never be rejected; a false one
   must get a witness (the smallest, so it must equal the grid's first failure when the grid
   contains every smaller size).
2. Size-only mutants (:mod:`symuat.allsizes.size_mutants`) of every ledger identity the level
   proves, deduplicated by the normal forms of both sides: each must hold on the grid and be
   rejected by the all-sizes level with a witness above the grid.
3. The identities outside the fragment, grouped by reason.

Usage::

    python benchmarks/bench_all_sizes.py              # everything (~20-40 min on 2 busy cores)
    python benchmarks/bench_all_sizes.py --sample 4   # every 4th distinct identity's mutants (--offset 1: the next)
    python benchmarks/bench_all_sizes.py --no-mutants # the ledger figures only (~15 s)
    python benchmarks/bench_all_sizes.py --ids duat:eq14 ext:qk-norm  # the mutants of some entries only
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter

from symuat import load_entries
from symuat.allsizes import decide
from symuat.allsizes.decide import traced_sides
from symuat.allsizes.size_mutants import size_only_mutants
from symuat.allsizes.terms import canonical_poly
from symuat.evidence.identity import Identity
from symuat.evidence.levels import Run, symbolic_level
from symuat.ledger.entry import Denial, Readings

#: Dimensions whose grid goes beyond this get no mutant (a wedge of g+1 vectors has a^(g+1) entries).
MAX_GRID = 4


def explicit_identities(entries):
    """(entry id, role, identity) for every explicit identity of the ledger."""
    for e in entries:
        c = e.claim
        if isinstance(c, Identity):
            yield e.id, "claim", c
        elif isinstance(c, Readings):
            yield from ((e.id, f"reading {k}", v) for k, v in c.readings.items() if isinstance(v, Identity))
        elif isinstance(c, Denial) and isinstance(c.identity, Identity):
            yield e.id, "denied identity", c.identity
        if e.correction is not None and isinstance(e.correction.identity, Identity):
            yield e.id, "correction", e.correction.identity


def _side_forms(identity):
    """Canonical forms of each side separately (to deduplicate the same statement in three versions)."""
    out = []
    for t in traced_sides(identity)[:2]:
        out.append(tuple(sorted((k, canonical_poly(ts, {v: ("f", i) for i, v in enumerate(rv + cv)}))
                                for k, (rv, cv, ts) in t.blocks.items())))
    return repr((out, identity.dims))


def ledger_figures(idents):
    rows, outside = Counter(), Counter()
    witness_agrees = witness_total = 0
    for eid, role, ident in idents:
        grid = symbolic_level(ident, Run())
        d = decide(ident)
        verdict = "outside" if not d.inside else ("holds" if d.evidence.holds else "fails")
        rows[("grid holds" if grid.holds else "grid fails", verdict)] += 1
        if grid.holds and verdict == "fails":
            print(f"  FALSE REJECTION? {eid} [{role}]: {d.evidence.detail}")
        if not d.inside:
            outside[re.sub(r" \(at .*\)$", "", d.reason)] += 1
        if not grid.holds and verdict == "fails" and grid.counterexample and "dims" in grid.counterexample:
            witness_total += 1
            witness_agrees += grid.counterexample["dims"] == d.evidence.counterexample["dims"]
    return rows, outside, witness_agrees, witness_total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=1, help="mutate every k-th distinct proved identity")
    ap.add_argument("--offset", type=int, default=0, help="with --sample k: start at the i-th (0 <= i < k)")
    ap.add_argument("--ids", nargs="*", default=None, help="mutate only identities of these entry ids (or prefixes)")
    ap.add_argument("--no-mutants", action="store_true", help="only the ledger figures")
    args = ap.parse_args()
    start = time.perf_counter()
    idents = list(explicit_identities(load_entries()))
    rows, outside, agree, total = ledger_figures(idents)
    print(f"explicit ledger identities: {len(idents)}")
    for (g, v), n in sorted(rows.items()):
        print(f"  {g:10s} | all-sizes {v:8s} | {n}")
    proved = sum(n for (g, _), n in rows.items() if g == "grid holds")
    inside = rows[("grid holds", "holds")]
    print(f"grid-proved identities proved for every size: {inside}/{proved} ({100 * inside / proved:.1f} %); "
          f"rejected: {rows[('grid holds', 'fails')]}")
    print(f"false identities: smallest witness equals the grid's first failure in {agree}/{total}")
    print("outside the fragment, by reason:")
    for reason, n in outside.most_common():
        print(f"  {n:3d}  {reason}")
    print(f"({time.perf_counter() - start:.1f} s)\n")
    if args.no_mutants:
        return

    seen, distinct = set(), []
    for eid, role, ident in idents:
        d = decide(ident)
        if d.inside and d.evidence.holds:
            key = _side_forms(ident)
            if key not in seen:
                seen.add(key)
                distinct.append((eid, role, ident))
    if args.ids is not None:
        distinct = [x for x in distinct if any(x[0] == i or x[0].startswith(i + ".") for i in args.ids)]
    chosen = distinct[args.offset::args.sample]
    print(f"size-only mutants of {len(chosen)} of {len(distinct)} distinct identities proved for every size")
    tally, sizes = Counter(), Counter()
    for eid, role, ident in chosen:
        for name, mutant in size_only_mutants(ident):
            dim = name.split(":")[1]
            if max(d[dim] for d in ident.dims) > MAX_GRID:
                tally[(name.split(":")[0], f"skipped (grid > {MAX_GRID})")] += 1
                print(f"  SKIPPED {eid} {name}: grid up to {max(d[dim] for d in ident.dims)}, the grid check of a "
                      f"wedge of that many vectors is too large")
                continue
            t0 = time.perf_counter()
            on_grid = symbolic_level(mutant, Run()).holds
            d = decide(mutant)
            kind = name.split(":")[0]
            if not on_grid:
                tally[(kind, "not size-only (grid rejects)")] += 1
            elif not d.inside:
                tally[(kind, "outside")] += 1
                print(f"  OUTSIDE {eid} {name}: {d.reason}")
            elif d.evidence.holds:
                tally[(kind, "SURVIVED")] += 1
                print(f"  SURVIVED {eid} {name}")
            else:
                tally[(kind, "killed")] += 1
                dim = name.split(":")[1]
                sizes[(dim, d.evidence.counterexample["dims"][dim])] += 1
            print(f"  {eid} [{role}] {name}: grid {'holds' if on_grid else 'fails'}, all-sizes "
                  f"{'outside' if not d.inside else d.evidence.detail[:70]} ({time.perf_counter() - t0:.1f} s)",
                  flush=True)
    for (kind, what), n in sorted(tally.items()):
        print(f"  {kind:9s} {what:30s} {n}")
    killed = sum(n for (_, w), n in tally.items() if w == "killed")
    size_only = sum(n for (_, w), n in tally.items() if w != "not size-only (grid rejects)" and "skipped" not in w)
    print(f"size-only mutants killed by all-sizes: {killed}/{size_only}; witness (dimension, size): "
          f"{dict(sorted(Counter(s for (_, s) in sizes.elements()).items()))}")
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
