"""GPT-2-small-shaped stack in DUAT form versus its direct forward pass (issue: DUAT expansion engine).

12 layers, width 768, 12 heads, FFN 3072, N = 256 tokens, float64, standard (post-attention residual)
blocks with GELU. Prints the wall-clock ratio (target < 10x) and the peak traced memory (target < 4 GB).

    python benchmarks/bench_duat_numeric.py [--layers 12] [--tokens 256] [--kind standard]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from symuat.numeric import duat_form, duat_relative_error, forward, random_stack


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--width", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--ffn", type=int, default=3072)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--kind", default="standard")
    ap.add_argument("--activation", default="gelu_tanh")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    stack = random_stack(rng, n_layers=args.layers, width=args.width, n_heads=args.heads, ffn_width=args.ffn,
                         kind=args.kind, activation=args.activation, causal=True)
    X0 = rng.standard_normal((args.tokens, args.width))

    t0 = time.perf_counter()
    forward(stack, X0)
    t_forward = time.perf_counter() - t0

    tracemalloc.start()
    t0 = time.perf_counter()
    form = duat_form(stack, X0)
    t_duat = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    err = duat_relative_error(form)

    print(f"stack: {args.layers} layers, width {args.width}, {args.heads} heads, FFN {args.ffn}, "
          f"N = {args.tokens}, kind {args.kind}, {args.activation}, float64")
    print(f"direct forward pass      : {t_forward:8.3f} s")
    print(f"DUAT form (all terms)    : {t_duat:8.3f} s   ratio {t_duat / t_forward:5.2f}x  (target < 10x)")
    print(f"peak traced memory (DUAT): {peak / 2**30:8.3f} GiB (target < 4 GB)")
    print(f"relative error vs forward: {err:.2e}")


if __name__ == "__main__":
    main()
