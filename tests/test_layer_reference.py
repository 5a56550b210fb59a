"""``symuat.models.layer_reference``: the library's decoder layers one at a time in float64 equal (a) the library's
whole float64 forward at every layer and (b) the DUAT form's per-layer outputs, within 1e-12, on tiny random
checkpoints of every supported family (sliding-window masks included; GPT-OSS: sinks, eager experts; Llama 4: chunked
and NoPE layers, input-scaled experts)."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import randomize, require_torch, row_errors

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.models import library_float64, load  # noqa: E402
from symuat.models._torch import library_base  # noqa: E402
from symuat.models.layer_reference import REFERENCE_FAMILIES, layer_reference  # noqa: E402
from symuat.numeric import duat_form  # noqa: E402

TOL = 1e-12
V, N = 40, 11
_SMALL = dict(hidden_size=16, num_attention_heads=4, num_hidden_layers=3, intermediate_size=24,
              max_position_embeddings=32, vocab_size=V, num_key_value_heads=2)

#: one tiny checkpoint per family; the windows (3 < N) make the sliding masks differ from the causal one
FAMILIES = {
    "llama": lambda T: T.LlamaForCausalLM(T.LlamaConfig(**_SMALL)),
    "mistral": lambda T: T.MistralModel(T.MistralConfig(**_SMALL, sliding_window=3)),
    "qwen2": lambda T: T.Qwen2ForCausalLM(T.Qwen2Config(**_SMALL, use_sliding_window=True, sliding_window=3,
                                                        max_window_layers=1)),
    "qwen3": lambda T: T.Qwen3Model(T.Qwen3Config(**_SMALL, head_dim=8)),
    "gpt_oss": lambda T: T.GptOssModel(T.GptOssConfig(**_SMALL, head_dim=8, num_local_experts=4, num_experts_per_tok=2,
                                                      sliding_window=3)),
    "llama4_text": lambda T: T.Llama4ForCausalLM(T.Llama4TextConfig(
        **_SMALL, head_dim=8, no_rope_layers=[1, 1, 0], intermediate_size_mlp=10, num_local_experts=4,
        num_experts_per_tok=2, interleave_moe_layer_step=2, attention_chunk_size=16, floor_scale=20,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
}


#: the mixtures of experts run the library's eager expert loop (slow): CI's second step covers them
_SLOW = {"gpt_oss"}


@pytest.fixture(scope="module", params=[pytest.param(f, marks=pytest.mark.slow) if f in _SLOW else f
                                        for f in sorted(FAMILIES)] + ["llama-bf16"])
def saved(request, tmp_path_factory):
    """(path, symuat Model, input ids); ``llama-bf16`` is stored in bfloat16, as big checkpoints are."""
    family = request.param.split("-")[0]
    path = tmp_path_factory.mktemp(request.param)
    model = randomize(FAMILIES[family](transformers), seed=len(family))
    if request.param.endswith("bf16"):
        model = model.to(torch.bfloat16)
    model.save_pretrained(path)
    return path, load(path), np.random.default_rng(3).integers(0, V, size=N)


def _library_layers(model, ids):
    """Every decoder layer's output in the library's whole float64 forward (forward hooks)."""
    base = library_base(model.library)
    got = []
    hooks = [layer.register_forward_hook(lambda m, a, out: got.append((out[0] if isinstance(out, tuple) else out)
                                                                      [0].detach().numpy().copy()))
             for layer in base.layers]
    try:
        with torch.no_grad(), library_float64():
            base(input_ids=torch.tensor(ids[None]), output_hidden_states=True)
    finally:
        for h in hooks:
            h.remove()
    return got


def test_families_covered():
    assert sorted(FAMILIES) == sorted(REFERENCE_FAMILIES)


def test_chain_is_the_library(saved):
    path, model, ids = saved
    ref = layer_reference(path, ids)
    want = _library_layers(model, ids)
    assert len(ref.outputs) == len(want) == 3
    assert np.array_equal(ref.inputs_embeds, model.inputs_embeds(ids, None))
    errs = [row_errors(w, g, slice(None)) for w, g in zip(want, ref.outputs)]
    assert max(errs) <= TOL, errs


def test_form_layers_match_the_chain(saved):
    path, model, ids = saved
    ref = layer_reference(path, ids)
    boxes = {}
    duat_form(model.stack, ref.inputs_embeds,
              on_box=lambda i, lin, bias, terms: boxes.__setitem__(i, (lin + bias + sum(terms)).reshape(N, -1)))
    errs = [row_errors(ref.outputs[i], boxes[i + 1], slice(None)) for i in range(3)]
    assert max(errs) <= TOL, errs


def test_prefix_is_the_first_layers(saved):
    path, _, ids = saved
    full, two = layer_reference(path, ids), layer_reference(path, ids, layers=2)
    assert len(two.outputs) == 2
    assert all(np.array_equal(a, b) for a, b in zip(full.outputs, two.outputs))


def test_sliding_window_matters(saved, tmp_path):
    """The same weights without the window give other outputs: the windowed families' comparisons above see the
    sliding mask at work (N > window)."""
    import json
    import shutil

    path, _, ids = saved
    config = json.loads((path / "config.json").read_text())
    if config["model_type"] not in ("mistral", "qwen2", "gpt_oss"):
        pytest.skip("no sliding window in this family's checkpoint")
    shutil.copytree(path, tmp_path / "full")
    config["sliding_window"] = None
    if "use_sliding_window" in config or "layer_types" in config:  # Qwen2, GPT-OSS say it per layer
        config.update(layer_types=["full_attention"] * config["num_hidden_layers"])
        if "use_sliding_window" in config:
            config["use_sliding_window"] = False
    (tmp_path / "full" / "config.json").write_text(json.dumps(config))
    a, b = layer_reference(path, ids), layer_reference(tmp_path / "full", ids)
    assert np.max(np.abs(a.outputs[-1] - b.outputs[-1])) > 1e-6
