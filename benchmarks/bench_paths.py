"""Path expansion (virtual attention heads) of an attention-only stack versus its direct forward pass.

The number of terms is (1 + h)^L, so the sum over paths is exponential in depth while the direct pass is
linear; this prints both timings and the agreement for a few depths (float64, real softmax attention,
no value/output biases, causal mask).

    python benchmarks/bench_paths.py [--max-depth 4] [--heads 2] [--tokens 64] [--width 64]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from symuat_paper.path_expansion import attention_only_forward, path_bindings, random_attention_layers

from symuat.expansion import path_expansion
from symuat.numeric.paths import apply_paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-depth", type=int, default=4)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--width", type=int, default=64)
    args = ap.parse_args()
    for depth in range(1, args.max_depth + 1):
        rng = np.random.default_rng(depth)
        layers = random_attention_layers(rng, depth, args.width, args.heads, causal=True)
        X0 = rng.standard_normal((args.tokens, args.width))
        t0 = time.perf_counter()
        xs = attention_only_forward(layers, X0)
        t_direct = time.perf_counter() - t0
        t0 = time.perf_counter()
        terms = path_expansion(depth, args.heads)
        y = apply_paths(terms, path_bindings(layers, xs[:-1]), X0.reshape(-1))
        t_paths = time.perf_counter() - t0
        rel = np.linalg.norm(y - xs[-1].reshape(-1)) / np.linalg.norm(xs[-1])
        print(f"L={depth}: {len(terms):5d} terms, direct {t_direct * 1e3:8.2f} ms, paths {t_paths * 1e3:9.2f} ms "
              f"(x{t_paths / t_direct:7.1f}), relative error {rel:.1e}")


if __name__ == "__main__":
    main()
