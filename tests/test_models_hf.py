"""transformers families: random-init tiny float64 models, saved with save_pretrained and re-read with
from_pretrained (no network); the DUAT form reproduces the library's hidden states for every token."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import assert_reproduces, library_states, randomize, require_torch, row_errors

torch, transformers = require_torch()
#: One worker imports transformers' model classes (about 3.5 s per process) and runs every model test.
pytestmark = pytest.mark.xdist_group("models")

from symuat.models import from_module, from_pretrained  # noqa: E402
from symuat.numeric import duat_form, stack_output  # noqa: E402

_SMALL = dict(hidden_size=32, num_attention_heads=4, num_hidden_layers=3, intermediate_size=48,
              max_position_embeddings=64)

#: family → (model class, config) of a tiny random model.
FAMILIES = {
    "gpt2": lambda T: T.GPT2Model(T.GPT2Config(n_embd=32, n_head=4, n_layer=3, n_positions=64)),
    "gpt2-gelu-scaled": lambda T: T.GPT2Model(T.GPT2Config(n_embd=16, n_head=2, n_layer=2, n_positions=32,
                                                          activation_function="gelu",
                                                          scale_attn_by_inverse_layer_idx=True)),
    "gpt_neox-parallel": lambda T: T.GPTNeoXModel(T.GPTNeoXConfig(**_SMALL)),
    "gpt_neox-sequential": lambda T: T.GPTNeoXModel(T.GPTNeoXConfig(**_SMALL, use_parallel_residual=False)),
    "llama-gqa": lambda T: T.LlamaModel(T.LlamaConfig(**_SMALL, num_key_value_heads=2)),
    "llama-mqa-bias": lambda T: T.LlamaModel(T.LlamaConfig(**_SMALL, num_key_value_heads=1, attention_bias=True,
                                                           mlp_bias=True)),
    "mistral": lambda T: T.MistralModel(T.MistralConfig(**_SMALL, num_key_value_heads=2)),
    "qwen2": lambda T: T.Qwen2Model(T.Qwen2Config(**_SMALL, num_key_value_heads=2)),
    "qwen3": lambda T: T.Qwen3Model(T.Qwen3Config(**_SMALL, num_key_value_heads=2, head_dim=8)),
    "gemma": lambda T: T.GemmaModel(T.GemmaConfig(**_SMALL, num_key_value_heads=1, head_dim=8)),
    "phi3": lambda T: T.Phi3Model(T.Phi3Config(**_SMALL, num_key_value_heads=2, pad_token_id=0,
                                               partial_rotary_factor=0.5)),
    "olmo2": lambda T: T.Olmo2Model(T.Olmo2Config(**_SMALL, num_key_value_heads=2)),
    "bert": lambda T: T.BertModel(T.BertConfig(**_SMALL)),
}

N = 7
PADDED = [1] * 5 + [0] * 2  # right padding: tokens 5, 6 are pad


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def saved(request, tmp_path_factory):
    """(family, library model re-loaded from disk, stack from from_pretrained)."""
    model = randomize(FAMILIES[request.param](transformers), seed=len(request.param))
    path = tmp_path_factory.mktemp(request.param.replace("-", "_"))
    model.save_pretrained(path)
    reloaded = transformers.AutoModel.from_pretrained(path, local_files_only=True, dtype=torch.float64).eval()
    return request.param, reloaded, from_pretrained(path)


def _X(seed: int, M: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((N, M))


def test_every_token_every_layer(saved):
    family, model, stack = saved
    assert_reproduces(model, stack, _X(1, stack.width))


def test_right_padding_real_tokens(saved):
    family, model, stack = saved
    assert_reproduces(model, stack, _X(2, stack.width), mask=PADDED)


def test_padding_changes_bidirectional_but_not_causal_outputs(saved):
    """The mask really reaches the stack: it changes BERT's real tokens, never a causal model's."""
    family, model, stack = saved
    X = _X(3, stack.width)
    moved = row_errors(stack_output(stack, X), stack_output(stack, X, np.array(PADDED, float)), slice(0, 5))
    assert (moved > 1e-3) if family == "bert" else (moved == 0.0)


def test_unpatched_library_is_float32_accurate_only_where_it_upcasts(saved):
    """Without library_float64 the library rounds RMSNorm/rotary/softmax to float32: agreement ~1e-7 there."""
    family, model, stack = saved
    X = _X(4, stack.width)
    with torch.no_grad():
        raw = model(inputs_embeds=torch.from_numpy(X)[None]).last_hidden_state[0].numpy()
    err = row_errors(raw, duat_form(stack, X).output, slice(None))
    assert err < 1e-5
    if family in ("llama-gqa", "qwen3", "olmo2", "gemma"):
        assert err > 1e-12, "these families upcast to float32; the bound above documents it"


def test_from_module_equals_from_pretrained(saved):
    family, model, stack = saved
    again = from_module(model)
    X = _X(5, stack.width)
    assert np.array_equal(stack_output(again, X), stack_output(stack, X))


def test_lm_head_model_gives_the_base_stack():
    model = randomize(transformers.GPT2LMHeadModel(transformers.GPT2Config(n_embd=16, n_head=2, n_layer=2,
                                                                           n_positions=16)))
    stack = from_module(model)
    X = _X(6, 16)
    want = library_states(model.transformer, X)[-1]
    assert row_errors(want, duat_form(stack, X).output, slice(None)) <= 1e-12
