"""``form.attention(layer, head)`` equals the library's eager attention probabilities, and the named views rebuild
the library's hidden state, for models loaded with ``symuat.models.load`` (padded batches included)."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import assert_views_rebuild, randomize, require_torch

torch, T = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.models import library_float64, load  # noqa: E402

_SMALL = dict(hidden_size=16, num_attention_heads=4, num_hidden_layers=2, intermediate_size=24,
              max_position_embeddings=32, vocab_size=30)

MODELS = {
    "gpt2": lambda: T.GPT2Model(T.GPT2Config(n_embd=16, n_head=4, n_layer=2, n_positions=32, vocab_size=30)),
    "llama-gqa": lambda: T.LlamaModel(T.LlamaConfig(**_SMALL, num_key_value_heads=2)),
    "qwen3": lambda: T.Qwen3Model(T.Qwen3Config(**_SMALL, num_key_value_heads=2, head_dim=8)),
    "gemma": lambda: T.GemmaModel(T.GemmaConfig(**_SMALL, num_key_value_heads=1, head_dim=4)),
    "olmo2": lambda: T.Olmo2Model(T.Olmo2Config(**_SMALL, num_key_value_heads=2)),
    "gpt_neox": lambda: T.GPTNeoXModel(T.GPTNeoXConfig(**_SMALL)),
    "bert": lambda: T.BertModel(T.BertConfig(**_SMALL)),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request):
    m = randomize(MODELS[request.param](), seed=11)
    m.config._attn_implementation = "eager"  # the library returns its attention probabilities only in eager mode
    return load(m)


def test_attention_equals_library_probabilities(model):
    ids = np.random.default_rng(0).integers(0, 30, size=(2, 7))
    mask = np.array([[0, 0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1]])
    forms = model.duat_form(input_ids=ids, attention_mask=mask)
    with torch.no_grad(), library_float64():
        out = model.library(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                            output_attentions=True)
    for b, form in enumerate(forms):
        real = np.flatnonzero(mask[b])
        for layer in range(form.depth):
            for head in range(model.stack.blocks[0].attention.n_heads):
                want = out.attentions[layer][b, head].numpy()[np.ix_(real, real)]
                np.testing.assert_allclose(form.attention(layer, head), want, rtol=0, atol=1e-13)


def test_views_rebuild_the_library_state(model):
    ids = np.arange(9) % 30
    form = model.duat_form(input_ids=ids)
    with torch.no_grad(), library_float64():
        want = model.library(input_ids=torch.from_numpy(ids)[None]).last_hidden_state[0].numpy()
    assert_views_rebuild(model, form, want)
