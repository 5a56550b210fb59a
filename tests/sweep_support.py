"""Shared pieces of the sweep tests (not a test module): a tiny checkpoint, a prompt file, the library's logits."""

from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest

V = 40
#: the prompts of every sweep test: 10 good ones, then three that must become error rows
GOOD = [[(3 * i + 5 * j) % V for j in range(2 + i % 4)] for i in range(10)]
BAD = ['{"input_ids": [1, 999]}', "this line is not JSON", json.dumps({"input_ids": list(range(20))})]
REASONS = ["token id 999 is outside the vocabulary [0, 40)", "line 12 is not JSON: Expecting value",
           "20 tokens, more than the model's 16"]


def require(*modules: str, flag: str) -> None:
    """Skip when a module is missing; fail instead when the CI variable ``flag`` is 1."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        if os.environ.get(flag) == "1":
            pytest.fail(f"{flag}=1 but {', '.join(missing)} cannot be imported")
        pytest.skip(f"{', '.join(missing)} not installed", allow_module_level=True)


def write_prompts(path) -> None:
    lines = [json.dumps({"input_ids": ids}) for ids in GOOD] + BAD
    path.write_text("\n".join(lines) + "\n")


def gpt2_checkpoint(path, head: bool = True):
    """A tiny random GPT-2 (with or without its LM head), saved as safetensors."""
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_embd=16, n_head=2, n_layer=2, n_positions=16, vocab_size=V,
                                  bos_token_id=0, eos_token_id=0)
    model = (transformers.GPT2LMHeadModel if head else transformers.GPT2Model)(cfg)
    model.save_pretrained(path)
    return model


def library_logit(path, ids, token) -> float:
    """The library's own float64 logit of ``token`` at the last position (loaded afresh, no symuat code)."""
    import torch
    import transformers

    from symuat.models import library_float64

    model = transformers.GPT2LMHeadModel.from_pretrained(path, torch_dtype=torch.float64).eval()
    with torch.no_grad(), library_float64():
        return float(model(input_ids=torch.tensor([ids])).logits[0, -1, token])


def rows(out) -> list:
    import pyarrow.parquet as pq

    return pq.read_table(out / "data").to_pylist()


def same_files(a, b) -> bool:
    """The two sweeps' data/ folders hold byte-identical files."""
    fa, fb = sorted((a / "data").iterdir()), sorted((b / "data").iterdir())
    return [f.name for f in fa] == [f.name for f in fb] and all(x.read_bytes() == y.read_bytes()
                                                                for x, y in zip(fa, fb))


def exact_sum(row) -> float:
    return abs(float(np.sum(row["values"])) + row["other"] + row["rest"] - row["value"])
