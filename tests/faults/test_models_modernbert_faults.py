"""Fault injection for ModernBERT (identity first norm, symmetric local windows, gated MLP): a module swapped for
one symuat does not read as it, or window/norm values it cannot represent, give the one named error."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, T = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import InvalidValueError, ShapeError, UnsupportedError  # noqa: E402
from symuat.models import from_module  # noqa: E402
from symuat.numeric import AttentionWeights  # noqa: E402
from symuat.numeric.norms import IdentityNormWeights  # noqa: E402

_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=12, vocab_size=30,
          max_position_embeddings=32, local_attention=4, global_attn_every_n_layers=2, pad_token_id=0,
          bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2)


def _set(path, value):
    def edit(m):
        parent, _, name = path.rpartition(".")
        setattr(m.get_submodule(parent), name, value().eval())
    return edit


FAULTS = {
    "mlp_act_swapped": (_set("layers.1.mlp.act", lambda: torch.nn.GELU(approximate="tanh").double()),
                        UnsupportedError, r"layers\.1\.mlp\.act is GELU \(gelu_tanh\) but the config says gelu"),
    "attn_norm_an_rmsnorm": (_set("layers.1.attn_norm", lambda: torch.nn.RMSNorm(16).double()), UnsupportedError,
                             r"layers\.1\.attn_norm is a RMSNorm, not an nn\.LayerNorm"),
    "embedding_norm_an_identity": (_set("embeddings.norm", lambda: torch.nn.Identity()), UnsupportedError,
                                   r"embeddings\.norm is a Identity, not an nn\.LayerNorm"),
}


@pytest.mark.parametrize("case", sorted(FAULTS))
def test_modernbert_fault(case):
    edit, error, match = FAULTS[case]
    model = randomize(T.ModernBertModel(T.ModernBertConfig(**_S)), seed=3)
    edit(model)
    with pytest.raises(error, match=match):
        from_module(model)


@pytest.mark.parametrize("window", [-1, 1.5, True])
def test_a_window_that_is_not_a_distance_is_refused(window):
    W = np.eye(4)
    with pytest.raises(InvalidValueError, match=r"window must be an int >= 0"):
        AttentionWeights(W, W, W, W, n_heads=2, window=window)


def test_an_identity_norm_without_width_is_refused():
    with pytest.raises(ShapeError, match=r"width=0 must be a positive integer"):
        IdentityNormWeights(0)
