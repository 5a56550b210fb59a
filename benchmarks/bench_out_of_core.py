"""A Llama-3-8B-shaped checkpoint, out of core, checked layer by layer against the per-layer library reference
(issue 30; also ``benchmarks/bench_models.py --out-of-core``).

The checkpoint (written once, to a temporary folder under /tmp deleted at the end unless ``--dir`` names one; random
weights, deterministic): Llama-3-8B's shape (width 4096, FFN 14336, 32 heads / 8 KV heads, vocab 128256,
rope_theta 500000) with ``num_hidden_layers = 32`` in its config and the first ``--layers`` layers on disk (all 32
by default), bf16, one safetensors shard per tensor group (embedding, each layer, final norm + LM head) written one
group at a time (never the model in memory), with an index.  Matrices are N(0, 1/fan-in), norm gains 1 + N(0, 0.04).

Then, for each N of ``--tokens``, two *fresh processes*, each under ``/usr/bin/time -v`` (peak RSS = "Maximum
resident set size"):

* symuat: ``load(dir, layers=K, out_of_core=True)`` (layers read from the shards one at a time, embedding rows read
  lazily) and the DUAT form of one row of N random ids, whose per-layer outputs are the form's boxes 1..K
  (:func:`symuat.models.layer_check.form_layers`);
* the reference: ``symuat.models.layer_reference(dir, ids, layers=K)``, the library's own decoder layers built one
  at a time in float64 from the safetensors files.

The errors are per layer, max over tokens of ``||form - reference|| / ||reference||``; the time ratio is symuat's
load + form over the reference's.  Issue 30's targets (32 layers, N = 128 and 512): peak RSS <= 8 GiB, every layer
<= 1e-12, time <= 4x the reference's.

    nice -n 10 python benchmarks/bench_out_of_core.py                      # 32 layers, N = 128 and 512 (~16 GB disk)
    nice -n 10 python benchmarks/bench_out_of_core.py --layers 2 --tokens 64
    nice -n 10 python benchmarks/bench_out_of_core.py --dir /tmp/llama3-8b --layers 32 --reference-only
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
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
from symuat.models.layer_check import form_layers
d, k, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ids = np.load(out + "/ids.npy")
t0 = time.perf_counter(); model = load(d, layers=k, out_of_core=True); t1 = time.perf_counter()
layers = form_layers(model, ids)
t2 = time.perf_counter()
np.save(out + "/form.npy", np.stack(layers))
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


def symuat_bytes(layers: int, tokens: int) -> int:
    """Estimated peak of the out-of-core form: two layers in float64 (the one read and the one before it, while the
    next is read), the form's own ~8 arrays of N x M per layer, and ~1.5 GiB of torch/transformers and bf16 pages."""
    M, F = SHAPE["hidden_size"], SHAPE["intermediate_size"]
    kv = M * SHAPE["num_key_value_heads"] // SHAPE["num_attention_heads"]
    per_layer = 2 * M * M + 2 * M * kv + 3 * M * F
    return 8 * (2 * per_layer + 8 * (layers + 8) * tokens * M + 4 * tokens * F) + 3 * 2 ** 29


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


def _written(d: Path) -> int:
    index = d / "model.safetensors.index.json"
    if not index.is_file():
        return 0
    keys = json.loads(index.read_text())["weight_map"]
    return len({int(m.group(1)) for m in map(re.compile(r"layers\.(\d+)\.").search, keys) if m})


def run(d: Path, layers: int, tokens: int, reference_only: bool) -> dict:
    """One N: the reference and the out-of-core form in fresh processes, and the error per layer."""
    with tempfile.TemporaryDirectory() as out:
        ids = np.random.default_rng(0).integers(0, SHAPE["vocab_size"], size=tokens)
        np.save(f"{out}/ids.npy", ids)
        env_args = (str(d), str(layers), out)
        reference = _measured(REFERENCE, *env_args)
        if reference_only:
            return {"layers": layers, "tokens": tokens, "reference": reference}
        need = symuat_bytes(layers, tokens)
        if need > _available():
            raise SystemExit(f"the out-of-core form of {layers} layers at N={tokens} needs about "
                             f"{need / 2 ** 30:.1f} GiB, more than the {_available() / 2 ** 30:.1f} GiB available")
        symuat = _measured(SYMUAT, *env_args)
        form, ref = np.load(f"{out}/form.npy"), np.load(f"{out}/reference.npy")
    errors = [float(np.max(np.linalg.norm(f - r, axis=1) / np.linalg.norm(r, axis=1))) for f, r in zip(form, ref)]
    return {"layers": layers, "tokens": tokens, "symuat": symuat, "reference": reference, "errors": errors,
            "max_error": max(errors), "time_ratio": (symuat["load_s"] + symuat["form_s"]) / reference["load_s"]}


def main(argv=None) -> list:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=None, help="checkpoint directory (kept; default: a temporary folder under "
                    "/tmp, deleted at the end)")
    ap.add_argument("--layers", type=int, default=32, help="layers K written (if missing) and checked (default 32)")
    ap.add_argument("--tokens", default="128,512", help="comma-separated N (default 128,512)")
    ap.add_argument("--reference-only", action="store_true", help="only the per-layer reference")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    tokens = [int(t) for t in a.tokens.split(",") if t]
    if not 1 <= a.layers <= SHAPE["num_hidden_layers"] or not tokens or min(tokens) < 1:
        raise SystemExit("need 1 <= --layers <= 32 and --tokens N1,N2,... >= 1")
    temporary = a.dir is None
    d = Path(tempfile.mkdtemp(prefix="symuat-llama3-8b-", dir="/tmp")) if temporary else Path(a.dir)
    try:
        if _written(d) < a.layers:
            need = 2 * (a.layers * 218_112_000 + 2 * 525_336_576 + 4096) + 2 ** 30
            free = shutil.disk_usage(d.parent if not d.exists() else d).free
            if need > free:
                raise SystemExit(f"the checkpoint needs about {need / 1e9:.1f} GB of disk, {free / 1e9:.1f} GB free")
            print(f"writing {a.layers} layers of the checkpoint to {d} ...", file=sys.stderr)
            t0 = time.perf_counter()
            write_checkpoint(d, a.layers)
            print(f"  written in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        disk = sum(f.stat().st_size for f in d.glob("*.safetensors")) / 2 ** 30
        rows = []
        for n in tokens:
            row = run(d, a.layers, n, a.reference_only)
            row["disk_gib"] = disk
            rows.append(row)
            _print(row, a.json)
    finally:
        if temporary:
            shutil.rmtree(d, ignore_errors=True)
    return rows


def _print(row: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(row, indent=1), flush=True)
        return
    reference = row["reference"]
    print(f"Llama-3-8B-shaped, {row['layers']} of 32 layers, N={row['tokens']} "
          f"(checkpoint {row['disk_gib']:.2f} GiB bf16)")
    print(f"  reference {reference['load_s']:.1f} s, peak RSS {reference['peak_rss_gib']:.2f} GiB")
    if "symuat" in row:
        symuat = row["symuat"]
        print(f"  symuat out of core: load {symuat['load_s']:.1f} s + form {symuat['form_s']:.1f} s, "
              f"peak RSS {symuat['peak_rss_gib']:.2f} GiB")
        print("  error per layer " + ", ".join(f"{e:.1e}" for e in row["errors"])
              + f"; time ratio {row['time_ratio']:.2f}x")
        ok = row["symuat"]["peak_rss_gib"] <= 8 and row["max_error"] <= 1e-12 and row["time_ratio"] <= 4
        print("  targets (peak RSS <= 8 GiB, every layer <= 1e-12, time <= 4x):", "met" if ok else "missed",
              flush=True)


if __name__ == "__main__":
    main()
