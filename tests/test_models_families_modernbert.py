"""ModernBERT: an encoder whose first attention norm is the identity, symmetric local windows (|i - j| <= w)
alternating with global layers, rotary tables per layer type, a fused Wqkv, a gated MLP (``Wi`` = [input | gate]),
the embedding LayerNorm as the stack's input norm.  Every token and layer within 1e-12 of the library under
``library_float64``, right padding, left- and right-padded id batches; the heads are the library's eager attention
probabilities (zero outside the window on local layers); the masked-LM logits, their attributions, the views and
activation patching (torch hooks) match the library; an unknown layer type is refused by name."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import (
    assert_logit_attributions,
    assert_padded_batch,
    assert_reproduces,
    assert_views_rebuild,
    randomize,
    require_torch,
)

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import UnsupportedError  # noqa: E402
from symuat.models import from_module, library_float64, load  # noqa: E402
from symuat.numeric.norms import IdentityNormWeights  # noqa: E402

V, N = 30, 9
_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=3, intermediate_size=12, vocab_size=V,
          max_position_embeddings=32, local_attention=4, global_attn_every_n_layers=2, pad_token_id=0,
          bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2)


def _library(**k):
    config = transformers.ModernBertConfig(**{**_S, "attention_bias": True, "mlp_bias": True, "norm_bias": True, **k})
    return randomize(transformers.ModernBertForMaskedLM(config), seed=4)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("modernbert")
    _library().save_pretrained(path)
    return load(path)


def _X(seed):
    return np.random.default_rng(seed).standard_normal((N, 16))


def test_every_token_every_layer(model):
    stack = model.stack
    assert isinstance(stack.blocks[0].ln1, IdentityNormWeights) and not isinstance(stack.blocks[1].ln1,
                                                                                   IdentityNormWeights)
    assert [b.attention.window for b in stack.blocks] == [None, 2, None]
    assert_reproduces(model.library.model, stack, _X(1))
    assert_reproduces(model.library.model, stack, _X(2), mask=[1] * (N - 2) + [0, 0])


def test_without_biases():
    library = randomize(transformers.ModernBertModel(transformers.ModernBertConfig(**_S)), seed=1)
    assert_reproduces(library, from_module(library), _X(3))


@pytest.mark.parametrize("side", ["left", "right"])
def test_token_ids_padded_batch(model, side):
    assert_padded_batch(model, side, N, V)


def test_attention_is_the_librarys_and_local_layers_stay_in_their_window(model):
    ids = np.arange(1, N + 1)
    form = model.duat_form(input_ids=ids)
    config = model.library.config
    impl, config._attn_implementation = config._attn_implementation, "eager"
    try:
        with torch.no_grad(), library_float64():
            want = model.library.model(input_ids=torch.as_tensor(ids)[None], output_attentions=True).attentions
    finally:
        config._attn_implementation = impl
    far = np.abs(np.subtract.outer(np.arange(N), np.arange(N))) > 2
    for k in range(3):
        for h in range(2):
            H = form.attention(k, h)
            assert np.max(np.abs(H - want[k][0, h].numpy())) <= 1e-14
            assert np.all(H[far] == 0) == (k == 1)


def test_logits_and_their_attributions(model):
    assert_logit_attributions(model, np.arange(2, 2 + N) % V, by=("head", "source", "neuron"))


def test_views_rebuild_the_library_state(model):
    ids = np.arange(N) % V
    form = model.duat_form(input_ids=ids)
    with torch.no_grad(), library_float64():
        want = model.library.model(input_ids=torch.from_numpy(ids)[None]).last_hidden_state[0].numpy()
    assert_views_rebuild(model, form, want)


@pytest.mark.slow  # the library's hooked runs per unit (about 1.5 s): CI's second step
def test_patching_matches_library_hooks(model):
    from patching_support import assert_patching_matches_library

    assert_patching_matches_library(model)


def test_an_unknown_layer_type_is_refused_by_name():
    library = _library()
    library.config.layer_types = ["full_attention", "chunked_attention", "full_attention"]
    with pytest.raises(UnsupportedError, match=r"config\.layer_types=.*'chunked_attention'.*\(modernbert\)"):
        from_module(library)


def test_the_torch_backend(model):
    """The identity norm and the symmetric windows on the torch backend (CPU): the library's state within 1e-12."""
    from symuat.models import to_device
    from symuat.numeric import duat_form

    X = _X(5)
    got = duat_form(to_device(model.stack, "cpu"), to_device(X, "cpu")).output
    with torch.no_grad(), library_float64():
        want = model.library.model(inputs_embeds=torch.from_numpy(X)[None]).last_hidden_state[0].numpy()
    got = got.cpu().numpy()
    assert np.max(np.linalg.norm(got - want, axis=1) / np.linalg.norm(want, axis=1)) <= 1e-12
