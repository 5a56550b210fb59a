"""Fault injection at the models boundary: checkpoints, modules, norms at huge inputs, non-finite errors, memory and
``symuat model``'s options.  Each case asserts the exact outcome: the right answer, or one ``symuat: error:`` line
with exit 2 (CLI) / the named symuat error (API)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner
from faults_support import one_error_line
from models_support import randomize, require_torch, row_errors

torch, T = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.cli import main  # noqa: E402
from symuat.errors import (  # noqa: E402
    InvalidValueError,
    OutOfMemoryError,  # noqa: E402
    UnsupportedError,
)
from symuat.models import from_module, library_float64, load_pretrained  # noqa: E402
from symuat.numeric import LayerNormWeights, RMSNormWeights, apply_norm, duat_form, layer_norm, norm_operator  # noqa: E402

M = 16


def _gpt2():
    return randomize(T.GPT2Model(T.GPT2Config(n_embd=M, n_head=2, n_layer=2, n_positions=32, vocab_size=40)))


def _llama():
    return randomize(T.LlamaModel(T.LlamaConfig(hidden_size=M, num_attention_heads=2, num_hidden_layers=2,
                                                intermediate_size=24, max_position_embeddings=32, vocab_size=40)))


def _bert():
    return randomize(T.BertModel(T.BertConfig(hidden_size=M, num_attention_heads=2, num_hidden_layers=1,
                                              intermediate_size=24, max_position_embeddings=32, vocab_size=40)))


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpt2_faults")
    _gpt2().save_pretrained(path)
    return path


def _copy(src, tmp_path):
    dst = tmp_path / "ckpt"
    shutil.copytree(src, dst)
    return dst


def _run(*args):
    return CliRunner().invoke(main, ["model", *map(str, args)])


# ---- checkpoints -------------------------------------------------------------------------------------------------
def _edit_weights(path, edit):
    from safetensors.torch import load_file, save_file

    f = path / "model.safetensors"
    tensors = load_file(str(f))
    edit(tensors)
    save_file(tensors, str(f), metadata={"format": "pt"})


def _drop(key):
    return lambda t: t.pop(key)


def _add(key):
    return lambda t: t.__setitem__(key, torch.zeros(3, dtype=torch.float64))


def _reshape(key):
    return lambda t: t.__setitem__(key, torch.zeros(4, 4, dtype=torch.float64))


def _more_layers(path):
    cfg = json.loads((path / "config.json").read_text())
    cfg["n_layer"] = 3
    (path / "config.json").write_text(json.dumps(cfg))


CHECKPOINT_FAULTS = {
    "missing_weight": (lambda p: _edit_weights(p, _drop("h.1.mlp.c_fc.weight")),
                       ["1 missing (h.1.mlp.c_fc.weight)", "never uses randomly initialised weights"]),
    "config_more_layers_than_weights": (_more_layers, ["missing (h.2.", "does not match its config"]),
    "unexpected_weight": (lambda p: _edit_weights(p, _add("h.0.mlp.extra")), ["1 unexpected (h.0.mlp.extra)"]),
    "mismatched_shape": (lambda p: _edit_weights(p, _reshape("h.0.ln_1.weight")),
                         ["1 mismatched (h.0.ln_1.weight: checkpoint (4, 4), model (16,))"]),
    "pickle_weights_only": (lambda p: ((p / "model.safetensors").rename(p / "pytorch_model.bin")),
                            ["no *.safetensors weights"]),
    "corrupt_safetensors": (lambda p: (p / "model.safetensors").write_bytes(b"\x00garbage" * 8),
                            ["cannot load the checkpoint"]),
    "config_not_json": (lambda p: (p / "config.json").write_text("{nope"), ["is not valid JSON"]),
    "unsupported_type": (lambda p: (p / "config.json").write_text('{"model_type": "codegen"}'),
                         ["unsupported model type 'codegen'"]),
}


@pytest.mark.parametrize("case", sorted(CHECKPOINT_FAULTS))
def test_checkpoint_faults(case, gpt2_dir, tmp_path):
    edit, pieces = CHECKPOINT_FAULTS[case]
    path = _copy(gpt2_dir, tmp_path)
    edit(path)
    one_error_line(_run(path), *pieces)
    with pytest.raises((InvalidValueError, UnsupportedError)):
        load_pretrained(path)


def test_pickle_next_to_safetensors_is_never_read(gpt2_dir, tmp_path):
    """A pytorch_model.bin beside the safetensors file is ignored (use_safetensors=True)."""
    path = _copy(gpt2_dir, tmp_path)
    (path / "pytorch_model.bin").write_bytes(b"not a pickle")
    model, stack = load_pretrained(path)
    X = np.random.default_rng(0).standard_normal((5, M))
    with torch.no_grad(), library_float64():
        want = model(inputs_embeds=torch.from_numpy(X)[None]).last_hidden_state[0].numpy()
    assert row_errors(want, duat_form(stack, X).output, slice(None)) <= 1e-12


# ---- modules -----------------------------------------------------------------------------------------------------
def _hook(m):
    return m.h[0].mlp.register_forward_hook(lambda mod, args, out: out + 1.0)


def _pre_hook(m):
    return m.ln_f.register_forward_pre_hook(lambda mod, args: None)


def _kw_hook(m):
    return m.h[1].attn.register_forward_hook(lambda mod, args, kwargs, out: None, with_kwargs=True, always_call=True)


def _replace_forward(m):
    m.h[0].attn.forward = lambda *a, **k: None


def _dropout_train(m):
    m.h[1].attn.attn_dropout.train()


def _flex(m):
    m.config._attn_implementation = "flex_attention"


MODULE_FAULTS = {
    "train_mode": (lambda m: m.train(), "the module is in training mode (<root>"),
    "one_submodule_in_train_mode": (_dropout_train, "training mode (h.1.attn.attn_dropout)"),
    "forward_hook": (_hook, "forward hooks on h.0.mlp"),
    "pre_forward_hook": (_pre_hook, "pre-forward hooks on ln_f"),
    "forward_hook_with_kwargs": (_kw_hook, "forward hooks on h.1.attn"),
    "instance_forward": (_replace_forward, "forward replaced on the instance of h.0.attn"),
    "attention_implementation": (_flex, "attention implementation 'flex_attention'"),
}


@pytest.mark.parametrize("case", sorted(MODULE_FAULTS))
def test_module_faults(case):
    edit, piece = MODULE_FAULTS[case]
    model = _gpt2()
    edit(model)
    with pytest.raises(UnsupportedError) as info:
        from_module(model)
    assert piece in str(info.value)


@pytest.mark.parametrize("kind", ["forward", "forward_pre"])
def test_global_hooks(kind):
    from torch.nn.modules import module as tm

    register = getattr(tm, f"register_module_{kind}_hook")
    handle = register(lambda *a: None)
    try:
        with pytest.raises(UnsupportedError, match="torch has global module hooks registered"):
            from_module(_gpt2())
    finally:
        handle.remove()


def test_replaced_sdpa_function(monkeypatch):
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    monkeypatch.setitem(ALL_ATTENTION_FUNCTIONS, "sdpa", lambda *a, **k: None)
    with pytest.raises(UnsupportedError, match=r"ALL_ATTENTION_FUNCTIONS\['sdpa'\] has been replaced"):
        from_module(_gpt2())


def test_backward_hook_and_library_capture_hooks_are_allowed():
    """Backward hooks and transformers' own hidden-state recorders do not change the forward pass: exact answer."""
    model = _gpt2()
    model.h[0].register_full_backward_hook(lambda *a: None)
    X = np.random.default_rng(1).standard_normal((6, M))
    with torch.no_grad(), library_float64():
        want = model(inputs_embeds=torch.from_numpy(X)[None], output_hidden_states=True).last_hidden_state[0].numpy()
    assert any(m._forward_hooks for m in model.modules())  # the recorders are installed now
    assert row_errors(want, duat_form(from_module(model), X).output, slice(None)) <= 1e-12


def _swap(path, new):
    def edit(m):
        parent, name = path.rsplit(".", 1)
        setattr(m.get_submodule(parent), name, new().double().eval())
    return edit


ACTIVATION_FAULTS = {
    "llama_silu_to_gelu": (_llama, _swap("layers.1.mlp.act_fn", lambda: torch.nn.GELU()),
                           "layers.1.mlp.act_fn is GELU (gelu) but the config says silu"),
    "gpt2_gelu_new_to_gelu": (_gpt2, _swap("h.0.mlp.act", lambda: T.activations.GELUActivation()),
                              "h.0.mlp.act is GELUActivation (gelu) but the config says gelu_tanh"),
    "bert_gelu_to_relu": (_bert, _swap("encoder.layer.0.intermediate.intermediate_act_fn", lambda: torch.nn.ReLU()),
                          "intermediate_act_fn is ReLU (relu) but the config says gelu"),
    "unknown_activation_module": (_llama, _swap("layers.0.mlp.act_fn", lambda: torch.nn.Tanh()),
                                  "layers.0.mlp.act_fn is Tanh (unknown)"),
    "llama_rmsnorm_to_layernorm": (_llama, _swap("layers.0.input_layernorm", lambda: torch.nn.LayerNorm(M)),
                                   "layers.0.input_layernorm (LayerNorm) is not an RMSNorm"),
    "gpt2_layernorm_to_rmsnorm": (_gpt2, _swap("h.1.ln_2", lambda: torch.nn.RMSNorm(M)),
                                  "h.1.ln_2 is a RMSNorm, not an nn.LayerNorm"),
}


@pytest.mark.parametrize("case", sorted(ACTIVATION_FAULTS))
def test_submodule_differs_from_config(case):
    make, edit, piece = ACTIVATION_FAULTS[case]
    model = make()
    edit(model)
    with pytest.raises(UnsupportedError) as info:
        from_module(model)
    assert piece in str(info.value)


def test_activation_class_patched(monkeypatch):
    """The class is right but its forward is not silu: the probe finds it."""
    monkeypatch.setattr(T.activations.SiLUActivation, "forward", lambda self, x: torch.nn.functional.gelu(x))
    with pytest.raises(UnsupportedError, match=r"layers.0.mlp.act_fn \(SiLUActivation\) does not compute silu"):
        from_module(_llama())


def test_norm_class_patched(monkeypatch):
    from transformers.models.llama import modeling_llama

    monkeypatch.setattr(modeling_llama.LlamaRMSNorm, "forward", lambda self, x: x)
    with pytest.raises(UnsupportedError, match=r"layers.0.input_layernorm \(LlamaRMSNorm\) does not compute the norm"):
        from_module(_llama())


def test_attention_function_patched(monkeypatch):
    """A patched eager attention changes layer 1: the whole-model probe names the layer."""
    from transformers.models.llama import modeling_llama

    original = modeling_llama.eager_attention_forward

    def doubled(module, q, k, v, mask, scaling, **kw):
        return original(module, q, k, v, mask, 2 * scaling, **kw)

    monkeypatch.setattr(modeling_llama, "eager_attention_forward", doubled)
    model = _llama()
    model.config._attn_implementation = "eager"
    with pytest.raises(UnsupportedError, match="layer 1 of the module does not compute what its weights"):
        from_module(model)


# ---- norms at huge finite inputs -----------------------------------------------------------------------------------
def _reference(X, gamma, beta, eps, centred):
    Xl = X.astype(np.longdouble)  # x86 long double: squares of 1e300 are finite
    Z = Xl - Xl.mean(axis=1, keepdims=True) if centred else Xl
    return (Z / np.sqrt((Z * Z).mean(axis=1, keepdims=True) + np.longdouble(eps)) * gamma + beta).astype(float)


@pytest.mark.parametrize("scale", [1e160, 1e250, 1e300])
@pytest.mark.parametrize("norm", ["layer_direct", "layer_operator", "rms_direct", "rms_operator"])
def test_norm_of_huge_finite_rows(norm, scale):
    if np.finfo(np.longdouble).maxexp <= 1024:
        pytest.skip("no extended-precision long double for the reference")
    rng = np.random.default_rng(3)
    X = rng.standard_normal((3, 8))
    X[1] *= scale
    gamma, beta = rng.standard_normal(8), rng.standard_normal(8)
    layer = norm.startswith("layer")
    w = LayerNormWeights(gamma, beta, eps=1e-5) if layer else RMSNormWeights(gamma, eps=1e-6)
    want = _reference(X, gamma, beta if layer else 0.0, w.eps, layer)
    if norm.endswith("direct"):
        got = layer_norm(X, gamma, beta, 1e-5) if layer else apply_norm(X, w)
    else:
        op, bias = norm_operator(X, w)
        got = (op @ X.reshape(-1) + bias).reshape(X.shape)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14 * np.abs(want).max())


def test_huge_input_through_a_model():
    """A pre-LN model at inputs of 1e200: finite, and the first-layer update equals the one at the unit-scale input
    (both norms are scale invariant), which the library itself (overflowing variance) cannot give."""
    stack = from_module(_llama())
    X = np.random.default_rng(4).standard_normal((5, M))
    big = duat_form(stack, 1e200 * X).output
    assert np.all(np.isfinite(big))
    np.testing.assert_allclose(big, apply_norm(1e200 * X + 0.0, stack.final_norm), rtol=1e-12, atol=1e-12)


# ---- non-finite errors, memory ---------------------------------------------------------------------------------------
def _nan_layer(real):
    def states(model, X, mask=None):
        out = real(model, X, mask)
        out[2] = np.full_like(out[2], np.nan)
        return out
    return states


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_nan_layer_fails_the_command(fmt, gpt2_dir, monkeypatch):
    from symuat.models import report

    monkeypatch.setattr(report, "library_hidden_states", _nan_layer(report.library_hidden_states))
    one_error_line(_run(gpt2_dir, "--format", fmt), "layer 2: the relative error is nan", "no verdict")


def test_max_error_keeps_nan():
    from symuat.models.report import LayerCheck, ModelReport

    rep = ModelReport("x", 2, 4, (LayerCheck(1, 1e-16, ()), LayerCheck(2, float("nan"), ())))
    assert np.isnan(rep.max_error)


def _no_memory(*args, **kwargs):
    raise MemoryError("Unable to allocate 7.28 TiB for an array with shape (1000000000000,) and data type float64")


@pytest.mark.parametrize("where, piece", [
    ("duat_form", "out of memory evaluating the DUAT form at N=8: about"),
    ("library_hidden_states", "out of memory in the library's forward pass at N=8: about"),
])
def test_memory_error_says_how_much(where, piece, gpt2_dir, monkeypatch):
    from symuat.models import report

    monkeypatch.setattr(report, where, _no_memory)
    one_error_line(_run(gpt2_dir), piece, "needed (Unable to allocate 7.28 TiB")


def test_memory_error_while_loading(gpt2_dir, monkeypatch):
    monkeypatch.setattr(T.GPT2Model, "from_pretrained", classmethod(_no_memory))
    with pytest.raises(OutOfMemoryError, match=r"out of memory loading the checkpoint .* about \d+\.\d KiB needed"):
        load_pretrained(gpt2_dir)


# ---- symuat model options: validated before the library runs ------------------------------------------------
def _npy(tmp_path, value):
    path = tmp_path / "x.npy"
    np.save(path, value)
    return path


def _npz(tmp_path):
    path = tmp_path / "x.npz"
    np.savez(path, x=np.zeros((3, M)))
    return path


def _text(tmp_path):
    path = tmp_path / "x.npy"
    path.write_text("1 2 3\n")
    return path


def _obj(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    return path


def _nan(tmp_path):
    X = np.zeros((3, M))
    X[1, 2] = np.nan
    return _npy(tmp_path, X)


OPTIONS = {
    "tokens_zero": (lambda t: ["--tokens", 0], "--tokens must be between 1 and 32"),
    "tokens_negative": (lambda t: ["--tokens", -3], "between 1 and 32 (the model's positions), got -3"),
    "tokens_beyond_positions": (lambda t: ["--tokens", 33], "--tokens must be between 1 and 32"),
    "seed_negative": (lambda t: ["--seed", -1], "--seed must be >= 0, got -1"),
    "tokens_and_input": (lambda t: ["--tokens", 3, "--input", _npy(t, np.zeros((3, M)))], "exclude each other"),
    "input_missing": (lambda t: ["--input", t / "nope.npy"], "is not a file"),
    "input_directory": (lambda t: ["--input", t], "is not a file"),
    "input_npz": (lambda t: ["--input", _npz(t)], "is an .npz archive"),
    "input_text": (lambda t: ["--input", _text(t)], "cannot read --input"),
    "input_pickled_objects": (lambda t: ["--input", _obj(t)], "cannot read --input"),
    "input_empty": (lambda t: ["--input", _npy(t, np.zeros((0, M)))], "--input has no tokens"),
    "input_complex": (lambda t: ["--input", _npy(t, np.zeros((3, M), complex))], "dtype complex128"),
    "input_1d": (lambda t: ["--input", _npy(t, np.zeros(M))], "--input has shape (16,)"),
    "input_3d": (lambda t: ["--input", _npy(t, np.zeros((1, 3, M)))], "expects (N, 16) inputs_embeds"),
    "input_wrong_width": (lambda t: ["--input", _npy(t, np.zeros((3, M + 1)))], "--input has shape (3, 17)"),
    "input_beyond_positions": (lambda t: ["--input", _npy(t, np.zeros((33, M)))], "at most 32 positions"),
    "input_nan": (lambda t: ["--input", _nan(t)], "--input has NaN or infinite entries"),
    "input_strings": (lambda t: ["--input", _npy(t, np.array([["a"] * M]))], "expected real numbers"),
}


@pytest.mark.parametrize("case", sorted(OPTIONS))
def test_model_options(case, gpt2_dir, tmp_path, monkeypatch):
    from symuat.models import importer

    def never(*a, **k):
        raise AssertionError("the checkpoint was loaded before the options were validated")

    monkeypatch.setattr(importer, "load_pretrained", never)
    args, piece = OPTIONS[case]
    one_error_line(_run(gpt2_dir, *args(tmp_path)), piece)


def test_real_memory_need_is_refused_before_allocating():
    """An N x N attention mask at N = 200000 needs far more than the machine has: refused with the estimate and
    the memory available now, before anything is allocated (issue 32; the heads are computed one at a time at this
    N, issue 30, so the estimate counts 3 N x N arrays, not 2 per head)."""
    from symuat.numeric import random_stack

    stack = random_stack(np.random.default_rng(0), 1, 8, 2, 8, kind="pre_ln")
    with pytest.raises(OutOfMemoryError, match=r"out of memory evaluating the DUAT form at N=200000: about 894\.7 GiB "
                                               r"needed, \d+\.\d [KMGT]iB (available now|allowed by "
                                               r"SYMUAT_MEMORY_LIMIT); use fewer tokens$"):
        duat_form(stack, np.random.default_rng(0).standard_normal((200000, 8)))


def test_memory_error_is_not_wrapped_twice(gpt2_dir, monkeypatch):
    import sys

    monkeypatch.setattr(sys.modules["symuat.numeric.duat_form"], "_evaluate", _no_memory)
    line = one_error_line(_run(gpt2_dir), "out of memory evaluating the DUAT form at N=8: about")
    assert line.count("out of memory") == 1


# ---- options of the 2021–2025 families that change the math and are not modelled: refused by name ----------------
_FS = dict(hidden_size=M, num_attention_heads=2, num_hidden_layers=2, intermediate_size=24, max_position_embeddings=32,
           vocab_size=40)

REFUSED_OPTIONS = {
    "phi qk_layernorm": (lambda: T.PhiModel(T.PhiConfig(**_FS, qk_layernorm=True)),
                         r"unsupported config option qk_layernorm=True \(phi\)"),
    "stablelm qk_layernorm": (lambda: T.StableLmModel(T.StableLmConfig(**_FS, num_key_value_heads=2,
                                                                       qk_layernorm=True)),
                              r"unsupported config option qk_layernorm=True \(stablelm\)"),
    "cohere use_qk_norm": (lambda: T.CohereModel(T.CohereConfig(**_FS, use_qk_norm=True)),
                           r"unsupported config option use_qk_norm=True \(cohere\)"),
    "olmo clip_qkv": (lambda: T.OlmoModel(T.OlmoConfig(**_FS, clip_qkv=4.0)),
                      r"unsupported config option clip_qkv=4.0 \(olmo\)"),
    "gemma3 bidirectional": (lambda: T.Gemma3TextModel(T.Gemma3TextConfig(**_FS, head_dim=8,
                                                                          use_bidirectional_attention=True)),
                             r"use_bidirectional_attention=True \(gemma3_text\)"),
    "qwen2 chunked layer type": (lambda: T.Qwen2Model(T.Qwen2Config(**_FS, layer_types=["full_attention",
                                                                                         "chunked_attention"])),
                                 r"unsupported attention layer type 'chunked_attention' \(config.layer_types\[1\]\)"),
    "llama softcapping": (lambda: T.LlamaModel(T.LlamaConfig(**_FS, attn_logit_softcapping=30.0)),
                          r"unsupported config option attn_logit_softcapping=30.0 \(llama\)"),
    "mixtral fused experts kernel": (lambda: T.MixtralModel(T.MixtralConfig(**_FS, num_local_experts=4,
                                                                            experts_implementation="grouped_mm")),
                                     r"experts implementation 'grouped_mm' \(config._experts_implementation\)"),
    "roberta decoder": (lambda: T.RobertaModel(T.RobertaConfig(**_FS, is_decoder=True)),
                        r"unsupported config option is_decoder=True \(roberta\)"),
}


@pytest.mark.parametrize("case", sorted(REFUSED_OPTIONS))
def test_refused_family_options(case):
    make, match = REFUSED_OPTIONS[case]
    model = make()
    randomize(model)
    with pytest.raises(UnsupportedError, match=match):
        from_module(model)


def test_roberta_real_token_with_the_pad_id_and_explicit_positions():
    from symuat.models import load

    model = load(randomize(T.RobertaModel(T.RobertaConfig(**_FS))))
    ids = np.array([[5, 6, 7, 8]])
    assert model.duat_form(input_ids=ids)[0].output.shape == (4, M)
    with pytest.raises(UnsupportedError, match="has the pad id 1"):
        model.duat_form(input_ids=np.array([[5, 1, 7]]))
    with pytest.raises(UnsupportedError, match="explicit position_ids"):
        model.duat_form(input_ids=ids, position_ids=np.arange(4))
