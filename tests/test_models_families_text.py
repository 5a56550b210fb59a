"""Text in, the DUAT form out, for the families added with symuat families' second batch (Granite, GraniteMoE,
GPT-BigCode, GLM-4, SmolLM3, BLOOM, MPT, PhiMoE; GPT-OSS, ModernBERT): a tiny word-level tokenizer saved with each
tiny checkpoint; one text and a left-padded batch of texts, every real token within 1e-12 of the library's
``last_hidden_state``."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import TOL, randomize, require_torch
from test_models_load import _tokenizer

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.models import library_float64, load  # noqa: E402

V = 20  # the word tokenizer's 14 ids fit
_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=12, vocab_size=V,
          max_position_embeddings=32, num_key_value_heads=1, pad_token_id=0)
_E = dict(num_local_experts=4, num_experts_per_tok=2)

FAMILIES = {
    "granite": lambda T: T.GraniteModel(T.GraniteConfig(**_S, embedding_multiplier=2.0, residual_multiplier=0.5,
                                                        attention_multiplier=0.3)),
    "granitemoe": lambda T: T.GraniteMoeModel(T.GraniteMoeConfig(**_S, **_E, residual_multiplier=0.5)),
    "gpt_bigcode": lambda T: T.GPTBigCodeModel(T.GPTBigCodeConfig(n_embd=16, n_head=2, n_layer=2, n_positions=32,
                                                                  vocab_size=V)),
    "glm4": lambda T: T.Glm4Model(T.Glm4Config(**_S, head_dim=8)),
    "smollm3": lambda T: T.SmolLM3Model(T.SmolLM3Config(**_S, no_rope_layers=[0, 1])),
    "bloom": lambda T: T.BloomModel(T.BloomConfig(hidden_size=16, n_head=2, n_layer=2, vocab_size=V)),
    "mpt": lambda T: T.MptModel(T.MptConfig(d_model=16, n_heads=2, n_layers=2, expansion_ratio=2, max_seq_len=32,
                                            vocab_size=V)),
    "phimoe": lambda T: T.PhimoeModel(T.PhimoeConfig(**_S, **_E)),
    "gpt_oss": lambda T: T.GptOssModel(T.GptOssConfig(**_S, **_E, head_dim=8, sliding_window=3)),
    "modernbert": lambda T: T.ModernBertModel(T.ModernBertConfig(
        hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=12, vocab_size=V,
        max_position_embeddings=32, local_attention=4, global_attn_every_n_layers=2, pad_token_id=0, bos_token_id=1,
        eos_token_id=2, cls_token_id=1, sep_token_id=2)),
}


#: the mixtures of experts run the library's eager expert loop (slow): CI's second step covers them
_SLOW = {"granitemoe", "phimoe", "gpt_oss"}


@pytest.fixture(scope="module", params=[pytest.param(f, marks=pytest.mark.slow) if f in _SLOW else f
                                        for f in sorted(FAMILIES)])
def model(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param)
    randomize(FAMILIES[request.param](transformers), seed=len(request.param)).save_pretrained(path)
    _tokenizer(bert=False).save_pretrained(path)
    return load(path)


def _check(model, forms, enc):
    ids, mask = np.atleast_2d(enc["input_ids"]), np.atleast_2d(enc["attention_mask"])
    with torch.no_grad(), library_float64():
        want = model.library(input_ids=torch.as_tensor(ids), attention_mask=torch.as_tensor(mask)).last_hidden_state
    for b, form in enumerate(forms):
        w = want[b].numpy()[mask[b].astype(bool)]
        assert np.max(np.linalg.norm(form.output - w, axis=1) / np.linalg.norm(w, axis=1)) <= TOL


def test_text(model):
    assert model.tokenizer is not None
    _check(model, [model.duat_form(text="the cat sat on a mat")], model.tokenizer("the cat sat on a mat"))


def test_text_batch_left_padded(model):
    texts = ["the cat sat", "a dog ran far away on the mat", "the"]
    enc = model.tokenizer(texts, padding=True)
    assert (np.array(enc["attention_mask"]) == 0).any()
    _check(model, model.duat_form(text=texts), enc)
