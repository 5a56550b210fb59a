"""The LM head of every family of the second batch: the form's logits ``output Uᵀ + b`` (``form.unembedding``) equal
the library's ``.logits`` within 1e-12 (Granite's ``logits_scaling`` included; PhiMoE's head bias); a head that
scales or caps its logits without symuat knowing it would fail here.  The head, source and neuron attributions of
the logits sum to the library's logits; through a mixture of experts they are refused by name."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.models import library_float64, load  # noqa: E402
from symuat.numeric.head import as_head  # noqa: E402

V, N = 30, 7
_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=12, vocab_size=V,
          max_position_embeddings=32, num_key_value_heads=1, pad_token_id=0)
_H = dict(_S, head_dim=8)
_E = dict(num_local_experts=4, num_experts_per_tok=2, experts_implementation="eager")
_G = dict(embedding_multiplier=2.0, residual_multiplier=0.5, logits_scaling=3.0)

#: family → (head class, config class, config options)
HEADS = {
    "granite": ("GraniteForCausalLM", "GraniteConfig", dict(_S, **_G)),
    "granitemoe": ("GraniteMoeForCausalLM", "GraniteMoeConfig", dict(_S, **_G, **_E)),
    "granitemoeshared": ("GraniteMoeSharedForCausalLM", "GraniteMoeSharedConfig",
                         dict(_S, **_G, **_E, shared_intermediate_size=8)),
    "gpt_bigcode": ("GPTBigCodeForCausalLM", "GPTBigCodeConfig", dict(n_embd=16, n_head=2, n_layer=2,
                                                                        n_positions=32, vocab_size=V)),
    "gpt_neo": ("GPTNeoForCausalLM", "GPTNeoConfig", dict(hidden_size=16, num_heads=2, num_layers=2, vocab_size=V,
                                                         max_position_embeddings=32, window_size=3,
                                                         attention_types=[[["global", "local"], 1]])),
    "cohere": ("CohereForCausalLM", "CohereConfig", dict(_S, logit_scale=0.5)),  # house's family, its scaled head
    "opt": ("OPTForCausalLM", "OPTConfig", dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, ffn_dim=24,
                                                word_embed_proj_dim=16, max_position_embeddings=32, vocab_size=V)),
    "persimmon": ("PersimmonForCausalLM", "PersimmonConfig", dict(_S, qk_layernorm=True)),
    "glm4": ("Glm4ForCausalLM", "Glm4Config", _H),
    "smollm3": ("SmolLM3ForCausalLM", "SmolLM3Config", _S),
    "bloom": ("BloomForCausalLM", "BloomConfig", dict(hidden_size=16, n_head=2, n_layer=2, vocab_size=V)),
    "mpt": ("MptForCausalLM", "MptConfig", dict(d_model=16, n_heads=2, n_layers=2, expansion_ratio=2,
                                                max_seq_len=32, vocab_size=V)),
    "phimoe": ("PhimoeForCausalLM", "PhimoeConfig", dict(_S, **_E, lm_head_bias=True)),
    "ministral": ("MinistralForCausalLM", "MinistralConfig", _H),
    "seed_oss": ("SeedOssForCausalLM", "SeedOssConfig", _H),
    "helium": ("HeliumForCausalLM", "HeliumConfig", _H),
    "ernie4_5": ("Ernie4_5ForCausalLM", "Ernie4_5Config", _H),
    "glm": ("GlmForCausalLM", "GlmConfig", _H),
    "arcee": ("ArceeForCausalLM", "ArceeConfig", _H),
    "olmo3": ("Olmo3ForCausalLM", "Olmo3Config", _H),
    "exaone4": ("Exaone4ForCausalLM", "Exaone4Config", _H),
    "nemotron": ("NemotronForCausalLM", "NemotronConfig", _H),
}
#: the default run checks one head of each kind (scaled, ALiBi, learned positions, rotary); CI's slow step all of them
_DEFAULT = {"granite", "cohere", "bloom", "opt", "glm"}


@pytest.mark.parametrize("family", [f if f in _DEFAULT else pytest.param(f, marks=pytest.mark.slow)
                                    for f in sorted(HEADS)])
def test_form_logits_are_the_library_logits(family):
    head, config, options = HEADS[family]
    library = randomize(getattr(transformers, head)(getattr(transformers, config)(**options)), seed=len(family))
    model = load(library)
    assert model.family == family and model.lm_head is not None
    ids = np.arange(1, 1 + N) % V
    form = model.duat_form(input_ids=ids)
    got = as_head(form.unembedding).logits(form.output)  # the head as imported: U, b and its scale
    with torch.no_grad(), library_float64():
        want = library(input_ids=torch.as_tensor(ids)[None]).logits[0].numpy()
    assert np.max(np.abs(got - want)) <= 1e-12 * np.max(np.abs(want))
    for by in ("head", "source", "neuron"):  # every attribution sums to the library's logits
        a = form.attribution(by, target="logits")
        assert np.max(np.abs(a.values.sum(0) + a.rest - want)) <= 1e-11 * max(1.0, np.max(np.abs(want)))
