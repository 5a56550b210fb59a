"""The dense 2021–2025 families (GPT-J, Phi, Cohere, Falcon, OLMo, StableLM, Starcoder2, RoBERTa, DistilBERT) and
sliding windows: tiny random float64 checkpoints saved and re-read (no network); the DUAT form reproduces the library's
hidden states for every token and layer within 1e-12 (inputs_embeds, right padding, and token ids in left- and
right-padded batches through ``symuat.models.load``), with inputs longer than the window."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import assert_reproduces, randomize, require_torch

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import UnsupportedError  # noqa: E402
from symuat.models import library_float64, load  # noqa: E402

V = 30
_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=24,
          max_position_embeddings=32, vocab_size=V)

#: family → tiny model (windows of 3 tokens; inputs have 9)
FAMILIES = {
    "gptj": lambda T: T.GPTJModel(T.GPTJConfig(n_embd=16, n_head=2, n_layer=2, n_positions=32, rotary_dim=4,
                                               vocab_size=V)),
    "phi": lambda T: T.PhiModel(T.PhiConfig(**_S, partial_rotary_factor=0.5)),
    "cohere": lambda T: T.CohereModel(T.CohereConfig(**_S, num_key_value_heads=1)),
    "olmo": lambda T: T.OlmoModel(T.OlmoConfig(**_S, pad_token_id=0)),
    "stablelm": lambda T: T.StableLmModel(T.StableLmConfig(**_S, num_key_value_heads=1)),
    "stablelm-parallel-bias": lambda T: T.StableLmModel(T.StableLmConfig(**_S, num_key_value_heads=2,
                                                                         use_parallel_residual=True,
                                                                         use_qkv_bias=True)),
    "starcoder2-window": lambda T: T.Starcoder2Model(T.Starcoder2Config(**_S, num_key_value_heads=1,
                                                                         sliding_window=3)),
    "mistral-window": lambda T: T.MistralModel(T.MistralConfig(**_S, num_key_value_heads=1, sliding_window=3)),
    "qwen2-window-layers": lambda T: T.Qwen2Model(T.Qwen2Config(**_S, num_key_value_heads=1, use_sliding_window=True,
                                                                 sliding_window=3, max_window_layers=1)),
    "phi3-window": lambda T: T.Phi3Model(T.Phi3Config(**_S, num_key_value_heads=1, sliding_window=3,
                                                      pad_token_id=0)),
    "falcon-multi-query": lambda T: T.FalconModel(T.FalconConfig(hidden_size=16, num_attention_heads=4,
                                                                  num_hidden_layers=2, vocab_size=V)),
    "falcon-sequential-bias": lambda T: T.FalconModel(T.FalconConfig(hidden_size=16, num_attention_heads=4,
                                                                      num_hidden_layers=2, vocab_size=V,
                                                                      multi_query=False, parallel_attn=False,
                                                                      bias=True)),
    "falcon-new-architecture": lambda T: T.FalconModel(T.FalconConfig(hidden_size=16, num_attention_heads=4,
                                                                       num_hidden_layers=2, vocab_size=V,
                                                                       new_decoder_architecture=True,
                                                                       num_kv_heads=2)),
    "falcon-alibi": lambda T: T.FalconModel(T.FalconConfig(hidden_size=18, num_attention_heads=3, num_hidden_layers=2,
                                                            vocab_size=V, alibi=True, multi_query=False)),
    "roberta": lambda T: T.RobertaModel(T.RobertaConfig(**_S)),
    "distilbert": lambda T: T.DistilBertModel(T.DistilBertConfig(dim=16, n_heads=2, n_layers=2, hidden_dim=24,
                                                                 vocab_size=V, max_position_embeddings=32)),
}
WINDOWED = sorted(f for f in FAMILIES if "window" in f)
ALIBI = sorted(f for f in FAMILIES if "alibi" in f)
N = 9


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def saved(request, tmp_path_factory):
    """(family, library model re-read from disk, its stack, symuat Model)."""
    path = tmp_path_factory.mktemp(request.param.replace("-", "_"))
    randomize(FAMILIES[request.param](transformers), seed=len(request.param)).save_pretrained(path)
    model = load(path)  # the library's float64 model (eager experts), its stack (sharing its weights), the Model
    return request.param, model.library, model.stack, model


def test_every_token_every_layer(saved):
    family, library, stack, _ = saved
    assert_reproduces(library, stack, np.random.default_rng(1).standard_normal((N, stack.width)))


def test_right_padding(saved):
    family, library, stack, _ = saved
    assert_reproduces(library, stack, np.random.default_rng(2).standard_normal((N, stack.width)),
                      mask=[1] * (N - 1) + [0])


@pytest.mark.parametrize("saved", ALIBI, indirect=True)
def test_alibi_is_a_live_bias(saved):
    """Falcon's ALiBi table is in H_h: without it the output differs."""
    import dataclasses

    from symuat.numeric import stack_output

    family, _, stack, _ = saved
    X = np.random.default_rng(3).standard_normal((N, stack.width))
    off = dataclasses.replace(stack, blocks=tuple(dataclasses.replace(
        b, attention=dataclasses.replace(b.attention, alibi=None)) for b in stack.blocks))
    assert stack.blocks[0].attention.rotary is None
    assert np.max(np.abs(stack_output(stack, X) - stack_output(off, X))) > 1e-3


def test_windows_are_read_per_layer(saved):
    family, _, stack, _ = saved
    windows = [b.attention.sliding_window for b in stack.blocks]
    expected = {"qwen2-window-layers": [None, 3]}.get(family, [3, 3] if "window" in family else [None, None])
    assert windows == expected


@pytest.mark.parametrize("side", ["left", "right"])
def test_token_ids_padded_batch(saved, side):
    family, _, _, model = saved
    rng = np.random.default_rng(5)
    ids = rng.integers(2, V, size=(3, N))
    lengths = [N, 5, 2]
    mask = np.zeros_like(ids)
    for b, n in enumerate(lengths):
        mask[b, slice(N - n, N) if side == "left" else slice(0, n)] = 1
    ids[mask == 0] = 1 if family == "roberta" else 0
    forms = model.duat_form(input_ids=ids, attention_mask=mask)
    base = getattr(model.library, "base_model", model.library)
    with torch.no_grad(), library_float64():
        want = base(input_ids=torch.as_tensor(ids), attention_mask=torch.as_tensor(mask)).last_hidden_state.numpy()
    for b, form in enumerate(forms):
        w = want[b][mask[b].astype(bool)]
        assert form.output.shape[0] == lengths[b]
        assert np.max(np.linalg.norm(form.output - w, axis=1) / np.linalg.norm(w, axis=1)) <= 1e-12


@pytest.mark.parametrize("saved", WINDOWED, indirect=True)
def test_window_changes_the_output(saved):
    """The window is a real mask: without it the last tokens differ (inputs longer than the window)."""
    import dataclasses

    from symuat.numeric import stack_output

    family, _, stack, _ = saved
    X = np.random.default_rng(3).standard_normal((N, stack.width))
    full = dataclasses.replace(stack, blocks=tuple(dataclasses.replace(
        b, attention=dataclasses.replace(b.attention, sliding_window=None)) for b in stack.blocks))
    a, b = stack_output(stack, X), stack_output(full, X)
    assert np.array_equal(a[:3], b[:3]) and np.max(np.abs(a[3:] - b[3:])) > 1e-3


@pytest.mark.parametrize("saved", WINDOWED, indirect=True)
def test_holes_in_the_mask_with_a_window_are_refused(saved):
    family, _, _, model = saved
    with pytest.raises(UnsupportedError, match="pads between real tokens"):
        model.duat_form(input_ids=np.arange(2, 8), attention_mask=np.array([1, 1, 0, 1, 1, 1]))


def test_patching_matches_library_hooks(saved):
    """Re-computed activation patching (residual stream, sublayers, heads, neurons, experts) equals the library run
    with the same patch done by torch hooks (tests/patching_support.py) within 1e-12."""
    from patching_support import assert_patching_matches_library

    assert_patching_matches_library(saved[3])
