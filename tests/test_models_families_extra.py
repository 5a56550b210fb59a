"""GPT-BigCode (multi-query and multi-head), GPT-Neo (global and local layers, unscaled scores), OPT (pre- and
post-LN, positions over the real tokens), Persimmon (per-head q/k LayerNorms, partial rotary), GLM-4 (sandwich
norms, interleaved partial rotary) and SmolLM3 (NoPE layers, sliding windows): tiny random float64 checkpoints saved
and re-read; every token and layer within 1e-12 of the library under ``library_float64``, right padding, left- and
right-padded id batches; MQA, NoPE, the local window and the interleaved rotary are live (replacing them changes the
output)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from models_support import assert_padded_batch, assert_reproduces, randomize, require_torch

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import UnsupportedError  # noqa: E402
from symuat.models import from_module, library_float64, load  # noqa: E402
from symuat.numeric import stack_output  # noqa: E402

V, N = 30, 9
_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=24, vocab_size=V,
          max_position_embeddings=32, pad_token_id=0)
_BC = dict(n_embd=16, n_head=2, n_layer=2, n_positions=32, vocab_size=V)
_OPT = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, ffn_dim=24, word_embed_proj_dim=16,
            max_position_embeddings=32, vocab_size=V)

FAMILIES = {
    "gpt_bigcode": lambda T: T.GPTBigCodeModel(T.GPTBigCodeConfig(**_BC)),
    "gpt_bigcode-multi-head": lambda T: T.GPTBigCodeModel(T.GPTBigCodeConfig(**_BC, multi_query=False,
                                                                             activation_function="gelu")),
    "gpt_neo": lambda T: T.GPTNeoModel(T.GPTNeoConfig(hidden_size=16, num_heads=2, num_layers=2,
                                                      max_position_embeddings=32, vocab_size=V, window_size=3,
                                                      attention_types=[[["global", "local"], 1]])),
    "opt": lambda T: T.OPTModel(T.OPTConfig(**_OPT)),
    "opt-post-ln": lambda T: T.OPTModel(T.OPTConfig(**_OPT, do_layer_norm_before=False)),
    "persimmon": lambda T: T.PersimmonModel(T.PersimmonConfig(**_S, qk_layernorm=True)),
    "glm4": lambda T: T.Glm4Model(T.Glm4Config(**_S, num_key_value_heads=1, head_dim=8, attention_bias=True)),
    "smollm3": lambda T: T.SmolLM3Model(T.SmolLM3Config(**{**_S, "num_hidden_layers": 4}, num_key_value_heads=1,
                                                        no_rope_layers=[1, 0, 1, 0], sliding_window=3,
                                                        layer_types=["sliding_attention", "full_attention",
                                                                     "full_attention", "sliding_attention"])),
}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def saved(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param.replace("-", "_"))
    randomize(FAMILIES[request.param](transformers), seed=len(request.param)).save_pretrained(path)
    model = load(path)
    return request.param, model.library, model.stack, model


def _X(seed, M=16):
    return np.random.default_rng(seed).standard_normal((N, M))


def test_every_token_every_layer(saved):
    family, library, stack, _ = saved
    assert_reproduces(library, stack, _X(1))
    assert_reproduces(library, stack, _X(2), mask=[1] * (N - 1) + [0])


@pytest.mark.parametrize("side", ["left", pytest.param("right", marks=pytest.mark.slow)])  # decoders pad left
def test_token_ids_padded_batch(saved, side):
    family, _, _, model = saved
    assert_padded_batch(model, side, N, V)


def _replace(stack, **attn):
    return dataclasses.replace(stack, blocks=tuple(dataclasses.replace(
        b, attention=dataclasses.replace(b.attention, **attn)) for b in stack.blocks))


def test_structure_is_read(saved):
    family, _, stack, _ = saved
    a = [b.attention for b in stack.blocks]
    if family == "gpt_bigcode":
        assert {x.n_kv_heads for x in a} == {1} and stack.position_embeddings is not None
    elif family == "gpt_bigcode-multi-head":
        assert {x.n_kv_heads for x in a} == {2}
    elif family == "gpt_neo":
        assert [x.sliding_window for x in a] == [None, 3] and {x.scale for x in a} == {1.0}
    elif family.startswith("opt"):
        assert stack.kind == ("post_ln" if family == "opt-post-ln" else "pre_ln")
        assert (stack.final_norm is None) == (family == "opt-post-ln") and stack.position_embeddings.shape[0] == 32
    elif family == "persimmon":
        assert a[0].q_norm.width == 8 and a[0].rotary.dim == 4 and stack.activation == "relu2"
    elif family == "glm4":
        assert stack.kind == "sandwich" and a[0].rotary.style == "interleaved" and a[0].rotary.dim == 4
    else:
        assert [x.rotary is not None for x in a] == [True, False, True, False]
        assert [x.sliding_window for x in a] == [3, None, None, 3]


@pytest.mark.parametrize("saved", ["glm4"], indirect=True)
def test_glm4_interleaved_rotary_is_live(saved):
    """The pairs (2j, 2j+1) matter: the same angles on the halves (rotate_half) give another output."""
    family, _, stack, _ = saved
    X = _X(3)
    rot = dataclasses.replace(stack.blocks[0].attention.rotary, style="half")
    assert np.max(np.abs(stack_output(stack, X) - stack_output(_replace(stack, rotary=rot), X))) > 1e-3


@pytest.mark.parametrize("saved", ["smollm3"], indirect=True)
def test_smollm3_nope_layers_are_live(saved):
    """A NoPE layer given the rotary embedding computes something else."""
    family, _, stack, _ = saved
    X = _X(3)
    rot = stack.blocks[0].attention.rotary
    assert np.max(np.abs(stack_output(stack, X) - stack_output(_replace(stack, rotary=rot), X))) > 1e-3


def test_smollm3_module_that_disagrees_with_its_config_is_refused():
    model = randomize(FAMILIES["smollm3"](transformers))
    model.layers[1].self_attn.use_rope = 1
    with pytest.raises(UnsupportedError, match=r"layers\.1\.self_attn\.use_rope=1 does not match "
                                               r"config\.no_rope_layers\[1\]=0"):
        from_module(model)


@pytest.mark.parametrize("saved", ["gpt_neo"], indirect=True)
def test_gpt_neo_local_window_is_live(saved):
    family, _, stack, _ = saved
    X = _X(3)
    full = _replace(stack, sliding_window=None)
    a, b = stack_output(stack, X), stack_output(full, X)
    assert np.array_equal(a[:3], b[:3]) and np.max(np.abs(a[3:] - b[3:])) > 1e-3


def test_gpt_neo_mask_buffer_other_than_its_config_is_refused():
    model = randomize(FAMILIES["gpt_neo"](transformers))
    with torch.no_grad():
        model.h[1].attn.attention.bias[..., 5, 1] = True  # a key outside the window of 3
    with pytest.raises(UnsupportedError, match=r"h\.1\.attn\.attention\.bias is not the local causal mask of "
                                               "window 3"):
        from_module(model)


@pytest.mark.parametrize("saved", ["opt"], indirect=True)
def test_opt_positions_count_real_tokens_only(saved):
    """OPT's positions are cumsum(mask) - 1: pads anywhere, even between real tokens, are exact."""
    family, _, _, model = saved
    ids = np.arange(2, 2 + N)[None]
    mask = np.ones_like(ids)
    mask[0, :2] = mask[0, 5] = 0
    form = model.duat_form(input_ids=ids, attention_mask=mask)[0]
    with torch.no_grad(), library_float64():
        want = model.library(input_ids=torch.as_tensor(ids), attention_mask=torch.as_tensor(mask)).last_hidden_state
    w = want[0].numpy()[mask[0].astype(bool)]
    assert np.max(np.linalg.norm(form.output - w, axis=1) / np.linalg.norm(w, axis=1)) <= 1e-12


def test_opt_projections_are_refused_by_name():
    cfg = transformers.OPTConfig(**{**_OPT, "word_embed_proj_dim": 8})
    with pytest.raises(UnsupportedError, match=r"word_embed_proj_dim=8 \(opt; hidden_size 16\)"):
        from_module(randomize(transformers.OPTModel(cfg)))


def test_gpt_bigcode_cross_attention_is_refused():
    cfg = transformers.GPTBigCodeConfig(**_BC, multi_query=False, add_cross_attention=True)
    with pytest.raises(UnsupportedError, match="add_cross_attention=True"):
        from_module(randomize(transformers.GPTBigCodeModel(cfg)))
