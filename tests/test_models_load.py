"""``symuat.models.load`` and ``Model.duat_form`` from text and token ids: every family, batches with left and right
padding, BERT sentence pairs, explicit position ids; every real token within 1e-12 of the library's same call."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import ArgumentTypeError, InvalidValueError, ShapeError, UnsupportedError  # noqa: E402
from symuat.models import Model, library_float64, load  # noqa: E402

TOL = 1e-12
V = 30
_SMALL = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=24,
              max_position_embeddings=32, vocab_size=V)

#: one tiny config per supported family (the family's own model class, as a checkpoint would name it)
FAMILIES = {
    "gpt2": lambda T: T.GPT2Model(T.GPT2Config(n_embd=16, n_head=2, n_layer=2, n_positions=32, vocab_size=V)),
    "gpt_neox": lambda T: T.GPTNeoXModel(T.GPTNeoXConfig(**_SMALL)),
    "llama": lambda T: T.LlamaForCausalLM(T.LlamaConfig(**_SMALL, num_key_value_heads=1)),
    "mistral": lambda T: T.MistralModel(T.MistralConfig(**_SMALL, num_key_value_heads=1)),
    "qwen2": lambda T: T.Qwen2Model(T.Qwen2Config(**_SMALL, num_key_value_heads=1)),
    "qwen3": lambda T: T.Qwen3Model(T.Qwen3Config(**_SMALL, num_key_value_heads=1, head_dim=8)),
    "gemma": lambda T: T.GemmaModel(T.GemmaConfig(**_SMALL, num_key_value_heads=1, head_dim=8)),
    "phi3": lambda T: T.Phi3Model(T.Phi3Config(**_SMALL, num_key_value_heads=1, pad_token_id=0)),
    "olmo2": lambda T: T.Olmo2Model(T.Olmo2Config(**_SMALL, num_key_value_heads=1)),
    "bert": lambda T: T.BertModel(T.BertConfig(**_SMALL)),
}

WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "away"]


def _tokenizer(bert: bool):
    """A tiny word-level tokenizer built in code (no download); BERT's adds [CLS]/[SEP] and pair types."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if bert:
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                                cls_token="[CLS]", sep_token="[SEP]",
                                                padding_side="right" if bert else "left",
                                                model_input_names=["input_ids", "token_type_ids", "attention_mask"]
                                                if bert else ["input_ids", "attention_mask"])


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def saved(request, tmp_path_factory):
    """(family, path, symuat Model loaded from the path)."""
    family = request.param
    path = tmp_path_factory.mktemp(family)
    randomize(FAMILIES[family](transformers), seed=len(family)).save_pretrained(path)
    _tokenizer(family == "bert").save_pretrained(path)
    return family, path, load(path)


def _library(model: Model, **kw):
    """The library's ``last_hidden_state`` for the same call (float64 throughout)."""
    base = getattr(model.library, "base_model", model.library)
    args = {k: torch.as_tensor(np.atleast_2d(v)) for k, v in kw.items() if v is not None}
    with torch.no_grad(), library_float64():
        return base(**args).last_hidden_state.numpy()


def _check(forms, want, mask):
    """Each form's output equals the library's rows at the real tokens."""
    mask = np.atleast_2d(mask)
    assert len(forms) == want.shape[0] == mask.shape[0]
    for b, form in enumerate(forms):
        w = want[b][mask[b].astype(bool)]
        err = np.max(np.linalg.norm(form.output - w, axis=1) / np.linalg.norm(w, axis=1))
        assert err <= TOL, (b, err)


def test_text_single(saved):
    family, _, model = saved
    form = model.duat_form(text="the cat sat on a mat")
    enc = model.tokenizer("the cat sat on a mat")
    want = _library(model, input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
    _check([form], want, enc["attention_mask"])


def test_text_batch_padded(saved):
    """Decoders' tokenizers pad on the left, BERT's on the right; the library's positions count the pads."""
    family, _, model = saved
    texts = ["the cat sat", "a dog ran far away on the mat", "the"]
    forms = model.duat_form(text=texts)
    enc = model.tokenizer(texts, padding=True)
    ids, mask = np.array(enc["input_ids"]), np.array(enc["attention_mask"])
    assert (mask == 0).any()
    _check(forms, _library(model, input_ids=ids, attention_mask=mask), mask)


@pytest.mark.parametrize("side", ["left", "right"])
def test_ids_batch_padded(saved, side):
    family, _, model = saved
    rng = np.random.default_rng(7)
    ids = rng.integers(0, V, size=(3, 9))
    lengths = [9, 5, 2]
    mask = np.zeros_like(ids)
    for b, n in enumerate(lengths):
        if side == "left":
            mask[b, 9 - n:] = 1
        else:
            mask[b, :n] = 1
    forms = model.duat_form(input_ids=ids, attention_mask=mask)
    assert [f.output.shape[0] for f in forms] == lengths
    _check(forms, _library(model, input_ids=ids, attention_mask=mask), mask)


def test_explicit_position_ids(saved):
    family, _, model = saved
    ids = np.random.default_rng(8).integers(0, V, size=6)
    pos = np.array([3, 4, 5, 9, 10, 20])
    form = model.duat_form(input_ids=ids, position_ids=pos)
    _check([form], _library(model, input_ids=ids, position_ids=pos), np.ones(6))
    default = model.duat_form(input_ids=ids)
    assert np.max(np.abs(default.output - form.output)) > 1e-6  # the positions matter


def test_bert_sentence_pairs():
    model = load_family("bert")
    enc = _tokenizer(bert=True)(["the cat sat", "a dog"], ["on a mat", "ran far away"], padding=True)
    ids, mask, types = (np.array(enc[k]) for k in ("input_ids", "attention_mask", "token_type_ids"))
    assert types.max() == 1
    forms = model.duat_form(input_ids=ids, attention_mask=mask, token_type_ids=types)
    _check(forms, _library(model, input_ids=ids, attention_mask=mask, token_type_ids=types), mask)


def test_gpt2_token_types():
    model = load_family("gpt2")
    ids = np.arange(6) % V
    types = np.array([0, 0, 1, 1, 2, 2])
    _check([model.duat_form(input_ids=ids, token_type_ids=types)],
           _library(model, input_ids=ids, token_type_ids=types), np.ones(6))


_LOADED: dict = {}


def load_family(family: str) -> Model:
    if family not in _LOADED:
        _LOADED[family] = load(randomize(FAMILIES[family](transformers), seed=3))
    return _LOADED[family]


def test_lm_head_and_memory_sharing(saved):
    family, _, model = saved
    assert (model.lm_head is not None) == (family == "llama")
    W = model.stack.blocks[0].ffn
    W = getattr(W, "W_down", getattr(W, "W2", None))
    assert not W.flags.writeable and not W.flags.owndata  # a view of the library's own tensor memory


BAD = {
    "both": (dict(text="the", input_ids=[1]), InvalidValueError, "exactly one of text and input_ids"),
    "neither": (dict(), InvalidValueError, "exactly one of text and input_ids"),
    "empty_ids": (dict(input_ids=[]), ShapeError, "non-empty"),
    "3d_ids": (dict(input_ids=np.zeros((1, 1, 2), int)), ShapeError, "1-D (one sequence) or 2-D"),
    "float_ids": (dict(input_ids=[1.5, 2.0]), ArgumentTypeError, "input_ids must be integers"),
    "id_out_of_vocab": (dict(input_ids=[1, V]), InvalidValueError, f"input_ids must lie in [0, {V})"),
    "negative_id": (dict(input_ids=[-1, 2]), InvalidValueError, "input_ids must lie in"),
    "too_long": (dict(input_ids=np.zeros(33, int)), ShapeError, "at most 32 positions"),
    "mask_shape": (dict(input_ids=[1, 2, 3], attention_mask=[1, 1]), ShapeError, "attention_mask has shape (1, 2)"),
    "mask_values": (dict(input_ids=[1, 2], attention_mask=[1, 2]), InvalidValueError, "attention_mask must lie in"),
    "mask_empty_row": (dict(input_ids=[[1, 2], [3, 4]], attention_mask=[[1, 1], [0, 0]]), InvalidValueError,
                       "attention_mask row 1 has no real token"),
    "position_too_large": (dict(input_ids=[1, 2], position_ids=[0, 32]), InvalidValueError, "position_ids must lie"),
    "token_types_unsupported": (dict(input_ids=[1, 2], token_type_ids=[0, 1]), UnsupportedError,
                                "has no token type embeddings"),
    "text_not_str": (dict(text=[1, 2]), ArgumentTypeError, "text must be a str or a non-empty list of str"),
    "no_tokenizer_text": (dict(text="the cat"), InvalidValueError, "this model has no tokenizer"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_calls(case):
    kwargs, error, piece = BAD[case]
    model = load_family("llama")
    with pytest.raises(error) as info:
        model.duat_form(**kwargs)
    assert piece in str(info.value)


def test_docs_example_runs(saved):
    """docs/models.md's first example runs as written on a checkpoint of every family."""
    import re
    from pathlib import Path

    family, path, _ = saved
    page = (Path(__file__).resolve().parents[1] / "docs" / "models.md").read_text()
    code = re.search(r"```python notest\n(.*?)```", page, re.S).group(1)  # run here, on every family
    exec(compile(code, "docs/models.md", "exec"), {"CHECKPOINT": path})
