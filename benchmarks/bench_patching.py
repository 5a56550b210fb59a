"""Activation patching at real lengths (issue 32): one patch, and a head sweep, against the library's forward pass.

A GPT-2-shaped model (6 layers, width 384, 6 heads, FFN 1536, float64, random weights, no download) with an LM head;
a clean and a corrupted input of N token ids that differ at N // 2.  Timed (best of two, CPU seconds): the library's
forward pass, one re-computed patch of the residual stream entering layer 3 (``form.patch``, which runs the form's
stack from that layer on), the same patch frozen (downstream dynamic parameters held), and a (layer, head) sweep
(L x H re-computed patches).  Checked: the re-computed patch's logits against the library run with the same patch by
a torch hook (float64, ``library_float64``).  Peak traced memory of one patch.

    nice python benchmarks/bench_patching.py [--tokens 128,512]
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import numpy as np

from symuat.models import library_float64, load, random_init

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _best(f, repeat=2):
    best = None
    for _ in range(repeat):
        t = time.process_time()
        out = f()
        dt = time.process_time() - t
        best = dt if best is None or dt < best else best
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", default="128,512")
    args = ap.parse_args()
    import torch
    import transformers as T

    torch.set_num_threads(1)
    lib = random_init(T.GPT2LMHeadModel(T.GPT2Config(n_embd=384, n_head=6, n_layer=6, n_inner=1536,
                                                     n_positions=1024, vocab_size=1000)), seed=0)
    model = load(lib)
    for N in (int(n) for n in args.tokens.split(",")):
        rng = np.random.default_rng(N)
        clean = rng.integers(0, 1000, size=N)
        corrupted = clean.copy()
        corrupted[N // 2] = (clean[N // 2] + 1) % 1000
        fc, fx = model.duat_form(input_ids=clean), model.duat_form(input_ids=corrupted)
        with torch.no_grad(), library_float64():
            t_lib, _ = _best(lambda: lib(input_ids=torch.tensor(corrupted)[None]).logits)
        unit = ("resid", 3, N // 2)
        t_re, re = _best(lambda: fx.patch(unit, fc))
        t_fr, _ = _best(lambda: fx.patch(unit, fc, mode="frozen"))
        tracemalloc.start()
        fx.patch(unit, fc)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        t_sw, sweep = _best(lambda: fx.patch_sweep(fc, "head", target=int(clean[-1]), quiet=True), repeat=1)

        saved = {}

        def hook(module, a, kw):
            x = (a[0] if a else kw["hidden_states"]).clone()
            if "v" not in saved:
                saved["v"] = x[0, N // 2].clone()
            else:
                x[0, N // 2] = saved["v"]
            return ((x,) + tuple(a[1:]), kw) if a else (a, {**kw, "hidden_states": x})

        handle = lib.transformer.h[3].register_forward_pre_hook(hook, with_kwargs=True)
        with torch.no_grad(), library_float64():
            lib(input_ids=torch.tensor(clean)[None])
            want = lib(input_ids=torch.tensor(corrupted)[None]).logits[0].numpy()
        handle.remove()
        err = float(np.max(np.abs(re.logits - want)) / np.max(np.abs(want)))
        print(f"N={N}: library forward {t_lib:.3f} s; re-computed patch {t_re:.3f} s ({t_re / t_lib:.1f}x); frozen "
              f"patch {t_fr:.3f} s ({t_fr / t_lib:.1f}x); head sweep ({sweep.values.size} patches) {t_sw:.1f} s; "
              f"peak traced memory of a patch {peak / 2 ** 20:.0f} MiB; logits vs the hooked library {err:.1e}")


if __name__ == "__main__":
    main()
