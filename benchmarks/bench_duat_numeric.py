"""GPT-2-small-shaped stack in DUAT form versus its direct forward pass (issue 13: the DUAT form near its floor).

12 layers, width 768, 12 heads, FFN 3072, N = 256 tokens, causal, float64, GPT-2's layout (pre-LN blocks,
tanh-GELU, a final LayerNorm).  Target: DUAT form <= 3x the forward pass, relative error <= 1e-12.

Timing: BLAS runs single-threaded by default (``--threads``), so both computations see the same machine;
each is repeated and the best run counts; the ratio is reported for wall-clock and for process CPU time
(the CPU ratio is robust to other load on the machine).  The floor line estimates the cost of the
term-by-term form as one forward pass (the parameters need the activations anyway) plus
L(L-1)/2 applications of W'_{k,1}, each timed on its own.

    python benchmarks/bench_duat_numeric.py [--layers 12] [--tokens 256] [--kind pre_ln] [--reference]

``--reference`` also runs the forward pass in extended precision (numpy.longdouble; slow) and reports each
float64 computation's error against it: with ``--kind standard`` (no norms) the activations of this random
stack grow to |x| ~ 1e3 and the attention scores to ~ 3e5, so the softmax amplifies score rounding to
~1e-11 *in the forward pass itself*; that, not the DUAT form, was the 4.5e-11 "error" measured before.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc


def _setup_threads(argv) -> None:
    n = "1"
    if "--threads" in argv:
        n = argv[argv.index("--threads") + 1]
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, n)


_setup_threads(sys.argv)

import numpy as np  # noqa: E402

from symuat.numeric import duat_form, forward, random_stack, stack_output, vec_r  # noqa: E402
from symuat.numeric.duat_eval import StreamingEvaluator  # noqa: E402
from symuat.numeric.residual_params import residual_params  # noqa: E402


def _best(f, repeat):
    wall, cpu, out = [], [], None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = f()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu), out


def _longdouble_output(stack, X):
    """Direct forward pass in numpy.longdouble (GPT-2-style pre-LN / standard blocks, tanh-GELU, LayerNorm)."""
    ld = np.longdouble

    def ln(Z, w):
        mu = Z.mean(1, keepdims=True)
        var = ((Z - mu) ** 2).mean(1, keepdims=True)
        return (Z - mu) / np.sqrt(var + ld(w.eps)) * w.gamma.astype(ld) + w.beta.astype(ld)

    def gelu(x):
        return 0.5 * x * (1 + np.tanh(np.sqrt(ld(2) / ld(np.pi)) * (x + ld(0.044715) * x ** 3)))

    def mha(Z, a):
        d, N = a.head_dim, Z.shape[0]
        Q, K, V = (Z @ W.astype(ld) + b for W, b in ((a.W_Q, a.b_Q), (a.W_K, a.b_K), (a.W_V, a.b_V)))
        outs = []
        for h in range(a.n_heads):
            S = (Q[:, h * d:(h + 1) * d] @ K[:, h * d:(h + 1) * d].T) / np.sqrt(ld(d))
            S = np.where(np.tri(N, dtype=bool), S, -np.inf)
            E = np.exp(S - S.max(1, keepdims=True))
            outs.append((E / E.sum(1, keepdims=True)) @ V[:, h * d:(h + 1) * d])
        return np.concatenate(outs, 1) @ a.W_O.astype(ld) + a.b_O

    Y = X.astype(ld)
    for b in stack.blocks:
        f = b.ffn
        if stack.kind == "pre_ln":
            H = Y + mha(ln(Y, b.ln1), b.attention)
            Y = H + gelu(ln(H, b.ln2) @ f.W1.astype(ld) + f.b1) @ f.W2.astype(ld) + f.b2
        else:
            H = Y + mha(Y, b.attention)
            Y = H + gelu(H @ f.W1.astype(ld) + f.b1) @ f.W2.astype(ld) + f.b2
    return ln(Y, stack.final_norm) if stack.final_norm is not None else Y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--width", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--ffn", type=int, default=3072)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--kind", default="pre_ln", choices=["pre_ln", "standard"])
    ap.add_argument("--activation", default="gelu_tanh")
    ap.add_argument("--threads", default="1", help="BLAS threads (default 1)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reference", action="store_true", help="also compare with a longdouble forward pass")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    gpt2 = args.kind == "pre_ln"
    stack = random_stack(rng, n_layers=args.layers, width=args.width, n_heads=args.heads, ffn_width=args.ffn,
                         kind=args.kind, activation=args.activation, causal=True, final_norm=gpt2)
    X0 = rng.standard_normal((args.tokens, args.width))

    t_fwd, c_fwd, direct = _best(lambda: stack_output(stack, X0), args.repeat)
    counts = {}
    orig = StreamingEvaluator.__init__

    def spy(self, *a, **k):
        orig(self, *a, **k)
        counts["ev"] = self

    StreamingEvaluator.__init__ = spy
    t_duat, c_duat, form = _best(lambda: duat_form(stack, X0), max(1, args.repeat - 1))
    StreamingEvaluator.__init__ = orig
    tracemalloc.start()  # memory in a separate, untimed run (tracing slows every allocation)
    duat_form(stack, X0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    err = float(np.linalg.norm(form.terms.total - vec_r(direct)) / np.linalg.norm(direct))

    # floor: one forward pass + L(L-1)/2 applications of W'_{k,1}, each timed on a layer of this stack
    xs = forward(stack, X0)
    p = residual_params(stack, X0)[args.layers // 2]
    x = vec_r(xs[args.layers // 2])
    t_w1, c_w1, _ = _best(lambda: p.W1.matvec(x), args.repeat)
    L = args.layers
    n_floor = L * (L - 1) // 2
    apps = counts["ev"].applications

    print(f"stack: {L} layers, width {args.width}, {args.heads} heads, FFN {args.ffn}, N = {args.tokens}, "
          f"kind {args.kind}{' + final LayerNorm (GPT-2)' if gpt2 else ''}, {args.activation}, causal, float64, "
          f"BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS')}")
    print(f"direct forward pass      : {t_fwd:8.3f} s wall, {c_fwd:8.3f} s cpu")
    print(f"DUAT form (all terms)    : {t_duat:8.3f} s wall, {c_duat:8.3f} s cpu   ratio {t_duat / t_fwd:5.2f}x wall, "
          f"{c_duat / c_fwd:5.2f}x cpu  (target <= 3x)")
    print(f"one W'_(k,1) application : {t_w1:8.3f} s wall, {c_w1:8.3f} s cpu  ({t_w1 / (t_fwd / L):.2f} of a layer)")
    floor_cpu = c_fwd + n_floor * c_w1
    print(f"floor (forward + {n_floor} x W'_(k,1)): {floor_cpu:8.3f} s cpu, ratio {floor_cpu / c_fwd:5.2f}x; "
          f"the DUAT form is {c_duat / floor_cpu:.2f}x the floor (cpu; wall: {t_duat / (t_fwd + n_floor * t_w1):.2f}x)")
    print(f"operator applications    : {dict(sorted(apps.items()))} (core = shared factor of W'_(k,1), W'_(k,2))")
    print(f"peak traced memory (DUAT): {peak / 2**30:8.3f} GiB")
    print(f"relative error vs forward: {err:.2e}  (target <= 1e-12)")
    if args.reference:
        ref = _longdouble_output(stack, X0)
        n = float(np.linalg.norm(ref))
        print(f"vs longdouble reference  : forward {float(np.linalg.norm(direct - ref)) / n:.2e}, "
              f"DUAT form {float(np.linalg.norm(form.output - ref)) / n:.2e}")


if __name__ == "__main__":
    main()
