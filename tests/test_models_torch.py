"""torch.nn.TransformerEncoder(Layer): norm_first either way, relu/gelu (string or function), batch_first
either way, causal or not, with and without a final norm; compared with torch's own forward pass."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from models_support import TOL, randomize, require_torch, row_errors

torch, _ = require_torch()
#: One worker imports transformers' model classes (about 3.5 s per process) and runs every model test.
pytestmark = pytest.mark.xdist_group("models")

from symuat.models import from_module  # noqa: E402
from symuat.numeric import duat_form  # noqa: E402

M, HEADS, N = 16, 4, 6


def _encoder(norm_first, activation, batch_first, final_norm, layers=3):
    layer = torch.nn.TransformerEncoderLayer(M, HEADS, dim_feedforward=24, activation=activation,
                                             batch_first=batch_first, norm_first=norm_first, dropout=0.0)
    norm = torch.nn.LayerNorm(M, eps=1e-6) if final_norm else None
    enc = torch.nn.TransformerEncoder(layer, layers, norm=norm, enable_nested_tensor=False)
    return randomize(enc, seed=int(norm_first) + 2 * int(batch_first))


def _torch_forward(module, X, batch_first, causal):
    x = torch.from_numpy(X)
    x = x[None] if batch_first else x[:, None]
    mask = torch.nn.Transformer.generate_square_subsequent_mask(N, dtype=torch.float64) if causal else None
    with torch.no_grad():
        if isinstance(module, torch.nn.TransformerEncoder):
            y = module(x, mask=mask, is_causal=causal)
        else:
            y = module(x, src_mask=mask, is_causal=causal)
    return (y[0] if batch_first else y[:, 0]).numpy()


@pytest.mark.parametrize("norm_first,activation,batch_first,causal",
                         list(itertools.product([False, True], ["relu", "gelu"], [False, True], [False, True])))
def test_encoder_reproduced(norm_first, activation, batch_first, causal):
    enc = _encoder(norm_first, activation, batch_first, final_norm=norm_first)
    X = np.random.default_rng(0).standard_normal((N, M))
    form = duat_form(from_module(enc, causal=causal), X)
    assert row_errors(_torch_forward(enc, X, batch_first, causal), form.output, slice(None)) <= TOL


def test_single_layer_and_function_activation():
    layer = randomize(torch.nn.TransformerEncoderLayer(M, HEADS, 24, dropout=0.0,
                                                       activation=torch.nn.functional.gelu))
    X = np.random.default_rng(1).standard_normal((N, M))
    stack = from_module(layer)
    assert stack.depth == 1 and stack.activation == "gelu"
    assert row_errors(_torch_forward(layer, X, False, False), duat_form(stack, X).output, slice(None)) <= TOL
