"""A prefix of a Llama-3-8B-shaped checkpoint checked against the per-layer library reference (issue 30).

The checkpoint (written once to ``--dir``; random weights, deterministic): Llama-3-8B's shape (width 4096, FFN
14336, 32 heads / 8 KV heads, vocab 128256, rope_theta 500000) with ``num_hidden_layers = 32`` in its config but
only the first ``--written`` layers on disk, bf16, one safetensors shard per tensor group (embedding, each layer,
final norm + LM head) with an index.  Matrices are N(0, 1/fan-in), norm gains 1 + N(0, 0.04).

Then two *fresh processes*, each under ``/usr/bin/time -v`` (peak RSS = "Maximum resident set size"):

* symuat: ``load(dir, layers=K)`` (the library's base model cut to K layers, float64) and the DUAT form of one row
  of N random ids, whose per-layer outputs are the form's boxes 1..K (``duat_form(..., on_box=...)``);
* the reference: ``symuat.models.layer_reference(dir, ids, layers=K)``, the library's own decoder layers built one
  at a time in float64 from the safetensors files.

The errors are per layer, max over tokens of ``||form - reference|| / ||reference||``.  Issue 30's targets (at 32
layers, N = 128 and 512): peak RSS <= 8 GiB, every layer <= 1e-12, time <= 4x the reference's.

    nice python benchmarks/bench_out_of_core.py --dir /tmp/llama3-8b-4 --written 4 --layers 1 --tokens 128
    nice python benchmarks/bench_out_of_core.py --dir /tmp/llama3-8b-32 --written 32 --layers 32 --reference-only
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SHAPE = dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
             vocab_size=128256, num_hidden_layers=32, max_position_embeddings=8192, rope_theta=500000.0,
             rms_norm_eps=1e-5, tie_word_embeddings=False)


def write_checkpoint(directory: Path, written: int, seed: int = 0) -> None:
    """The checkpoint of the module docstring; one group of bf16 tensors at a time (peak ~1.2 GiB)."""
    import torch
    import transformers
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    config = transformers.LlamaConfig(**SHAPE, dtype="bfloat16", architectures=["LlamaForCausalLM"])
    with torch.device("meta"):
        shapes = {k: tuple(v.shape) for k, v in transformers.LlamaForCausalLM(config).state_dict().items()}
    g = torch.Generator().manual_seed(seed)

    def draw(name):  # in blocks of 8192 rows: float32 never more than 128 MiB at a time
        shape = shapes[name]
        if len(shape) == 1:
            return (1.0 + 0.2 * torch.randn(shape, generator=g)).to(torch.bfloat16)
        out = torch.empty(shape, dtype=torch.bfloat16)
        for r in range(0, shape[0], 8192):
            rows = min(8192, shape[0] - r)
            out[r:r + rows] = (torch.randn((rows, *shape[1:]), generator=g) / math.sqrt(shape[-1])).to(torch.bfloat16)
        return out

    groups = {"embed": [k for k in shapes if k.startswith("model.embed_tokens")],
              **{f"layer{i:02d}": sorted(k for k in shapes if k.startswith(f"model.layers.{i}."))
                 for i in range(written)},
              "head": ["model.norm.weight", "lm_head.weight"]}
    weight_map = {}
    for n, (group, keys) in enumerate(groups.items(), start=1):
        name = f"model-{n:05d}-of-{len(groups):05d}.safetensors"
        save_file({k: draw(k) for k in keys}, str(directory / name), metadata={"format": "pt"})
        weight_map.update({k: name for k in keys})
    (directory / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map},
                                                                       indent=1, sort_keys=True))
    config.save_pretrained(directory)


SYMUAT = r"""
import sys, time, numpy as np
from transformers.utils import logging; logging.set_verbosity_error(); logging.disable_progress_bar()
from symuat.models import load
from symuat.numeric import duat_form
d, k, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ids = np.load(out + "/ids.npy")
t0 = time.perf_counter(); model = load(d, layers=k); t1 = time.perf_counter()
X = model.inputs_embeds(ids, None); N = ids.size; boxes = {}
def on_box(i, lin, bias, terms):
    boxes[i] = (lin + bias + sum(terms)).reshape(N, -1)
duat_form(model.stack, X, on_box=on_box)
t2 = time.perf_counter()
np.save(out + "/form.npy", np.stack([boxes[i] for i in range(1, k + 1)]))
print("TIMES", t1 - t0, t2 - t1)
"""

REFERENCE = r"""
import sys, time, numpy as np
from symuat.models import layer_reference
d, k, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ids = np.load(out + "/ids.npy")
t0 = time.perf_counter(); ref = layer_reference(d, ids, layers=k); t1 = time.perf_counter()
np.save(out + "/reference.npy", np.stack(ref.outputs))
print("TIMES", t1 - t0, 0.0)
"""


def symuat_bytes(layers: int) -> int:
    """Estimated peak of ``load(dir, layers=K)`` + the form at small N: the float64 embedding and K float64 layers,
    the bf16 pages read, and ~1 GiB of torch/transformers (measured: 7.30 GiB at K = 1)."""
    M, F, V = SHAPE["hidden_size"], SHAPE["intermediate_size"], SHAPE["vocab_size"]
    kv = M * SHAPE["num_key_value_heads"] // SHAPE["num_attention_heads"]
    per_layer = 2 * M * M + 2 * M * kv + 3 * M * F
    return 10 * (V * M + layers * per_layer) + 2 ** 30


def _available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 2 ** 63


def _measured(script: str, *args: str) -> dict:
    """Run ``script`` in a fresh process under ``/usr/bin/time -v``: wall time, the script's TIMES, peak RSS."""
    t0 = time.perf_counter()
    res = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-c", script, *args], capture_output=True,
                         text=True)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"the measured process failed ({res.returncode}):\n{res.stdout}\n{res.stderr[-3000:]}")
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", res.stderr).group(1))
    load_s, form_s = map(float, re.search(r"TIMES (\S+) (\S+)", res.stdout).groups())
    return {"wall_s": wall, "load_s": load_s, "form_s": form_s, "peak_rss_gib": rss_kb / 2 ** 20}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/tmp/llama3-8b-prefix")
    ap.add_argument("--written", type=int, default=4, help="layers written to disk (the config says 32)")
    ap.add_argument("--layers", type=int, default=2, help="layers K loaded and checked")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--reference-only", action="store_true",
                    help="only the per-layer reference (any K: it holds one layer at a time)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if not 1 <= a.layers <= a.written <= SHAPE["num_hidden_layers"]:
        raise SystemExit("need 1 <= --layers <= --written <= 32")
    d = Path(a.dir)
    if not (d / "model.safetensors.index.json").is_file():
        print(f"writing the checkpoint to {d} ...", file=sys.stderr)
        write_checkpoint(d, a.written)
    with tempfile.TemporaryDirectory() as out:
        ids = np.random.default_rng(0).integers(0, SHAPE["vocab_size"], size=a.tokens)
        np.save(f"{out}/ids.npy", ids)
        env_args = (str(d), str(a.layers), out)
        reference = _measured(REFERENCE, *env_args)
        if a.reference_only:
            result = {"layers": a.layers, "tokens": a.tokens, "reference": reference}
            print(json.dumps(result, indent=1) if a.json else
                  f"reference, {a.layers} of 32 layers, N={a.tokens}: {reference['load_s']:.1f} s, "
                  f"peak RSS {reference['peak_rss_gib']:.2f} GiB")
            return result
        need = symuat_bytes(a.layers)
        if need > _available():
            raise SystemExit(f"symuat's load of {a.layers} layers needs about {need / 2 ** 30:.1f} GiB (float64 "
                             f"embedding + layers), more than the {_available() / 2 ** 30:.1f} GiB available: "
                             "use fewer --layers, or --reference-only")
        symuat = _measured(SYMUAT, *env_args)
        form, ref = np.load(f"{out}/form.npy"), np.load(f"{out}/reference.npy")
    errors = [float(np.max(np.linalg.norm(f - r, axis=1) / np.linalg.norm(r, axis=1))) for f, r in zip(form, ref)]
    result = {"layers": a.layers, "tokens": a.tokens, "disk_gib": sum(f.stat().st_size for f in d.glob("*.safetensors"))
              / 2 ** 30, "symuat": symuat, "reference": reference, "errors": errors,
              "time_ratio": (symuat["load_s"] + symuat["form_s"]) / reference["load_s"]}
    if a.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"Llama-3-8B-shaped, {a.layers} of 32 layers, N={a.tokens} "
              f"(checkpoint {result['disk_gib']:.2f} GiB bf16)")
        print(f"  symuat    load {symuat['load_s']:.1f} s + form {symuat['form_s']:.1f} s, "
              f"peak RSS {symuat['peak_rss_gib']:.2f} GiB")
        print(f"  reference {reference['load_s']:.1f} s, peak RSS {reference['peak_rss_gib']:.2f} GiB")
        print("  error per layer " + ", ".join(f"{e:.1e}" for e in errors)
              + f"; time ratio {result['time_ratio']:.2f}x")
    return result


if __name__ == "__main__":
    main()
