"""Fault injection for GPT-OSS (sinks, the clamped SwiGLU experts, the biased router): a module edited so that it no
longer computes what its config says, a parameter symuat does not read, or mixture-of-experts weights it cannot
represent give the one named error; never a silent wrong form."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, T = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import InvalidValueError, ShapeError, UnsupportedError  # noqa: E402
from symuat.models import from_module  # noqa: E402
from symuat.numeric import GatedFFNWeights  # noqa: E402
from symuat.numeric.moe import MoEFFNWeights  # noqa: E402

_S = dict(hidden_size=16, num_attention_heads=2, num_key_value_heads=1, head_dim=8, num_hidden_layers=2,
          intermediate_size=12, vocab_size=30, max_position_embeddings=32, num_local_experts=4, num_experts_per_tok=2,
          sliding_window=3, experts_implementation="eager")


def _gpt_oss():
    model = randomize(T.GptOssModel(T.GptOssConfig(**_S)), seed=2)
    with torch.no_grad():
        model.layers[0].post_attention_layernorm.weight.mul_(8.0)  # the clamps engage: their constants are live
    return model


def _set(path, value):
    def edit(m):
        parent, _, name = path.rpartition(".")
        setattr(m.get_submodule(parent), name, value)
    return edit


def _add_param(path, name, shape):
    def edit(m):
        m.get_submodule(path).register_parameter(name, torch.nn.Parameter(torch.zeros(shape, dtype=torch.float64)))
    return edit


_PROBE = r"layer 1 of the module does not compute what its weights and config say"
FAULTS = {
    # the experts module's own constants differ from the config's released ones: the probe finds the layer
    "expert_alpha_off_the_config": (_set("layers.0.mlp.experts.alpha", 1.5), UnsupportedError, _PROBE),
    "expert_limit_off_the_config": (_set("layers.0.mlp.experts.limit", 2.0), UnsupportedError, _PROBE),
    # the router picks another number of experts than the module says it does
    "router_top_k_not_a_number": (_set("layers.1.mlp.router.top_k", 0), UnsupportedError,
                                  r"layers\.1\.mlp\.router has no top_k"),
    "experts_left_over_parameter": (_add_param("layers.1.mlp.experts", "scale", (4,)), InvalidValueError,
                                    r"layers\.1\.mlp holds parameters symuat did not read \(experts\.scale"),
    "sinks_removed": (_set("layers.0.self_attn.sinks", None), UnsupportedError,
                      r"layers\.0\.self_attn has no sinks"),
}


@pytest.mark.parametrize("case", sorted(FAULTS))
def test_gpt_oss_fault(case):
    edit, error, match = FAULTS[case]
    model = _gpt_oss()
    edit(model)
    with pytest.raises(error, match=match):
        from_module(model)


def _expert(rng, **kw):
    return GatedFFNWeights(rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.standard_normal((3, 4)),
                           **kw)


@pytest.mark.parametrize("kw, error, match", [
    (dict(up_clamp=(1.0, 2.0)), InvalidValueError, r"up_clamp=\(limit, shift\) needs limit > 0 and \|shift\|"),
    (dict(up_clamp=(0.0, 0.0)), InvalidValueError, r"needs limit > 0"),
    (dict(router_bias=np.zeros(3)), ShapeError, "router_bias"),
    (dict(bias_down=True), InvalidValueError, r"expert 0 has a down-projection bias"),
])
def test_moe_weights_it_cannot_represent_are_refused(kw, error, match):
    rng = np.random.default_rng(0)
    down = kw.pop("bias_down", False)
    experts = (_expert(rng, b_down=np.ones(4) if down else None), _expert(rng))
    with pytest.raises(error, match=match):
        MoEFFNWeights(experts, rng.standard_normal((4, 2)), 1, **kw)
