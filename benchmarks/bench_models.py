"""Imported models in DUAT form versus the library's own forward pass (issue 11: importers).

For each family a random-init float64 model (no downloads) is imported with ``symuat.models.from_module``;
the DUAT form (``symuat.numeric.duat_form``) of one input (``inputs_embeds``, N tokens) is timed against
the library's forward pass and compared with the library's ``last_hidden_state`` (float32 upcasts
widened, ``symuat.models.library_float64``).  Peak memory is the traced NumPy/Python peak of the DUAT
form (a separate, traced run).  Both times are the best of two runs.  Targets (for the GPT-2-small and
Llama-shaped stacks; the tiny families' times are dominated by per-call overhead): time <= 10x the library
forward pass, relative error <= 1e-12.

    nice python benchmarks/bench_models.py [--only gpt2-small,llama-2048] [--tokens 256] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
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


def _timed(f):
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated families (default: all)")
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import torch
    import transformers

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    configs = _configs(transformers)
    names = [n for n in args.only.split(",") if n] or list(configs)
    rows = [run(n, configs[n], args.tokens) for n in names]
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
