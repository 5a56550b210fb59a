"""The torch backend (``symuat.models.to_device``, ``load(..., device=)``): the same numeric core evaluates the DUAT
form of GPT-2, Llama, Qwen2, Mixtral and BERT on NumPy and on torch (CPU here, a GPU where one is present), and every
token of every layer is within 1e-12 of the library's own float64 forward on both (and BLOOM's ALiBi, Gemma-2's
soft-capping and windows, Qwen2-MoE's shared expert)."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, transformers = require_torch()
#: a NumPy array meeting a torch tensor warns about __array_wrap__: an error here (no silent mixing of backends)
pytestmark = [pytest.mark.xdist_group("models"), pytest.mark.filterwarnings("error:__array_wrap__:DeprecationWarning")]

from symuat.errors import InvalidValueError, UnsupportedError  # noqa: E402
from symuat.models import from_module, library_float64, load, to_device  # noqa: E402
from symuat.numeric import duat_form, duat_relative_error, stack_output  # noqa: E402

TOL = 1e-12
V, N = 30, 7
_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=24, vocab_size=V,
          max_position_embeddings=32)

#: a representative family of each shape: learned positions + LayerNorm + GELU-tanh (GPT-2), RMSNorm + rotary + GQA +
#: SiLU gate (Llama), q/k/v biases and a sliding window (Qwen2), a mixture of experts (Mixtral), post-LN + exact GELU +
#: an input norm (BERT)
FAMILIES = {
    "gpt2": lambda T: T.GPT2Model(T.GPT2Config(n_embd=16, n_head=2, n_layer=2, n_positions=32, vocab_size=V)),
    "llama": lambda T: T.LlamaModel(T.LlamaConfig(**_S, num_key_value_heads=1)),
    "qwen2": lambda T: T.Qwen2Model(T.Qwen2Config(**_S, num_key_value_heads=1, use_sliding_window=True,
                                                  sliding_window=4, max_window_layers=0)),
    "mixtral": lambda T: T.MixtralModel(T.MixtralConfig(**_S, num_key_value_heads=1, num_local_experts=4,
                                                        num_experts_per_tok=2, experts_implementation="eager")),
    "bert": lambda T: T.BertModel(T.BertConfig(**_S)),
    # and the branches the five do not reach: ALiBi (BLOOM), soft-capping with the sandwich layout and alternating
    # windows (Gemma-2), a shared expert with its sigmoid gate (Qwen2-MoE)
    "bloom": lambda T: T.BloomModel(T.BloomConfig(hidden_size=16, n_head=2, n_layer=2, vocab_size=V)),
    "gemma2": lambda T: T.Gemma2Model(T.Gemma2Config(**{**_S, "num_hidden_layers": 3}, head_dim=8,
                                                     num_key_value_heads=1, sliding_window=3,
                                                     attn_logit_softcapping=1.5)),
    "qwen2_moe": lambda T: T.Qwen2MoeModel(T.Qwen2MoeConfig(**_S, num_key_value_heads=1, num_experts=4,
                                                            num_experts_per_tok=2, moe_intermediate_size=12,
                                                            shared_expert_intermediate_size=20,
                                                            experts_implementation="eager")),
    # attention sinks with sliding layers and clamped experts (GPT-OSS), T5's relative position buckets
    "gpt_oss": lambda T: T.GptOssModel(T.GptOssConfig(**_S, num_key_value_heads=1, head_dim=8, num_local_experts=4,
                                                      num_experts_per_tok=2, sliding_window=3,
                                                      experts_implementation="eager")),
    # multi-head latent attention with query compression, group-limited routing and a shared expert (DeepSeek-V3),
    # and DeepSeek-V2 without query compression
    "deepseek_v3": lambda T: T.DeepseekV3Model(T.DeepseekV3Config(
        **{**_S, "num_key_value_heads": 2}, moe_intermediate_size=8, n_shared_experts=1, n_routed_experts=4,
        num_experts_per_tok=2, kv_lora_rank=6, q_lora_rank=6, qk_nope_head_dim=4, qk_rope_head_dim=4, v_head_dim=3,
        first_k_dense_replace=1, n_group=2, topk_group=1, experts_implementation="eager")),
    "deepseek_v2": lambda T: T.DeepseekV2Model(T.DeepseekV2Config(
        **{**_S, "num_key_value_heads": 2}, moe_intermediate_size=8, n_shared_experts=1, n_routed_experts=4,
        num_experts_per_tok=2, kv_lora_rank=6, q_lora_rank=None, qk_nope_head_dim=4, qk_rope_head_dim=4,
        v_head_dim=3, first_k_dense_replace=1, experts_implementation="eager")),
    # input-scaled experts on alternate layers, a NoPE layer, the complex rotary table (Llama 4's text model)
    "llama4_text": lambda T: T.Llama4TextModel(T.Llama4TextConfig(
        **{**_S, "num_hidden_layers": 4}, num_key_value_heads=1, head_dim=8, intermediate_size_mlp=20,
        num_local_experts=4, num_experts_per_tok=2, interleave_moe_layer_step=2, attention_chunk_size=16,
        floor_scale=20)),
    "t5": lambda T: T.T5EncoderModel(T.T5Config(d_model=16, d_kv=8, d_ff=24, num_layers=2, num_heads=2, vocab_size=V,
                                                relative_attention_num_buckets=8,
                                                relative_attention_max_distance=6)),
}
#: Evaluated at setup, not at collection (which would import torch in every worker).
_GPU = pytest.mark.skipif("not torch.cuda.is_available()",
                          reason="no CUDA device here (the GPU test runs where one is)")
BACKENDS = ["numpy", "cpu", pytest.param("cuda", marks=_GPU)]


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request):
    """(name, library model in float64, its stack, an input, the library's hidden states)."""
    name = request.param
    model = randomize(FAMILIES[name](transformers), seed=len(name)).double().eval()
    stack = from_module(model)
    X = np.random.default_rng(len(name)).normal(size=(N, stack.width))
    with torch.no_grad(), library_float64():
        out = model(inputs_embeds=torch.from_numpy(X)[None], output_hidden_states=True)
    return name, model, stack, X, [h[0].numpy() for h in out.hidden_states]


def _on(backend, stack, X):
    return (stack, X) if backend == "numpy" else (to_device(stack, backend), to_device(X, backend))


def _host(a):
    return a if isinstance(a, np.ndarray) else a.cpu().numpy()


def _worst(want, got):
    return float(np.max(np.linalg.norm(want - got, axis=1) / np.linalg.norm(want, axis=1)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_layer_of_the_form_is_the_library_forward_on_every_backend(family, backend):
    """Box i of the streamed form is the DUAT form of the first i layers: each is within 1e-12 of the library's hidden
    state i on every token, the last with the final norm; the form's arrays stay on the backend."""
    name, _, stack, X, states = family
    S, Xb = _on(backend, stack, X)
    boxes = {}
    form = duat_form(S, Xb, on_box=lambda i, lin, bias, terms: boxes.__setitem__(i, (lin, bias, terms)))
    # the device the tensors are on: "cuda" resolves to "cuda:0" (seen on an H200)
    assert form.backend == ("numpy" if backend == "numpy" else f"torch:{Xb.device}")
    assert type(form.output) is (np.ndarray if backend == "numpy" else torch.Tensor)
    for i in range(1, stack.depth):  # intermediate boxes: the library's hidden state i (no final norm yet)
        lin, bias, terms = boxes[i]
        got = _host(lin + bias + sum(terms)).reshape(N, -1)
        assert _worst(states[i], got) <= TOL, (name, backend, i)
    assert _worst(states[-1], _host(form.output)) <= TOL, (name, backend)
    assert duat_relative_error(form) <= TOL


@pytest.mark.parametrize("backend", BACKENDS[1:])
def test_torch_and_numpy_forms_agree_term_by_term(family, backend):
    """Every term of the Eq. 11 sum (A~x0, c~, each U~_j app_j) agrees between the backends, not only their sum."""
    _, _, stack, X, _ = family
    a = duat_form(stack, X).terms
    b = duat_form(*_on(backend, stack, X)).terms
    for want, got in zip((a.linear_term, a.bias_term, *a.sigma_terms), (b.linear_term, b.bias_term, *b.sigma_terms)):
        scale = max(float(np.linalg.norm(a.total)), 1.0)
        assert float(np.linalg.norm(want - _host(got))) / scale <= TOL


def test_the_direct_forward_runs_on_torch_too(family):
    """The direct forward pass (the form's independent check) is backend-generic as well."""
    name, _, stack, X, states = family
    got = stack_output(*_on("cpu", stack, X))
    assert isinstance(got, torch.Tensor) and _worst(states[-1], got.numpy()) <= TOL, name


def test_padding_mask_on_torch():
    """A key-padding mask (a host 0/1 vector) on the torch backend: the real tokens as the library computes them."""
    model = randomize(FAMILIES["llama"](transformers), seed=3).double().eval()
    stack = from_module(model)
    X = np.random.default_rng(1).normal(size=(N, 16))
    mask = np.array([1, 1, 1, 1, 1, 0, 0])
    with torch.no_grad(), library_float64():
        want = model(inputs_embeds=torch.from_numpy(X)[None],
                     attention_mask=torch.from_numpy(mask)[None]).last_hidden_state[0].numpy()
    got = duat_form(*_on("cpu", stack, X), attention_mask=mask).output.numpy()
    assert _worst(want[:5], got[:5]) <= TOL
    as_tensor = duat_form(*_on("cpu", stack, X), attention_mask=torch.from_numpy(mask)).output.numpy()
    assert np.array_equal(as_tensor, got)  # a torch mask is the same mask


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpt2")
    randomize(transformers.GPT2LMHeadModel(transformers.GPT2Config(n_embd=16, n_head=2, n_layer=2, n_positions=32,
                                                                   vocab_size=V)), seed=5).save_pretrained(path)
    return path


def test_load_with_a_device_evaluates_with_torch(saved):
    """``load(dir, device="cpu")``: forms from token ids on torch, equal to the library's same call and to the NumPy
    backend's forms; the reference the form carries is the library's."""
    ids = np.array([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]])
    mask = np.array([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])  # left padding: the first row has 3 real tokens
    numpy_forms = load(saved).duat_form(input_ids=ids, attention_mask=mask)
    model = load(saved, device="cpu")
    assert model.device == "cpu"
    torch_forms = model.duat_form(input_ids=ids, attention_mask=mask)
    assert [f.output.shape[0] for f in torch_forms] == [3, 5]
    for a, b in zip(numpy_forms, torch_forms):
        assert b.backend == "torch:cpu"
        assert _worst(np.asarray(b.reference["output"]), b.output.numpy()) <= TOL
        assert np.max(np.abs(a.output - b.output.numpy())) <= TOL * np.max(np.abs(a.output))


def test_position_ids_move_only_the_new_rows(saved):
    """Explicit position ids re-make the stack's position rows; the weights already on the device are reused."""
    model = load(saved, device="cpu")
    moved = len(model._moved)
    form = model.duat_form(input_ids=[3, 1, 4], position_ids=[2, 3, 4])
    assert _worst(np.asarray(form.reference["output"]), form.output.numpy()) <= TOL
    assert len(model._moved) == moved + 1  # only the selected position rows were moved


def test_analyses_refuse_a_torch_form_by_name_and_to_numpy_converts(saved):
    """An analysis of a torch form is refused with one named error; ``to_numpy()`` re-evaluates it with NumPy, and
    the analysis then runs (its sum is the output)."""
    form = load(saved, device="cpu").duat_form(input_ids=[3, 1, 4, 1])
    for call in (lambda: form.attribution("term"), lambda: form.token_terms(), lambda: form.resid(1),
                 lambda: form.bindings(), lambda: form.attention(0, 0)):
        with pytest.raises(UnsupportedError, match=r"NumPy backend only; this form is on torch:cpu|not exported"):
            call()
    host = form.to_numpy()
    assert host.backend == "numpy" and host.tokens == form.tokens and host.to_numpy() is host
    assert np.max(np.abs(host.output - form.output.numpy())) <= TOL * np.max(np.abs(host.output))
    total = sum(host.token_terms().values())
    assert np.max(np.abs(total - host.output)) <= TOL * np.max(np.abs(host.output))


def test_a_stack_and_an_input_on_different_backends_are_refused(family):
    _, _, stack, X, _ = family
    with pytest.raises(InvalidValueError, match=r"X is on the torch:cpu backend but the stack's weights are on numpy"):
        duat_form(stack, to_device(X, "cpu"))
    with pytest.raises(InvalidValueError, match=r"X is on the numpy backend but the stack's weights are on torch:cpu"):
        duat_form(to_device(stack, "cpu"), X)


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_to_device_shares_cpu_memory_and_keeps_the_numpy_stack(name):
    """On the CPU every weight tensor is the NumPy stack's memory, strided views (Llama's transposed nn.Linear
    weights) included: no second copy of the model."""
    stack = from_module(randomize(FAMILIES[name](transformers), seed=1).double().eval())
    moved = to_device(stack, "cpu")
    for a, b in ((stack.blocks[0].attention, moved.blocks[0].attention), (stack.blocks[0].ffn, moved.blocks[0].ffn)):
        for field in ("W_Q", "W_O", "W1", "W_gate", "W_down"):
            W = getattr(a, field, None)
            if W is not None:
                t = getattr(b, field)
                assert isinstance(t, torch.Tensor) and t.data_ptr() == W.__array_interface__["data"][0], field
                assert np.array_equal(t.numpy(), W)
    assert isinstance(stack.blocks[0].attention.W_Q, np.ndarray)  # the original is untouched
    W = np.arange(12.0).reshape(3, 4)
    W.setflags(write=False)
    t = to_device(W.T, "cpu")  # a read-only transposed view, as load() keeps an nn.Linear's weight
    assert t.data_ptr() == W.__array_interface__["data"][0] and np.array_equal(t.numpy(), W.T)
    assert np.array_equal(to_device(W[::-1], "cpu").numpy(), W[::-1])  # negative strides: copied


@pytest.mark.parametrize("backend", BACKENDS[1:])
def test_an_encoder_decoder_on_torch_is_the_library(backend):
    """T5 on torch (relative position buckets in both stacks, the cross-attention reading the encoder's output on the
    device): the encoder's output, the decoder's and the logits within 1e-12 of the library, padded rows too."""
    library = randomize(transformers.T5ForConditionalGeneration(transformers.T5Config(
        d_model=16, d_kv=8, d_ff=12, num_layers=2, num_heads=2, vocab_size=V, relative_attention_num_buckets=8,
        relative_attention_max_distance=6, pad_token_id=0, decoder_start_token_id=0)), seed=4).double().eval()
    model = load(library, device=backend)
    ids, dids = np.arange(1, 10)[None].repeat(2, 0), np.array([[0, 3, 4, 5, 6, 7, 8, 9]]).repeat(2, 0)
    mask, dmask = np.ones_like(ids), np.ones_like(dids)
    mask[1, :2] = dmask[1, -3:] = 0  # left padding in the encoder's input, right padding in the decoder's
    with torch.no_grad(), library_float64():
        out = library(input_ids=torch.as_tensor(ids), attention_mask=torch.as_tensor(mask),
                      decoder_input_ids=torch.as_tensor(dids), decoder_attention_mask=torch.as_tensor(dmask),
                      output_hidden_states=True)
    forms = model.duat_form(input_ids=ids, attention_mask=mask, decoder_input_ids=dids, decoder_attention_mask=dmask)
    for b, form in enumerate(forms):
        e, d = mask[b].astype(bool), dmask[b].astype(bool)
        assert form.backend == form.encoder.backend == f"torch:{form.output.device}"
        assert form.output.device.type == backend
        assert _worst(out.encoder_last_hidden_state[b].numpy()[e], _host(form.encoder.output)) <= TOL
        assert _worst(out.decoder_hidden_states[-1][b].numpy()[d], _host(form.output)) <= TOL
        assert _worst(out.logits[b].numpy()[d], model.head.logits(_host(form.output))) <= TOL
    # on the host: the encoder's form kept and re-evaluated, the decoder's bit for bit the NumPy backend's own
    host, numpy_form = forms[1].to_numpy(), load(library).duat_form(
        input_ids=ids[1], attention_mask=mask[1], decoder_input_ids=dids[1], decoder_attention_mask=dmask[1])
    assert host.backend == host.encoder.backend == "numpy"
    assert np.array_equal(host.encoder.output, numpy_form.encoder.output)
    assert np.array_equal(host.output, numpy_form.output)


@_GPU
def test_gpu_forms_match_the_library(saved):
    """On a GPU: the form of every family's tiny model, and of a loaded checkpoint, within 1e-12 of the library."""
    model = load(saved, device="cuda")
    form = model.duat_form(input_ids=[3, 1, 4, 1, 5, 9])
    assert form.backend.startswith("torch:cuda")
    assert _worst(np.asarray(form.reference["output"]), form.output.cpu().numpy()) <= TOL
    for name, make in FAMILIES.items():
        lib = randomize(make(transformers), seed=len(name)).double().eval()
        stack = from_module(lib)
        X = np.random.default_rng(0).normal(size=(N, stack.width))
        with torch.no_grad(), library_float64():
            want = lib(inputs_embeds=torch.from_numpy(X)[None]).last_hidden_state[0].numpy()
        got = duat_form(to_device(stack, "cuda"), to_device(X, "cuda")).output.cpu().numpy()
        assert _worst(want, got) <= TOL, name
