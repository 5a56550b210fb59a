r"""Benchmark of the DUAT expansion engine (seed 001, Eq. 11 / Eq. 33; SPEC section 5).

Times, side by side per depth :math:`L`:

* ``derive``  -- :func:`substitution_table` (mechanical layer-by-layer substitution);
* ``verify``  -- :func:`verify_table` on that table (local check, polynomial);
  ``total`` = derive + verify = :func:`verify_depth`;
* ``naive``   -- ``sympy.expand(nested_form(L), deep=True)`` (exponential), run
  for L = 1..8 or until one depth exceeds the time cap;

and the growth ratio t(L)/t(L-1).  Then :func:`induction_proof` once.
Targets: derive+verify at L = 64 below 10 s on 2 cores; induction below 2 s.

Usage::

    PYTHONPATH=. python benchmarks/bench_expansion.py [--max-depth 64] [--naive-max 8] [--naive-cap 20]
"""

from __future__ import annotations

import argparse
import time

import sympy

from symuat.expansion import induction_proof, nested_form, substitution_table, verify_table


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _ratio(cur, prev):
    return f"{cur / prev:6.2f}" if cur is not None and prev else "     -"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-depth", type=int, default=64)
    ap.add_argument("--naive-max", type=int, default=8)
    ap.add_argument("--naive-cap", type=float, default=20.0)
    args = ap.parse_args()

    t_ind, proof = _timed(induction_proof)
    print(f"induction_proof(): {t_ind:.3f} s  holds={proof.holds}  (target < 2 s)")

    depths = range(1, args.max_depth + 1)
    print(f"{'L':>3} | {'derive s':>9} {'verify s':>9} {'total s':>8} {'ratio':>6} {'ok':>3} | "
          f"{'naive expand s':>14} {'ratio':>6} {'#terms':>7}")
    prev_total = prev_naive = None
    naive_on = True
    for L in depths:
        t_der, table = _timed(lambda: substitution_table(L))
        t_ver, ver = _timed(lambda: verify_table(table))
        total = t_der + t_ver
        naive_s = nterms = None
        if naive_on and L <= args.naive_max:
            naive_s, expanded = _timed(lambda: sympy.expand(nested_form(L), deep=True))
            nterms = sum(1 for _ in sympy.preorder_traversal(expanded) if isinstance(_, sympy.Mul))
            if naive_s > args.naive_cap:
                naive_on = False
        if naive_s is not None:
            naive_col = f"{naive_s:14.3f} {_ratio(naive_s, prev_naive):>6} {nterms:7d}"
        else:
            naive_col = f"{'-':>14} {'-':>6} {'-':>7}"
        print(f"{L:3d} | {t_der:9.3f} {t_ver:9.3f} {total:8.3f} {_ratio(total, prev_total):>6} "
              f"{'yes' if ver.holds else 'NO':>3} | {naive_col}")
        prev_total = total
        prev_naive = naive_s
    print("ratio = t(L)/t(L-1); #terms = product nodes in the expanded naive tree")


if __name__ == "__main__":
    main()
