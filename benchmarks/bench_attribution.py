"""Targeted attribution by reverse mode (issue 32) on real-shaped checkpoints with random weights (float64).

For each checkpoint and length N: symuat's form of one input (``model.duat_form(input_ids=...)``) is timed, then
the attribution of one target (the logit of token 5 with an LM head, else a fixed output direction) at the last
token by ``source`` and by ``neuron`` (``form.attribution(by, target=..., position=N-1)``: one pullback through the
held network).  Times (wall clock and process CPU, the fair figure on a shared machine) are the best of
``--repeats`` runs; peak memory is the traced NumPy/Python peak of a separate traced run (``tracemalloc``), the
form's evaluation against the attribution's call (``--repeats 0``: one traced run gives both, for the big row).
At ``--check-tokens`` (small N) the reverse mode is compared with the full method (``method="full"``: one
propagation per source or routed unit), largest absolute difference over every part and ``rest``.

Targets: source and neuron attribution <= 5x the form's (CPU) time; peak <= 2x the form's; <= 1e-12 from the
full method.

    nice python benchmarks/bench_attribution.py [--only gpt2-6x384,minilm-6x384] [--tokens 128,512] [--json]
    nice python benchmarks/bench_attribution.py --only llama-16x2048 --tokens 2048 --repeats 0 --check-tokens 0

The Llama-shaped checkpoint (16 layers; its weights take 6.8 GB in float64) is loaded from a ``save_pretrained``
directory (``--dir``, written once), so that the library and symuat share one copy of its weights.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import tracemalloc
from pathlib import Path

import numpy as np

from symuat.models import load, random_init

os.environ.setdefault("HF_HUB_OFFLINE", "1")

CHECKPOINTS = {
    "gpt2-6x384": lambda T: T.GPT2LMHeadModel(T.GPT2Config(n_embd=384, n_head=6, n_layer=6, n_positions=2048)),
    "minilm-6x384": lambda T: T.BertModel(T.BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                                                       intermediate_size=1536, max_position_embeddings=512)),
    "llama-16x2048": lambda T: T.LlamaForCausalLM(T.LlamaConfig(
        hidden_size=2048, num_attention_heads=16, num_key_value_heads=4, intermediate_size=5632,
        num_hidden_layers=16, max_position_embeddings=2048, vocab_size=32000)),
}


def _timed(f):
    """``((wall, cpu), out)``: wall-clock and process CPU seconds (CPU is the fair figure on a shared machine)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = f()
    return (time.perf_counter() - t0, time.process_time() - c0), out


def _traced(f):
    tracemalloc.start()
    out = f()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, out


def _target(form):
    return 5 if form.unembedding is not None else np.random.default_rng(0).standard_normal(form.X0.shape[1])


def _measure(f, repeats):
    """``(wall, cpu, peak, out)``: best of ``repeats`` untimed-traced runs, then one traced run for the peak;
    ``repeats=0``: time and peak from the one traced run (the big row)."""
    if repeats:
        times = [_timed(f)[0] for _ in range(repeats)]
        peak, out = _traced(f)
        return min(t[0] for t in times), min(t[1] for t in times), peak, out
    ((wall, cpu), (peak, out)) = _timed(lambda: _traced(f))
    return wall, cpu, peak, out


def run(name, model, tokens, repeats):
    ids = np.random.default_rng(tokens).integers(0, 1000, tokens)
    wall, cpu, peak_form, form = _measure(lambda: model.duat_form(input_ids=ids), repeats)
    target, pos = _target(form), tokens - 1
    row = {"checkpoint": name, "layers": form.depth, "width": form.X0.shape[1], "tokens": tokens,
           "target": "logit 5" if isinstance(target, int) else "direction", "form_wall_s": wall, "form_cpu_s": cpu,
           "form_peak_MiB": peak_form / 2 ** 20}
    for by in ("source", "neuron"):
        w, c, peak, a = _measure(lambda: form.attribution(by, target=target, position=pos, quiet=True), repeats)
        row.update({f"{by}_wall_s": w, f"{by}_cpu_s": c, f"{by}_cpu_x_form": c / cpu, f"{by}_wall_x_form": w / wall,
                    f"{by}_peak_MiB": peak / 2 ** 20, f"{by}_peak_x_form": peak / peak_form,
                    f"{by}_error": a.error})
    return row


def check(name, model, tokens):
    ids = np.random.default_rng(1).integers(0, 1000, tokens)
    form = model.duat_form(input_ids=ids)
    target, gap = _target(form), 0.0
    for by in ("source", "layer", "head", "neuron"):
        for pos in (0, tokens // 2, tokens - 1):
            fast = form.attribution(by, target=target, position=pos, quiet=True)
            full = form.attribution(by, target=target, position=pos, method="full", quiet=True)
            gap = max(gap, float(np.max(np.abs(fast.values - full.values))), abs(float(fast.rest - full.rest)))
    return {"checkpoint": name, "tokens": tokens, "max_abs_gap_vs_full": gap}


def main():
    import torch
    import transformers as T

    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="gpt2-6x384,minilm-6x384")
    ap.add_argument("--tokens", default="128,512")
    ap.add_argument("--check-tokens", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--dir", default=None, help="save_pretrained directory of the checkpoint (written if absent)")
    args = ap.parse_args()
    rows = []
    for name in args.only.split(","):
        torch.manual_seed(0)
        if args.dir:
            path = Path(args.dir) / name
            if not (path / "config.json").exists():
                random_init(CHECKPOINTS[name](T)).save_pretrained(path)
            model = load(path)
        else:
            model = load(random_init(CHECKPOINTS[name](T)))
        if args.check_tokens:
            rows.append(check(name, model, args.check_tokens))
            print(json.dumps(rows[-1]) if args.json else rows[-1], flush=True)
        for n in (int(t) for t in args.tokens.split(",")):
            rows.append(run(name, model, n, args.repeats))
            print(json.dumps(rows[-1]) if args.json else rows[-1], flush=True)
        del model
    return rows


if __name__ == "__main__":
    main()
