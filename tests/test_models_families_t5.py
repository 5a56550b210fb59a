"""T5, mT5 and UMT5 encoders: T5's RMSNorm, unscaled scores with the bucketed relative position bias (read from the
attention module's ``compute_bias``: layer 0's shared by every layer in T5/mT5, each layer's own in UMT5), ReLU or
gated-GELU feed-forward.  Every token and layer within 1e-12 of the library under ``library_float64`` (inputs longer
than ``relative_attention_max_distance``), right padding, left- and right-padded id batches; the heads are the
library's eager probabilities; attributions of an output direction, the views and activation patching (torch hooks)
match the library; ``from_module`` refuses an encoder–decoder by name (``load`` reads it:
test_models_families_t5_encdec.py)."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import assert_padded_batch, assert_reproduces, assert_views_rebuild, randomize, require_torch

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import UnsupportedError  # noqa: E402
from symuat.models import from_module, library_float64, load  # noqa: E402

V, N = 30, 9
_S = dict(d_model=16, d_kv=8, d_ff=12, num_layers=2, num_heads=2, vocab_size=V, relative_attention_num_buckets=8,
          relative_attention_max_distance=6, pad_token_id=0)
FAMILIES = {
    "t5": lambda T: T.T5EncoderModel(T.T5Config(**_S)),
    "mt5": lambda T: T.MT5EncoderModel(T.MT5Config(**_S, feed_forward_proj="gated-gelu")),
    "umt5": lambda T: T.UMT5EncoderModel(T.UMT5Config(**_S, feed_forward_proj="gated-gelu")),
}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def model(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param)
    randomize(FAMILIES[request.param](transformers), seed=len(request.param)).save_pretrained(path)
    return load(path)


def _X(seed):
    return np.random.default_rng(seed).standard_normal((N, 16))


def test_every_token_every_layer(model):
    stack = model.stack
    shared = np.array_equal(stack.blocks[0].attention.position_bias, stack.blocks[1].attention.position_bias)
    assert shared == (model.family != "umt5")
    assert_reproduces(model.library, stack, _X(1))
    assert_reproduces(model.library, stack, _X(2), mask=[1] * (N - 2) + [0, 0])


@pytest.mark.parametrize("side", ["left", "right"])
def test_token_ids_padded_batch(model, side):
    assert_padded_batch(model, side, N, V)


def test_attention_is_the_librarys(model):
    ids = np.arange(1, N + 1)
    form = model.duat_form(input_ids=ids)
    configs = list({id(m.config): m.config for m in model.library.modules() if hasattr(m, "config")}.values())
    impls = [c._attn_implementation for c in configs]  # the encoder may hold its own copy of the config
    try:
        for c in configs:
            c._attn_implementation = "eager"  # probabilities come from eager only
        with torch.no_grad(), library_float64():
            want = model.library(input_ids=torch.as_tensor(ids)[None], output_attentions=True).attentions
    finally:
        for c, impl in zip(configs, impls):
            c._attn_implementation = impl
    for k in range(2):
        for h in range(2):
            assert np.max(np.abs(form.attention(k, h) - want[k][0, h].numpy())) <= 1e-14


def test_attributions_and_views(model):
    ids = np.arange(2, 2 + N) % V
    form = model.duat_form(input_ids=ids)
    with torch.no_grad(), library_float64():
        want = model.library(input_ids=torch.as_tensor(ids)[None]).last_hidden_state[0].numpy()
    u = np.random.default_rng(3).standard_normal(16)
    for by in ("head", "source", "neuron"):
        a = form.attribution(by, target=u, position=4)
        assert abs(float(a.values.sum() + a.rest) - float(want[4] @ u)) <= 1e-12 * max(1.0, abs(float(want[4] @ u)))
    assert_views_rebuild(model, form, want)


def test_patching_matches_library_hooks(model):
    from patching_support import assert_patching_matches_library

    assert_patching_matches_library(model)


def test_an_encoder_decoder_is_refused_by_name():
    library = randomize(transformers.T5ForConditionalGeneration(transformers.T5Config(**_S)))
    with pytest.raises(UnsupportedError, match=r"T5ForConditionalGeneration \(t5\) is an encoder–decoder: "
                                               r"from_module reads one stack; symuat\.models\.load"):
        from_module(library)
