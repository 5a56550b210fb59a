"""Fault injection for the T5 encoders (relative position bias, T5's RMSNorm): a module edited so that it no longer
computes what symuat reads, or a bias table it cannot use, gives the one named error."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, T = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import ShapeError, UnsupportedError  # noqa: E402
from symuat.models import from_module  # noqa: E402
from symuat.numeric import AttentionWeights, head_attention_weights  # noqa: E402

_S = dict(d_model=16, d_kv=8, d_ff=12, num_layers=2, num_heads=2, vocab_size=30, relative_attention_num_buckets=8,
          relative_attention_max_distance=6, pad_token_id=0)


def _edit(fn):
    def edit(m):
        fn(m.encoder.block)
    return edit


FAULTS = {
    "first_layer_without_its_bias": (
        _edit(lambda b: setattr(b[0].layer[0].SelfAttention, "has_relative_attention_bias", False)),
        UnsupportedError, r"encoder\.block\.0: no relative attention bias before this layer"),
    "norm_a_layernorm": (_edit(lambda b: setattr(b[1].layer[1], "layer_norm", torch.nn.LayerNorm(16).double())),
                         UnsupportedError,
                         r"encoder\.block\.1\.layer\.1\.layer_norm \(LayerNorm\) is not T5's RMSNorm"),
    "act_swapped": (_edit(lambda b: setattr(b[0].layer[1].DenseReluDense, "act", torch.nn.GELU().double())),
                    UnsupportedError, r"encoder\.block\.0\.layer\.1\.DenseReluDense\.act is GELU \(gelu\) but the "
                                      "config says relu"),
}


@pytest.mark.parametrize("case", sorted(FAULTS))
def test_t5_fault(case):
    edit, error, match = FAULTS[case]
    model = randomize(T.T5EncoderModel(T.T5Config(**_S)), seed=2)
    edit(model)
    model.eval()
    with pytest.raises(error, match=match):
        from_module(model)


def test_bias_tables_it_cannot_use_are_refused():
    W = np.eye(4)
    with pytest.raises(ShapeError, match=r"position_bias must have 2P - 1 columns"):
        AttentionWeights(W, W, W, W, n_heads=2, position_bias=np.zeros((2, 4)))
    attn = AttentionWeights(W, W, W, W, n_heads=2, position_bias=np.zeros((2, 5)))
    with pytest.raises(ShapeError, match=r"the relative position bias covers 3 positions, the input has 4"):
        head_attention_weights(np.ones((4, 4)), attn)
