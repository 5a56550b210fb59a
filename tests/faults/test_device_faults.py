"""Fault injection at the torch backend's boundaries (``load(..., device=)``, ``to_device``, a torch input to the
numeric core, a torch form given to an analysis): each hostile input gives its one named error; never a form computed
on mixed or wrong arrays."""

from __future__ import annotations

import re

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, T = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import InvalidValueError, ShapeError, UnsupportedError  # noqa: E402
from symuat.models import from_module, load, to_device  # noqa: E402
from symuat.models.device import check_device  # noqa: E402
from symuat.numeric import (  # noqa: E402
    Diagonal,
    Kron,
    block_forward,
    duat_form,
    ffn,
    head_attention_weights,
    mha_operator,
    multi_head_attention,
)
from symuat.numeric.residual_params import layer_residual_params  # noqa: E402


@pytest.fixture(scope="module")
def stack():
    return from_module(randomize(T.GPT2Model(T.GPT2Config(n_embd=8, n_head=2, n_layer=1, n_positions=16,
                                                          vocab_size=20)), seed=2).double().eval())


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpt2")
    randomize(T.GPT2Model(T.GPT2Config(n_embd=8, n_head=2, n_layer=1, n_positions=16, vocab_size=20)),
              seed=2).save_pretrained(path)
    return path


@pytest.mark.parametrize("device, match", [
    ("gpu", r"^device must be None \(NumPy\) or a torch device such as 'cpu' or 'cuda', got 'gpu'$"),
    (3.5, r"^device must be None \(NumPy\) or a torch device such as 'cpu' or 'cuda', got 3.5$"),
    ("meta", r"device='meta': the torch backend is tested on 'cpu' and 'cuda' only"),
    ("cpu:1", r"^device='cpu:1': the CPU has no device index; use 'cpu'$"),
])
def test_a_bad_device_is_refused_by_name(device, match):
    """One line naming the value (torch's own list of device types or signatures is not repeated)."""
    with pytest.raises(InvalidValueError, match=match):
        check_device(device)


def test_to_device_with_no_device_is_refused():
    """``device=None`` means NumPy everywhere: ``to_device(x, None)`` moves nothing and says so (it made a CPU
    tensor)."""
    with pytest.raises(InvalidValueError, match=r"to_device needs a torch device such as 'cpu' or 'cuda'; "
                                                r"device=None is the NumPy backend"):
        to_device(np.ones((2, 2)), None)


@pytest.mark.skipif("torch.cuda.is_available()",  # a string: evaluated at setup, so collecting imports no torch
                    reason="checks the refusal where there is no CUDA device")
def test_cuda_without_a_gpu_is_refused_at_load(saved):
    with pytest.raises(InvalidValueError, match=r"device='cuda': torch sees no CUDA device here"):
        load(saved, device="cuda")


@pytest.mark.parametrize("make, error, match", [
    (lambda: torch.zeros(3, 8, dtype=torch.float32), InvalidValueError,
     r"X must be a float64 array on the torch:cpu backend, got dtype torch.float32"),
    (lambda: torch.full((3, 8), float("nan"), dtype=torch.float64), InvalidValueError,
     r"X must be finite \(no NaN or inf\)"),
    (lambda: torch.tensor([[0.0] * 7 + [float("inf")]], dtype=torch.float64), InvalidValueError,
     r"X must be finite"),
    (lambda: torch.zeros(8, dtype=torch.float64), ShapeError, r"X must be 2-D, got 1-D array of shape \(8,\)"),
    (lambda: torch.zeros(3, 5, dtype=torch.float64), ShapeError, r"X must have shape \(\*, 8\), got"),
    (lambda: torch.zeros(0, 8, dtype=torch.float64), ShapeError, r"X.shape\[0\]"),
])
def test_a_hostile_torch_input_gets_one_named_error(stack, make, error, match):
    with pytest.raises(error, match=match):
        duat_form(to_device(stack, "cpu"), make())


def test_mixed_backends_are_refused_both_ways(stack):
    X = np.zeros((3, 8))
    with pytest.raises(InvalidValueError, match=r"X is on the torch:cpu backend but the stack's weights are on numpy"):
        duat_form(stack, to_device(X, "cpu"))
    with pytest.raises(InvalidValueError, match=r"X is on the numpy backend but the stack's weights are on torch:cpu"):
        duat_form(to_device(stack, "cpu"), X)


def test_torch_operator_factors_are_validated_on_their_backend():
    with pytest.raises(InvalidValueError, match=r"d must be finite"):
        Diagonal(torch.tensor([1.0, float("nan")], dtype=torch.float64))
    with pytest.raises(InvalidValueError, match=r"A must be a float64 array on the torch:cpu backend"):
        Kron(torch.ones(2, 2), np.eye(2))
    with pytest.raises(ShapeError, match=r"B must be 2-D, got 1-D"):
        Kron(np.eye(2), torch.ones(2, dtype=torch.float64))


@pytest.mark.parametrize("call", ["attribution", "token_terms", "frozen", "logit_lens", "activations", "bindings"])
def test_every_analysis_refuses_a_torch_form_by_name(saved, call):
    form = load(saved, device="cpu").duat_form(input_ids=[1, 2, 3])
    with pytest.raises(UnsupportedError, match=r"on torch:cpu|this form is on torch:cpu"):
        getattr(form, call)()


@pytest.mark.parametrize("call, args, named", [
    ("parameters", (0,), "form.parameters()"), ("dynamic", (1,), "form.dynamic()"),
    ("_repr_html_", (), "form._repr_html_()"), ("attention", (0, 0), "form.attention()"),
])
def test_a_torch_form_refusal_names_the_method_called(saved, call, args, named):
    """The refusal names the method the user called, not the analysis registered behind it."""
    form = load(saved, device="cpu").duat_form(input_ids=[1, 2, 3])
    with pytest.raises(UnsupportedError, match=rf"^{re.escape(named)} runs on the NumPy backend only; this form is on "
                                               r"torch:cpu: form.to_numpy\(\) re-evaluates it"):
        getattr(form, call)(*args)


@pytest.mark.parametrize("call, args", [("patch", (("resid", 1, 2),)), ("patch_sweep", ())])
def test_a_numpy_form_patched_from_a_torch_source_is_refused(saved, call, args):
    """A NumPy form with a torch form as the patch's source: one named error, never NumPy meeting a tensor."""
    clean, corrupted = load(saved, device="cpu").duat_form(input_ids=[1, 2, 3]), load(saved).duat_form(
        input_ids=[1, 4, 3])
    with pytest.raises(UnsupportedError, match=rf"form.{call}\(\): its (argument 2|argument 1) is a form on "
                                               r"torch:cpu, this one on NumPy: convert it with .to_numpy\(\) first"):
        getattr(corrupted, call)(*args, clean) if call == "patch" else corrupted.patch_sweep(clean)


def test_an_out_of_vocabulary_id_is_refused_before_any_device_work(saved):
    with pytest.raises(InvalidValueError, match=r"input_ids must lie in \[0, 20\), got values in \[1, 99\]"):
        load(saved, device="cpu").duat_form(input_ids=[1, 2, 99])


def test_single_layer_functions_refuse_mixed_backends(stack):
    """The public one-layer functions compare the input's backend with their weights' too."""
    block = stack.blocks[0]
    Xt = torch.zeros(3, 8, dtype=torch.float64)
    calls = {"multi_head_attention": lambda: multi_head_attention(Xt, block.attention),
             "head_attention_weights": lambda: head_attention_weights(Xt, block.attention),
             "mha_operator": lambda: mha_operator(Xt, block.attention),
             "ffn": lambda: ffn(Xt, block.ffn, "gelu_tanh"),
             "block_forward": lambda: block_forward(block, "pre_ln", "gelu_tanh", Xt),
             "layer_residual_params": lambda: layer_residual_params(block, "pre_ln", "gelu_tanh", Xt)}
    for name, call in calls.items():
        with pytest.raises(InvalidValueError, match=r"X is on the torch:cpu backend but the weights are on numpy"):
            call()


def _attn(**kw):
    from symuat.numeric import AttentionWeights

    rng = np.random.default_rng(4)
    W = [rng.standard_normal((4, 4)) for _ in range(4)]
    return AttentionWeights(*W, n_heads=2, **kw)


@pytest.mark.parametrize("extra, X, error, match", [
    # a relative bias covering 3 positions (5 relative offsets) and 4 tokens: refused before any device work
    ("position_bias", np.ones((4, 4)), ShapeError, r"the relative position bias covers 3 positions, the input has 4"),
    # sinks whose scores overflow: the head is named, no NaN reaches the softmax
    ("sinks", np.full((3, 4), 1e160), InvalidValueError, r"attention head 0: the scores s\*Q_h K_h\^T overflow"),
])
def test_the_attention_extras_on_torch_refuse_what_numpy_refuses(extra, X, error, match):
    """Sinks and T5's relative bias run on torch now: their hostile inputs get NumPy's errors there too."""
    attn = _attn(**{extra: np.zeros(2) if extra == "sinks" else np.zeros((2, 5))})
    for backend in (None, "cpu"):
        a, x = (attn, X) if backend is None else (to_device(attn, backend), to_device(X, backend))
        with pytest.raises(error, match=match):
            head_attention_weights(x, a)


@pytest.mark.parametrize("moved, error, match", [
    ("weights", UnsupportedError, r"cross-attention: the decoder stream is on the torch:cpu backend, the encoder's "
                                  r"output on numpy"),
    ("memory", InvalidValueError, r"X is on the torch:cpu backend but the weights are on numpy"),
])
def test_a_cross_attention_on_mixed_backends_is_refused(moved, error, match):
    """A torch decoder stream with the encoder's output (or the cross-attention's weights) left on NumPy: one named
    error before any arithmetic, never a mix."""
    from symuat.numeric import LayerNormWeights
    from symuat.numeric.cross import CrossAttention, cross_attention

    attn, norm, memory = _attn(), LayerNormWeights(np.ones(4), np.zeros(4)), np.ones((2, 4))
    if moved == "weights":
        attn, norm = to_device(attn, "cpu"), to_device(norm, "cpu")
    else:
        memory = to_device(memory, "cpu")
    with pytest.raises(error, match=match):
        cross_attention(CrossAttention(attn, norm, memory=memory), to_device(np.ones((3, 4)), "cpu"))
