"""The researcher's basics on tiny checkpoints (issue 32): a form made from text keeps its tokens (plots and sweeps
label with them), ``text_pair=`` is a sentence pair (a tuple is refused, not a silent batch), ``load(...,
tokenizer=)``, the residual stream of every layer against the library's hidden states, and the exact logit lens whose
last layer is the library's ``.logits``."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from test_models_load import _tokenizer  # noqa: E402

from symuat.errors import ArgumentTypeError, InvalidValueError  # noqa: E402
from symuat.models import library_float64, load  # noqa: E402

_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=24,
          max_position_embeddings=32, vocab_size=30)
TEXT = "the cat sat on a mat"


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    path = tmp_path_factory.mktemp("llama_tokens")
    randomize(transformers.LlamaForCausalLM(transformers.LlamaConfig(**_S, num_key_value_heads=1)),
              seed=4).save_pretrained(path)
    _tokenizer(False).save_pretrained(path)
    return load(path)


@pytest.fixture(scope="module")
def bert():
    return load(randomize(transformers.BertModel(transformers.BertConfig(**_S)), seed=5), tokenizer=_tokenizer(True))


def test_a_form_keeps_its_tokens(llama):
    form = llama.duat_form(text=TEXT)
    assert form.tokens == tuple(TEXT.split()) and form.to_str_tokens() == TEXT.split()
    assert list(form.token_ids) == llama.tokenizer(TEXT)["input_ids"]
    assert llama.to_str_tokens(TEXT) == TEXT.split()
    assert llama.to_str_tokens(input_ids=form.token_ids) == TEXT.split()
    ids_form = llama.duat_form(input_ids=form.token_ids)  # ids with a tokenizer: tokens too
    assert ids_form.tokens == form.tokens
    batch = llama.duat_form(text=["the cat", "a dog ran far"])  # left padded: the real tokens only
    assert [f.tokens for f in batch] == [("the", "cat"), ("a", "dog", "ran", "far")]


def test_token_labels_on_plots_and_sweeps(llama):
    pytest.importorskip("matplotlib")
    clean, corrupted = llama.duat_form(text=TEXT), llama.duat_form(text="the dog sat on a mat")
    sweep = corrupted.patch_sweep(clean, "resid", target=7)
    assert sweep.columns == tuple("the dog sat on a mat".split())
    fig = corrupted.plot()
    attention = next(ax for ax in fig.axes if ax.get_title().startswith("attention"))
    assert [t.get_text() for t in attention.get_xticklabels()] == list(corrupted.tokens)


def test_resid_and_logit_lens_match_the_library(llama):
    form = llama.duat_form(text=TEXT)
    ids = torch.tensor(form.token_ids)[None]
    with torch.no_grad(), library_float64():
        out = llama.library(input_ids=ids, output_hidden_states=True)
    states, logits = [h[0].numpy() for h in out.hidden_states], out.logits[0].numpy()
    cache = form.activations()
    for k in range(form.depth):  # the library's last hidden state has the final norm applied: compare up to L-1
        want = states[k]
        assert np.max(np.abs(form.resid(k) - want)) <= 1e-12 * np.max(np.abs(want))
        assert np.array_equal(cache.resid(k), form.resid(k))
    lens = form.logit_lens()
    assert lens.shape == (form.depth + 1, len(form.tokens), 30)
    assert np.max(np.abs(lens[-1] - logits)) <= 1e-12 * np.max(np.abs(logits))
    assert np.max(np.abs(form.logit_lens(positions=[-1])[:, 0] - lens[:, -1])) <= 1e-13
    assert np.max(np.abs(cache["output"] - form.output)) <= 1e-12
    assert cache["head.1"].shape == (2, 6, 8) and cache["neurons.0"].shape == (6, 24)
    with pytest.raises(InvalidValueError, match=r"no activation named 'resid\.9'; valid names: \['resid\.0'"):
        cache["resid.9"]


def test_text_pair_is_a_sentence_pair(bert):
    form = bert.duat_form(text="the cat sat", text_pair="on a mat")
    enc = bert.tokenizer("the cat sat", "on a mat")
    assert form.tokens == ("[CLS]", "the", "cat", "sat", "[SEP]", "on", "a", "mat", "[SEP]")
    with torch.no_grad(), library_float64():
        want = bert.library(input_ids=torch.as_tensor(enc["input_ids"])[None],
                            token_type_ids=torch.as_tensor(enc["token_type_ids"])[None]).last_hidden_state[0].numpy()
    assert np.max(np.linalg.norm(form.output - want, axis=1) / np.linalg.norm(want, axis=1)) <= 1e-12
    single = bert.duat_form(text="the cat sat on a mat")
    assert single.X0.shape[0] == 8 and np.max(np.abs(single.output[1:4] - form.output[1:4])) > 1e-6
    pairs = bert.duat_form(text=["the cat", "a dog"], text_pair=["sat", "ran far"])
    assert [len(f.tokens) for f in pairs] == [6, 7]


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(text=("the cat", "a dog")), ArgumentTypeError, "tuple, which is ambiguous"),
    (dict(text="the cat", text_pair=["a"]), ArgumentTypeError, "text_pair must be a str"),
    (dict(text=["the cat", "a"], text_pair=["a"]), ArgumentTypeError, "a list of 2 str"),
    (dict(input_ids=[3, 4], text_pair="a"), InvalidValueError, "text_pair needs text"),
])
def test_bad_text_inputs(bert, kwargs, error, match):
    with pytest.raises(error, match=match):
        bert.duat_form(**kwargs)


def test_load_tokenizer_argument(llama, tmp_path):
    module = llama.library
    bare = load(module)
    assert bare.tokenizer is None and bare.duat_form(input_ids=[3, 4]).tokens is None
    with pytest.raises(InvalidValueError, match="no tokens"):
        bare.duat_form(input_ids=[3, 4]).to_str_tokens()
    with pytest.raises(InvalidValueError, match="tokenizer="):
        bare.duat_form(text="the cat")
    _tokenizer(False).save_pretrained(tmp_path)
    given = load(module, tokenizer=str(tmp_path))
    assert given.duat_form(text="the cat").tokens == ("the", "cat")
    with pytest.raises(InvalidValueError, match="not a local directory holding a tokenizer"):
        load(module, tokenizer=str(tmp_path / "nowhere"))
    with pytest.raises(ArgumentTypeError, match="transformers tokenizer"):
        load(module, tokenizer=42)
    big = transformers.PreTrainedTokenizerFast(tokenizer_object=_big_vocab(), unk_token="[UNK]")
    with pytest.raises(InvalidValueError, match="40 tokens, the model's embeddings 30"):
        load(module, tokenizer=big)


def _big_vocab():
    from tokenizers import Tokenizer, models

    return Tokenizer(models.WordLevel({f"w{i}": i for i in range(39)} | {"[UNK]": 39}, unk_token="[UNK]"))
