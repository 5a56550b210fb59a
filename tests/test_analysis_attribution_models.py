"""Targeted attribution by reverse mode on tiny random checkpoints loaded through ``symuat.models.load`` (issue 32):
one logit at one token (or an output direction for an encoder) by every part equals the full method within 1e-12,
its parts plus rest equal the library's own logit (float64), and mixture-of-experts models (Mixtral; Qwen2-MoE with
a shared expert and a dense layer) are attributed by expert with their routing gates held."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.models import library_float64, load  # noqa: E402

TOL = 1e-12
V = 30
_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=24,
          max_position_embeddings=32, vocab_size=V)
FAMILIES = {
    "gpt2": lambda T: T.GPT2LMHeadModel(T.GPT2Config(n_embd=16, n_head=2, n_layer=2, n_positions=32, vocab_size=V)),
    "llama": lambda T: T.LlamaForCausalLM(T.LlamaConfig(**_S, num_key_value_heads=1)),
    "bert": lambda T: T.BertModel(T.BertConfig(**_S)),
    "mixtral": lambda T: T.MixtralForCausalLM(T.MixtralConfig(**_S, num_key_value_heads=1, num_local_experts=4,
                                                              num_experts_per_tok=2)),
    "qwen2_moe": lambda T: T.Qwen2MoeForCausalLM(T.Qwen2MoeConfig(
        **_S, num_key_value_heads=1, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=12,
        shared_expert_intermediate_size=20, mlp_only_layers=[0])),
}
IDS = np.array([4, 9, 1, 7, 12, 3, 22])


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def case(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param)
    randomize(FAMILIES[request.param](transformers), seed=len(request.param)).save_pretrained(path)
    model = load(path)
    return request.param, model, model.duat_form(input_ids=IDS)


def _target(form):
    """A logit (token 5) with an LM head, else an output direction."""
    return 5 if form.unembedding is not None else np.random.default_rng(3).standard_normal(form.X0.shape[1])


@pytest.mark.parametrize("by", ["source", "layer", "head", "neuron", "expert"])
def test_reverse_mode_equals_the_full_method(case, by):
    _, _, form = case
    for pos in (2, len(IDS) - 1):
        fast = form.attribution(by, target=_target(form), position=pos)
        full = form.attribution(by, target=_target(form), position=pos, method="full")
        assert fast.parts == full.parts
        assert np.max(np.abs(fast.values - full.values)) <= TOL and abs(float(fast.rest - full.rest)) <= TOL
        assert fast.error <= TOL


def test_parts_sum_to_the_library_logit(case):
    family, model, form = case
    if form.unembedding is None:
        return
    with torch.no_grad(), library_float64():
        logits = model.library(input_ids=torch.as_tensor(IDS)[None]).logits[0].numpy()
    for by in ("source", "neuron"):
        a = form.attribution(by, target=5, position=4)
        assert abs(float(a.values.sum() + a.rest) - logits[4, 5]) <= TOL * max(1.0, abs(logits[4, 5]))


def test_experts_of_a_moe_model(case):
    family, _, form = case
    if family not in ("mixtral", "qwen2_moe"):
        return
    a = form.attribution("expert", target=5, position=len(IDS) - 1)
    experts = [p for p in a.parts if ".E" in p]
    assert len(experts) == (8 if family == "mixtral" else 4)
    assert ("L1.shared" in a.parts) == (family == "qwen2_moe")
    assert ("L0.ffn" in a.parts) == (family == "qwen2_moe")  # the dense layer is one part
    assert any(a.values[a.parts.index(e)] != 0 for e in experts)
