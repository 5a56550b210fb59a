r"""Benchmark: the matrix–vector form of MHA versus the direct computation.

N = 1024 tokens, M = 768 features, 12 heads, float64.  Times (best of ``REPEATS``)

1. direct MHA                                   ``multi_head_attention(X, attn)``
2. operator matvec, H_h given                   ``W'_HVO @ vec_r(X) + b'``
3. operator incl. computing H_h                 ``mha_operator(X, attn)`` then matvec
4. operator matvec with dense (W_V,h W_O,h)^T   (unfactored Kron terms, for comparison)

and the peak Python-heap allocation of each (``tracemalloc``; NumPy reports its buffers
to it).  The dense NM×NM matrix would need (NM)^2 * 8 bytes and is never built.

Run: ``python benchmarks/bench_mha_operator.py``
"""

from __future__ import annotations

import os
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from symuat.numeric import (  # noqa: E402
    AttentionWeights,
    Kron,
    KronSum,
    head_attention_weights,
    mha_operator,
    multi_head_attention,
    vec_r,
)

N, M, HEADS = 1024, 768, 12
REPEATS = 3


def best_time(fn):
    best = float("inf")
    out = None
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def peak_mib(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    rng = np.random.default_rng(0)
    s = 1 / np.sqrt(M)
    attn = AttentionWeights(
        *(s * rng.standard_normal((M, M)) for _ in range(4)),
        *(0.1 * rng.standard_normal(M) for _ in range(4)),
        n_heads=HEADS,
    )
    X = rng.standard_normal((N, M))
    x = vec_r(X)

    heads = head_attention_weights(X, attn)
    op, bias = mha_operator(X, attn, heads=heads)
    d = M // HEADS
    dense_op = KronSum(
        [Kron(heads[h], (attn.W_V[:, h * d:(h + 1) * d] @ attn.W_O[h * d:(h + 1) * d, :]).T) for h in range(HEADS)]
    )

    direct = lambda: multi_head_attention(X, attn)  # noqa: E731
    matvec = lambda: op.matvec(x) + bias  # noqa: E731

    def full():
        o, b = mha_operator(X, attn)
        return o.matvec(x) + b

    dense_matvec = lambda: dense_op.matvec(x) + bias  # noqa: E731

    t_direct, y_direct = best_time(direct)
    t_matvec, y_op = best_time(matvec)
    t_full, y_full = best_time(full)
    t_dense, y_dense = best_time(dense_matvec)
    ref = vec_r(y_direct)
    rel = max(np.linalg.norm(y - ref) / np.linalg.norm(ref) for y in (y_op, y_full, y_dense))

    m_direct, m_matvec, m_full, m_dense = (peak_mib(f) for f in (direct, matvec, full, dense_matvec))

    print(f"MHA operator benchmark: N={N}, M={M}, heads={HEADS}, float64, best of {REPEATS}")
    print(f"  numpy {np.__version__}, threads env OMP={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    print(f"  max relative difference operator vs direct: {rel:.2e}")
    print(f"  {'path':44s} {'time [s]':>9s} {'ratio':>7s} {'peak MiB':>9s}")
    rows = [
        ("direct multi_head_attention", t_direct, m_direct),
        ("operator matvec (H_h given, factored W_VO)", t_matvec, m_matvec),
        ("operator incl. computing H_h", t_full, m_full),
        ("operator matvec (H_h given, dense W_VO^T)", t_dense, m_dense),
    ]
    for name, t, m in rows:
        print(f"  {name:44s} {t:9.4f} {t / t_direct:6.2f}x {m:9.1f}")
    print(f"  target ratio <= 3x: matvec {'OK' if t_matvec <= 3 * t_direct else 'MISSED'}, "
          f"incl. H_h {'OK' if t_full <= 3 * t_direct else 'MISSED'}")
    print(f"  dense W'_HVO would need (NM)^2*8 B = {(N * M) ** 2 * 8 / 2**40:.1f} TiB (never built)")


if __name__ == "__main__":
    main()
