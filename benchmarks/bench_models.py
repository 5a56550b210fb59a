"""Imported models in DUAT form versus the library's own forward pass (issue 11: importers).

For each family a random-init float64 model (no downloads) is imported with ``symuat.models.from_module``;
the DUAT form (``symuat.numeric.duat_form``) of one input (``inputs_embeds``, N tokens) is timed against
the library's forward pass and compared with the library's ``last_hidden_state`` (float32 upcasts
widened, ``symuat.models.library_float64``).  Peak memory is the traced NumPy/Python peak of the DUAT
form (a separate, traced run).  Both times are the best of two runs.  Targets (for the GPT-2-small and
Llama-shaped stacks; the tiny families' times are dominated by per-call overhead): time <= 10x the library
forward pass, relative error <= 1e-12.

    nice python benchmarks/bench_models.py [--only gpt2-small,llama-2048] [--tokens 256] [--json]

``--cpu-time`` times both sides by CPU seconds with one thread, best of five (set ``OMP_NUM_THREADS=1``): on a shared
machine other jobs' load makes wall times incomparable (issue 30: the Mixtral-shaped stack, target <= 4x).

Real sizes (issue 20): a Llama-shaped checkpoint (width 2048, 16 heads, 4 KV heads, SwiGLU 5632, float64, vocab
32000, random weights) saved with ``save_pretrained``; then two *fresh processes*, the library's load + forward
(``AutoModel.from_pretrained`` + ``model(input_ids)``) and symuat's ``load`` + ``duat_form(input_ids=...)``, each
timed and measured (peak RSS, ``ru_maxrss``); the error is symuat's output against the library's
``last_hidden_state`` (float64 throughout, ``library_float64``).  Targets: completes on 24 GB, peak RSS <= 1.5x,
time <= 4x the library's, error <= 1e-12.

    nice python benchmarks/bench_models.py --real-size --layers 16 --tokens 2048 [--dir /tmp/llama16]

Bigger than memory (issue 30): ``--out-of-core`` runs ``benchmarks/bench_out_of_core.py`` with the remaining
options (a Llama-3-8B-shaped bf16 checkpoint written to a temporary folder, symuat's out-of-core form against the
per-layer library reference at N = 128 and 512; ``--layers``, ``--tokens 128,512``, ``--dir``, ``--json``).

    nice -n 10 python benchmarks/bench_models.py --out-of-core [--layers 2 --tokens 64]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import tracemalloc

import numpy as np

from symuat.models import from_module, library_float64, random_init
from symuat.numeric import duat_form

os.environ.setdefault("HF_HUB_OFFLINE", "1")




def _configs(T):
    tiny = dict(hidden_size=64, num_attention_heads=4, num_hidden_layers=4, intermediate_size=128,
                max_position_embeddings=512)
    return {
        "torch-encoder": lambda: _torch_encoder(),
        "gpt2-small": lambda: T.GPT2Model(T.GPT2Config(n_embd=768, n_head=12, n_layer=12, n_positions=1024)),
        "llama-2048": lambda: T.LlamaModel(T.LlamaConfig(hidden_size=2048, num_attention_heads=16,
                                                         num_key_value_heads=4, intermediate_size=5632,
                                                         num_hidden_layers=4, max_position_embeddings=2048)),
        "gpt_neox": lambda: T.GPTNeoXModel(T.GPTNeoXConfig(**tiny)),
        "mistral": lambda: T.MistralModel(T.MistralConfig(**tiny, num_key_value_heads=2)),
        "qwen2": lambda: T.Qwen2Model(T.Qwen2Config(**tiny, num_key_value_heads=2)),
        "qwen3": lambda: T.Qwen3Model(T.Qwen3Config(**tiny, num_key_value_heads=2, head_dim=16)),
        "gemma": lambda: T.GemmaModel(T.GemmaConfig(**tiny, num_key_value_heads=1, head_dim=16)),
        "phi3": lambda: T.Phi3Model(T.Phi3Config(**tiny, num_key_value_heads=2, pad_token_id=0)),
        "olmo2": lambda: T.Olmo2Model(T.Olmo2Config(**tiny, num_key_value_heads=2)),
        "bert": lambda: T.BertModel(T.BertConfig(**tiny)),
        # issue 22: a Mixtral-shaped MoE stack (8 experts, top-2; eager experts, the library's float64 path) and a
        # Gemma-2-shaped stack (sandwich norms, soft-capping 50, local window 128 alternating with global layers)
        "mixtral-8x2": lambda: T.MixtralModel(T.MixtralConfig(
            hidden_size=512, num_attention_heads=8, num_key_value_heads=2, intermediate_size=1792,
            num_hidden_layers=4, num_local_experts=8, num_experts_per_tok=2, max_position_embeddings=2048,
            experts_implementation="eager")),
        "gemma2-shaped": lambda: T.Gemma2Model(T.Gemma2Config(
            hidden_size=576, num_attention_heads=8, num_key_value_heads=4, head_dim=72, intermediate_size=2304,
            num_hidden_layers=4, sliding_window=128, attn_logit_softcapping=50.0, query_pre_attn_scalar=72,
            max_position_embeddings=2048)),
    }


def _torch_encoder():
    import torch

    layer = torch.nn.TransformerEncoderLayer(256, 8, 1024, dropout=0.0, activation="gelu", batch_first=True,
                                             norm_first=True)
    return torch.nn.TransformerEncoder(layer, 4, norm=torch.nn.LayerNorm(256), enable_nested_tensor=False)


def _library(model, X, widened):
    import torch


    x = torch.from_numpy(X)[None]
    with torch.no_grad():
        if isinstance(model, torch.nn.TransformerEncoder):
            mask = torch.nn.Transformer.generate_square_subsequent_mask(X.shape[0], dtype=torch.float64)
            return model(x, mask=mask, is_causal=True)[0].numpy()
        if widened:
            with library_float64():
                return model(inputs_embeds=x).last_hidden_state[0].numpy()
        return model(inputs_embeds=x).last_hidden_state[0].numpy()


def run(name, make, tokens, repeats=2):
    import torch


    torch.manual_seed(0)
    model = random_init(make())
    is_encoder = isinstance(model, torch.nn.TransformerEncoder)
    stack = from_module(model, causal=True) if is_encoder else from_module(model)
    X = np.random.default_rng(0).standard_normal((tokens, stack.width))
    t_lib = min(_timed(lambda: _library(model, X, widened=False)) for _ in range(repeats))
    want = _library(model, X, widened=True)
    t_duat = min(_timed(lambda: duat_form(stack, X)) for _ in range(repeats))
    tracemalloc.start()
    form = duat_form(stack, X)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    err = float(np.max(np.linalg.norm(form.output - want, axis=1) / np.linalg.norm(want, axis=1)))
    return {"family": name, "layers": stack.depth, "width": stack.width, "tokens": tokens,
            "library_s": t_lib, "duat_s": t_duat, "ratio": t_duat / t_lib, "peak_MiB": peak / 2**20,
            "max_relative_error": err}


#: ``--cpu-time``: time by the process's CPU seconds (one BLAS thread each side), robust to other jobs' load
_CLOCK = [time.perf_counter]


def _timed(f):
    clock = _CLOCK[0]
    t0 = clock()
    f()
    return clock() - t0


# ---- real sizes: two fresh processes ---------------------------------------------------------------------------------
def _make_checkpoint(directory: str, layers: int) -> None:
    import torch
    import transformers as T

    torch.set_default_dtype(torch.float64)
    config = T.LlamaConfig(hidden_size=2048, num_attention_heads=16, num_key_value_heads=4, intermediate_size=5632,
                           num_hidden_layers=layers, max_position_embeddings=4096, vocab_size=32000)
    random_init(T.LlamaModel(config)).save_pretrained(directory)


def _peak_rss_gib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def _ids(tokens: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 32000, size=tokens)


def _library_child(directory: str, tokens: int, out: str) -> dict:
    import torch
    from transformers import AutoModel

    t0 = time.perf_counter()
    model = AutoModel.from_pretrained(directory, local_files_only=True, dtype=torch.float64).eval()
    with torch.no_grad(), library_float64():
        want = model(input_ids=torch.from_numpy(_ids(tokens))[None]).last_hidden_state[0].numpy()
    seconds = time.perf_counter() - t0
    np.save(out, want)
    return {"seconds": seconds, "peak_rss_GiB": _peak_rss_gib()}


def _symuat_child(directory: str, tokens: int, want: str) -> dict:
    from symuat.models import load

    t0 = time.perf_counter()
    form = load(directory).duat_form(input_ids=_ids(tokens))
    seconds = time.perf_counter() - t0
    w = np.load(want)
    err = float(np.max(np.linalg.norm(form.output - w, axis=1) / np.linalg.norm(w, axis=1)))
    return {"seconds": seconds, "peak_rss_GiB": _peak_rss_gib(), "max_relative_error": err}


def _fresh(*args: str) -> dict:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def real_size(layers: int, tokens: int, directory: str) -> dict:
    """One benchmark row: checkpoint (made once per directory), then library and symuat in fresh processes."""
    from pathlib import Path

    if not (Path(directory) / "config.json").is_file():
        _fresh("--child", "make", directory, str(layers), "0")
    want = str(Path(directory) / f"want_{tokens}.npy")
    lib = _fresh("--child", "library", directory, str(tokens), want)
    sym = _fresh("--child", "symuat", directory, str(tokens), want)
    return {"layers": layers, "tokens": tokens, "library_s": lib["seconds"], "library_peak_GiB": lib["peak_rss_GiB"],
            "symuat_s": sym["seconds"], "symuat_peak_GiB": sym["peak_rss_GiB"],
            "time_ratio": sym["seconds"] / lib["seconds"], "memory_ratio": sym["peak_rss_GiB"] / lib["peak_rss_GiB"],
            "max_relative_error": sym["max_relative_error"]}


def _child(kind: str, directory: str, n: str, path: str) -> None:
    if kind == "make":
        _make_checkpoint(directory, int(n))
        print(json.dumps({}))
    elif kind == "library":
        print(json.dumps(_library_child(directory, int(n), path)))
    else:
        print(json.dumps(_symuat_child(directory, int(n), path)))


def main() -> None:
    if "--out-of-core" in sys.argv[1:]:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import bench_out_of_core

        bench_out_of_core.main([a for a in sys.argv[1:] if a != "--out-of-core"])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated families (default: all)")
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--real-size", action="store_true", help="the Llama-shaped checkpoint in two fresh processes")
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--dir", default=None, help="checkpoint directory (made if missing)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time by CPU seconds with one thread (fair under other jobs' load; set OMP_NUM_THREADS=1)")
    ap.add_argument("--child", nargs=4, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cpu_time:
        import torch

        torch.set_num_threads(1)
        _CLOCK[0] = time.process_time
    if args.child:
        return _child(*args.child)
    if args.real_size:
        row = real_size(args.layers, args.tokens, args.dir or f"/tmp/symuat_llama{args.layers}")
        print(json.dumps(row, indent=2))
        ok = row["memory_ratio"] <= 1.5 and row["time_ratio"] <= 4 and row["max_relative_error"] <= 1e-12
        print("targets (RSS <= 1.5x, time <= 4x, error <= 1e-12):", "met" if ok else "missed")
        return
    import torch
    import transformers

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    configs = _configs(transformers)
    names = [n for n in args.only.split(",") if n] or list(configs)
    rows = [run(n, configs[n], args.tokens, 5 if args.cpu_time else 2) for n in names]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'family':14s} {'L':>2} {'width':>5} {'N':>4} {'library s':>9} {'DUAT s':>8} {'ratio':>6} "
          f"{'peak MiB':>8} {'rel. error':>10}")
    for r in rows:
        print(f"{r['family']:14s} {r['layers']:>2} {r['width']:>5} {r['tokens']:>4} {r['library_s']:9.3f} "
              f"{r['duat_s']:8.3f} {r['ratio']:6.1f} {r['peak_MiB']:8.0f} {r['max_relative_error']:10.1e}")
    bad = [r["family"] for r in rows if r["max_relative_error"] > 1e-12
           or (r["family"] in ("gpt2-small", "llama-2048") and r["ratio"] > 10)]
    print("targets (<= 10x, <= 1e-12):", "met" if not bad else f"missed by {', '.join(bad)}")


if __name__ == "__main__":
    main()
