"""The DUAT form on NumPy, CPU torch and a GPU (issue 30 item 3: the torch backend).

A random-init float64 Llama-shaped model (no downloads) is imported with ``symuat.models.from_module``; the DUAT form
of one input (``inputs_embeds``, N tokens) is evaluated on each backend present (NumPy; torch on the CPU; torch on
``cuda`` when ``torch.cuda.is_available()``) and timed (best of ``--repeat`` runs, the stack already on the device,
GPU work synchronised), with the library's own float64 forward on the CPU as the reference and the error of each
backend against the library's ``last_hidden_state`` (``library_float64``).  Target: error <= 1e-12 on every backend.

``--threads`` sets torch's CPU threads (default 1: on a shared 2-core machine two threads per operation wait on each
other under load; the library's forward runs with the same setting).

    nice python benchmarks/bench_backends.py [--layers 4] [--width 512] [--tokens 256] [--repeat 2] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from symuat.models import from_module, library_float64, random_init, to_device
from symuat.numeric import duat_form

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _best(fn, repeat: int, sync=lambda: None) -> tuple:
    """``(wall, cpu, out)``: the best wall-clock and process-CPU seconds of ``repeat`` runs (CPU time is the fairer
    figure on a shared machine; on a GPU the wall time is the one that counts)."""
    wall = cpu = float("inf")
    out = None
    for _ in range(repeat):
        sync()
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        sync()
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return wall, cpu, out


def run(layers: int, width: int, tokens: int, repeat: int, threads: int = 1) -> dict:
    import torch
    import transformers as T

    torch.set_num_threads(threads)
    heads = max(width // 64, 2)
    config = T.LlamaConfig(hidden_size=width, num_attention_heads=heads, num_key_value_heads=max(heads // 4, 1),
                           intermediate_size=int(width * 2.75), num_hidden_layers=layers, vocab_size=64,
                           max_position_embeddings=max(tokens, 64))
    model = random_init(T.LlamaModel(config), seed=0).double().eval()
    stack = from_module(model)
    X = np.random.default_rng(0).normal(size=(tokens, width))
    with torch.no_grad(), library_float64():
        t_lib, c_lib, out = _best(lambda: model(inputs_embeds=torch.from_numpy(X)[None]), repeat)
    want = out.last_hidden_state[0].numpy()
    rows = {"library (torch CPU)": {"seconds": round(t_lib, 4), "cpu_seconds": round(c_lib, 4), "error": 0.0}}
    devices = ["numpy", "cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for dev in devices:
        S, Xd = (stack, X) if dev == "numpy" else (to_device(stack, dev), to_device(X, dev))
        sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
        t, c, form = _best(lambda: duat_form(S, Xd), repeat, sync)
        got = form.output if dev == "numpy" else form.output.cpu().numpy()
        err = float(np.max(np.linalg.norm(got - want, axis=1) / np.linalg.norm(want, axis=1)))
        name = {"numpy": "DUAT form, NumPy", "cpu": "DUAT form, torch CPU", "cuda": "DUAT form, torch GPU"}[dev]
        rows[name] = {"seconds": round(t, 4), "cpu_seconds": round(c, 4), "error": err,
                      "x_library": round(t / t_lib, 2), "x_library_cpu": round(c / c_lib, 2)}
    return {"layers": layers, "width": width, "tokens": tokens, "torch_threads": torch.get_num_threads(),
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    result = run(a.layers, a.width, a.tokens, a.repeat, a.threads)
    if a.json:
        print(json.dumps(result, indent=2))
        return
    print(f"Llama-shaped, {a.layers} layers, width {a.width}, N = {a.tokens} (torch threads: "
          f"{result['torch_threads']}; GPU: {result['gpu']})")
    print(f"  {'':<24} {'wall':>9}   {'':>7}  {'CPU':>9}")
    for name, r in result["rows"].items():
        ratio = f"{r['x_library']:>6.2f}x" if "x_library" in r else "       "
        cratio = f"{r['x_library_cpu']:>6.2f}x" if "x_library_cpu" in r else "       "
        print(f"  {name:<24} {r['seconds']:>9.3f} s {ratio}  {r['cpu_seconds']:>9.3f} s {cratio}  "
              f"error {r['error']:.1e}")


if __name__ == "__main__":
    main()
