"""Fault injection for issue 28, the models half: heads (scales, caps, transforms, refused heads), the whole-model
probe on every import path (a subclass with its own forward, a torch encoder whose options lie), library layouts,
exports (never overwrite a foreign file, a tampered export) and the raw tracebacks that are now one symuat error.
Each case asserts its exact outcome: the library's value, or one named symuat error (``match=``)."""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile

import numpy as np
import pytest
from faults_support import one_error_line
from models_support import randomize, require_torch

torch, T = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from click.testing import CliRunner  # noqa: E402

from symuat.analysis.export import load_saved  # noqa: E402
from symuat.cli import main  # noqa: E402
from symuat.errors import InvalidValueError, ShapeError, UnsupportedError  # noqa: E402
from symuat.models import from_module, library_float64, load  # noqa: E402
from symuat.numeric import Head, HeadTransform, LayerNormWeights, duat_form  # noqa: E402

V = 30
_S = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=1, intermediate_size=24,
          max_position_embeddings=32, vocab_size=V)
_B = dict(_S, type_vocab_size=2)
IDS = np.array([4, 9, 3, 7, 12])


def _logits(model, ids=IDS):
    with torch.no_grad(), library_float64():
        out = model.library(input_ids=torch.as_tensor(ids)[None])
    return (getattr(out, "prediction_logits", None) if hasattr(out, "prediction_logits") else out.logits)[0].numpy()


@pytest.fixture(scope="module")
def cohere(tmp_path_factory):
    path = tmp_path_factory.mktemp("cohere")
    randomize(T.CohereForCausalLM(T.CohereConfig(**_S, logit_scale=0.0625)), seed=3).save_pretrained(path)
    return load(path)


@pytest.fixture(scope="module")
def bert_mlm(tmp_path_factory):
    path = tmp_path_factory.mktemp("bert_mlm")
    randomize(T.BertForMaskedLM(T.BertConfig(**_B)), seed=4).save_pretrained(path)
    return path


# ---- heads (issue 28, item 1) ------------------------------------------------------------------------------------
def test_cohere_logit_scale_is_in_the_logit_attribution(cohere):
    want = _logits(cohere)
    a = cohere.duat_form(input_ids=IDS).attribution("head", target="logits")
    assert np.max(np.abs(a.values.sum(0) + a.rest - want)) <= 1e-12 * max(1.0, np.abs(want).max())
    assert cohere.head.scale == 0.0625


def test_cohere_logit_scale_is_in_the_graph(cohere):
    form = cohere.duat_form(input_ids=IDS)
    g = form.graph(5, [str(i) for i in IDS], list(IDS))
    assert g["metadata"]["symuat"]["value"] == pytest.approx(_logits(cohere)[-1, 5], abs=1e-13)
    (logit,) = [n["node_id"] for n in g["nodes"] if n["is_target_logit"]]
    total = sum(li["weight"] for li in g["links"] if li["target"] == logit) + g["metadata"]["symuat"]["rest"]
    assert total == pytest.approx(_logits(cohere)[-1, 5], abs=1e-12)


def test_masked_lm_transform_is_in_the_graph(bert_mlm):
    model = load(bert_mlm)
    g = model.duat_form(input_ids=IDS).graph(2, [str(i) for i in IDS], list(IDS), feature_links=False)  # post-LN
    assert g["metadata"]["symuat"]["value"] == pytest.approx(_logits(model)[-1, 2], abs=1e-13)
    assert g["metadata"]["symuat"]["error_max"] <= 1e-12


def test_masked_lm_attribution_error_is_measured_against_the_library(bert_mlm):
    form = load(bert_mlm).duat_form(input_ids=IDS)
    a = form.attribution("layer", target="logits")
    assert a.compared_with == "library" and a.error <= 1e-12
    logits, rows = form.reference["logits"]()
    shifted = dataclasses.replace(form, reference={**form.reference, "logits": lambda: (logits + 0.5, rows)})
    assert shifted.attribution("layer", target="logits").error == pytest.approx(0.5, abs=1e-12)


def test_a_form_without_a_library_is_measured_against_itself(bert_mlm):
    form = load(bert_mlm).duat_form(input_ids=IDS)
    bare = duat_form(form.stack, form.X0)
    assert bare.attribution("term").compared_with == "form"


def test_head_activation_module_swapped_is_refused(bert_mlm):
    model = T.BertForMaskedLM.from_pretrained(bert_mlm, dtype=torch.float64).eval()
    model.cls.predictions.transform.transform_act_fn = torch.nn.ReLU().eval()
    with pytest.raises(UnsupportedError, match=r"cls\.predictions\.transform\.act is ReLU .* config says gelu"):
        load(model)


def test_head_layer_norm_eps_is_read_from_the_module(bert_mlm):
    model = T.BertForMaskedLM.from_pretrained(bert_mlm, dtype=torch.float64).eval()
    model.cls.predictions.transform.LayerNorm.eps = 10.0  # not the config's: the head reads the module
    loaded = load(model)
    assert loaded.head.transform.norm.eps == 10.0
    a = loaded.duat_form(input_ids=IDS).attribution("head", target="logits")
    assert a.compared_with == "library" and a.error <= 1e-12


def test_lm_head_subclass_with_its_own_forward_is_refused(cohere):
    class Doubled(torch.nn.Linear):
        def forward(self, x):
            return 2 * super().forward(x)

    lib = T.CohereForCausalLM(cohere.library.config).double().eval()
    lib.load_state_dict(cohere.library.state_dict())
    old = lib.lm_head
    lib.lm_head = Doubled(old.in_features, old.out_features, bias=False, dtype=torch.float64)
    lib.lm_head.weight = old.weight
    lib.eval()
    with pytest.raises(UnsupportedError, match="lm_head is a Doubled, a subclass of torch Linear with its own "
                                               "forward"):
        load(lib)


def test_head_hooked_is_refused(bert_mlm):
    model = T.BertForMaskedLM.from_pretrained(bert_mlm, dtype=torch.float64).eval()
    model.cls.predictions.decoder.register_forward_hook(lambda m, a, y: y * 3)
    with pytest.raises(UnsupportedError, match=r"forward hooks on cls\.predictions\.decoder"):
        load(model)


def test_gemma2_soft_cap_is_applied(tmp_path):
    cfg = T.Gemma2Config(**_S, head_dim=8, num_key_value_heads=1, final_logit_softcapping=0.5,
                         query_pre_attn_scalar=8)
    randomize(T.Gemma2ForCausalLM(cfg), seed=5).save_pretrained(tmp_path)
    model = load(tmp_path)
    want = _logits(model)
    assert np.abs(want).max() < 0.5  # capped
    a = model.duat_form(input_ids=IDS).attribution("source", target=3)
    assert np.max(np.abs(a.values.sum(0) + a.rest - want[:, 3])) <= 1e-13


@pytest.mark.parametrize("cls", ["BertForQuestionAnswering", "BertForNextSentencePrediction",
                                 "BertForMultipleChoice"])
def test_heads_symuat_does_not_import_are_refused_by_name(cls, tmp_path):
    randomize(getattr(T, cls)(T.BertConfig(**_B)), seed=1).save_pretrained(tmp_path)
    form = load(tmp_path).duat_form(input_ids=IDS)
    with pytest.raises(UnsupportedError, match=f"the head of {cls} is not imported"):
        form.attribution("head", target=0)


def test_logit_target_out_of_the_vocabulary(cohere):
    with pytest.raises(InvalidValueError, match=rf"token id in \[0, {V}\) or a direction, got {V}"):
        cohere.duat_form(input_ids=IDS).attribution("head", target=V)


@pytest.mark.parametrize("kwargs,match", [
    (dict(U=np.ones((3, 2)), b=np.ones(2)), r"are not \(V, M\) and \(V,\)"),
    (dict(U=np.ones((3, 2)), scale=0.0), "scale must be finite and nonzero"),
    (dict(U=np.ones((3, 2)), softcap=-1.0), "softcap must be a positive number"),
    (dict(U=np.ones((3, 2)), reads="middle"), "reads must be one of"),
    (dict(U=np.ones((3, 2)), transform=HeadTransform(np.ones((2, 4)), None, "gelu")), "the transform gives 4"),
])
def test_head_values_are_validated(kwargs, match):
    with pytest.raises(InvalidValueError, match=match):
        Head(**kwargs)


def test_head_transform_activation_must_vanish_at_zero():
    with pytest.raises(InvalidValueError, match="activation must be one of .* got 'sigmoid'"):
        HeadTransform(np.ones((2, 2)), None, "sigmoid", LayerNormWeights(np.ones(2)))


# ---- the whole-model probe on every import path (item 2) -----------------------------------------------------------
def _layer(**kw):
    return randomize(torch.nn.TransformerEncoderLayer(16, 4, 24, dropout=0.0, **kw), seed=2)


def test_encoder_layer_subclass_with_its_own_forward_is_refused():
    class Shifted(torch.nn.TransformerEncoderLayer):
        def forward(self, src, *args, **kwargs):
            return super().forward(src, *args, **kwargs) * 1.27

    layer = randomize(Shifted(16, 4, 24, dropout=0.0), seed=2)
    with pytest.raises(UnsupportedError, match="<root> is a Shifted, a subclass of torch TransformerEncoderLayer "
                                               "with its own forward"):
        from_module(layer)


def test_encoder_whose_activation_attribute_lies_is_caught_by_the_probe():
    layer = _layer(batch_first=True)
    layer.activation = torch.nn.functional.gelu  # torch's fast path still runs relu (activation_relu_or_gelu)
    with pytest.raises(UnsupportedError, match="does not compute what its weights and options say"):
        from_module(layer)


def test_encoder_subclass_without_its_own_forward_is_accepted():
    class Named(torch.nn.TransformerEncoderLayer):
        pass

    layer = randomize(Named(16, 4, 24, dropout=0.0), seed=2)
    X = np.random.default_rng(0).standard_normal((5, 16))
    with torch.no_grad():
        want = layer(torch.from_numpy(X)[:, None])[:, 0].numpy()
    assert np.max(np.abs(duat_form(from_module(layer), X).output - want)) <= 1e-12


def test_transformers_model_subclass_with_its_own_forward_is_refused():
    class Tweaked(T.GPT2Model):
        def forward(self, *args, **kwargs):
            return super().forward(*args, **kwargs)

    model = randomize(Tweaked(T.GPT2Config(n_embd=16, n_head=2, n_layer=1, n_positions=32, vocab_size=V)))
    with pytest.raises(UnsupportedError, match="<root> is a Tweaked, a subclass of transformers GPT2Model with its "
                                               "own forward"):
        from_module(model)


def test_falcon_alibi_with_eager_attention_is_refused_by_name():
    cfg = T.FalconConfig(hidden_size=16, num_attention_heads=2, num_hidden_layers=1, vocab_size=V, alibi=True,
                         attn_implementation="eager")
    with pytest.raises(UnsupportedError, match="adds the ALiBi bias twice"):
        from_module(randomize(T.FalconModel(cfg)))


def test_falcon_alibi_output_matches_and_the_eager_view_adds_alibi_twice():
    cfg = T.FalconConfig(hidden_size=16, num_attention_heads=2, num_hidden_layers=1, vocab_size=V, alibi=True)
    model = randomize(T.FalconModel(cfg))
    X = np.random.default_rng(0).standard_normal((5, 16))
    stack = from_module(model)
    form = duat_form(stack, X)
    with torch.no_grad(), library_float64():
        out = model(inputs_embeds=torch.from_numpy(X)[None])
        eager = model(inputs_embeds=torch.from_numpy(X)[None], output_attentions=True)
    assert np.max(np.abs(form.output - out.last_hidden_state[0].numpy())) <= 1e-12
    probs = eager.attentions[0][0].numpy()
    assert np.max(np.abs(form.attention(0, 1) - probs[1])) > 1e-4
    attn = stack.blocks[0].attention  # the eager view is the form's with the ALiBi table doubled (docs/models.md)
    twice = dataclasses.replace(stack, blocks=(dataclasses.replace(
        stack.blocks[0], attention=dataclasses.replace(attn, alibi=2 * attn.alibi)),))
    assert max(np.max(np.abs(duat_form(twice, X).attention(0, h) - probs[h])) for h in range(2)) <= 1e-12


# ---- library layouts (item 3) --------------------------------------------------------------------------------------
def test_gptj_without_a_rotary_table_names_the_module_and_the_tested_range():
    model = randomize(T.GPTJModel(T.GPTJConfig(n_embd=16, n_head=2, n_layer=1, n_positions=32, vocab_size=V,
                                               rotary_dim=4)))
    if hasattr(model, "rotary_emb"):
        model.rotary_emb = None
    for blk in model.h:
        if hasattr(blk.attn, "embed_positions"):
            del blk.attn.embed_positions
    with pytest.raises(UnsupportedError, match=r"h\.0\.attn \(GPTJAttention\) has neither .*tested with "
                                               r"transformers 5\.\d+\.\d+ to 5\.\d+\.\d+"):
        from_module(model)


# ---- exports (item 7) ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def form(cohere):
    return cohere.duat_form(input_ids=IDS)


def test_save_never_overwrites_a_checkpoint_config(form, tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "gpt2"}')
    with pytest.raises(InvalidValueError, match="config.json' exists and was not written by a symuat export"):
        form.save(tmp_path / "config.npz")
    assert config.read_text() == '{"model_type": "gpt2"}' and not (tmp_path / "config.npz").exists()


def test_save_never_overwrites_a_foreign_npz(form, tmp_path):
    (tmp_path / "data.npz").write_bytes(b"mine")
    with pytest.raises(InvalidValueError, match="data.npz' exists and was not written by a symuat export"):
        form.save(tmp_path / "data.npz")
    assert (tmp_path / "data.npz").read_bytes() == b"mine"


def test_save_with_overwrite_replaces_and_resaving_an_export_is_byte_identical(form, tmp_path):
    (tmp_path / "run.json").write_text("{}")
    form.save(tmp_path / "run.npz", overwrite=True)
    first = (tmp_path / "run.npz").read_bytes(), (tmp_path / "run.json").read_bytes()
    form.save(tmp_path / "run.npz")  # its own export: replaced without overwrite=True
    assert ((tmp_path / "run.npz").read_bytes(), (tmp_path / "run.json").read_bytes()) == first
    assert load_saved(tmp_path / "run.npz").metadata["head"]["scale"] == 0.0625


def test_save_into_a_missing_folder(form, tmp_path):
    with pytest.raises(InvalidValueError, match="the folder .*nowhere' does not exist"):
        form.save(tmp_path / "nowhere" / "run.npz")


def _rewrite(path, edit):
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    edit(members)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for n, data in members.items():
            zf.writestr(n, data)
    path.write_bytes(buf.getvalue())
    return buf.getvalue()


def _bump_term(members):
    a = np.load(io.BytesIO(members["term0.npy"]))
    out = io.BytesIO()
    np.save(out, a + 1e-3)
    members["term0.npy"] = out.getvalue()


def test_tampered_export_fails_its_hash(form, tmp_path):
    path = form.save(tmp_path / "run.npz")
    _rewrite(path, _bump_term)
    with pytest.raises(InvalidValueError, match="SHA-256 .* the file was changed after it was written"):
        load_saved(path)


def test_tampered_export_with_a_matching_hash_fails_the_sum(form, tmp_path):
    import hashlib

    path = form.save(tmp_path / "run.npz")
    data = _rewrite(path, _bump_term)
    meta = json.loads(path.with_suffix(".json").read_text())
    meta["sha256"] = hashlib.sha256(data).hexdigest()
    path.with_suffix(".json").write_text(json.dumps(meta))
    with pytest.raises(InvalidValueError, match="do not sum to its output"):
        load_saved(path)


def test_export_metadata_of_another_format(form, tmp_path):
    path = form.save(tmp_path / "run.npz")
    path.with_suffix(".json").write_text('{"format": "other/1"}')
    with pytest.raises(InvalidValueError, match="is not a symuat-duat-form/1 export"):
        load_saved(path)


# ---- raw tracebacks become one symuat error (item 8) ---------------------------------------------------------------
def test_load_of_a_float32_model_in_memory():
    model = T.GPT2LMHeadModel(T.GPT2Config(n_embd=16, n_head=2, n_layer=1, n_positions=32, vocab_size=V)).eval()
    with pytest.raises(UnsupportedError, match="parameters are float32, not float64.*model.double"):
        load(model)


def test_from_module_of_a_float32_model():
    model = T.GPT2Model(T.GPT2Config(n_embd=16, n_head=2, n_layer=1, n_positions=32, vocab_size=V)).eval()
    with pytest.raises(UnsupportedError, match="parameters are float32, not float64"):
        from_module(model)


def test_ragged_input_ids(cohere):
    with pytest.raises(ShapeError, match="input_ids is ragged"):
        cohere.duat_form(input_ids=[[1, 2, 3], [4, 5]])


def test_qwen2_sliding_layer_types_without_a_window():
    cfg = T.Qwen2Config(**{**_S, "num_hidden_layers": 2}, num_key_value_heads=1, use_sliding_window=False,
                        layer_types=["sliding_attention", "full_attention"], sliding_window=4)
    with pytest.raises(UnsupportedError, match=r"layer_types\[0\] is 'sliding_attention' but config.sliding_window "
                                               "is None"):
        from_module(randomize(T.Qwen2Model(cfg)))


@pytest.fixture(scope="module")
def roberta_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("roberta")
    randomize(T.RobertaModel(T.RobertaConfig(**{**_B, "max_position_embeddings": 64}, pad_token_id=1))
              ).save_pretrained(path)
    return path


def test_roberta_tokens_beyond_its_positions_are_refused_before_loading(roberta_dir):
    result = CliRunner().invoke(main, ["model", str(roberta_dir), "--tokens", "63"])
    one_error_line(result, "--tokens must be between 1 and 62")


def test_roberta_tokens_at_its_last_position_work(roberta_dir):
    result = CliRunner().invoke(main, ["model", str(roberta_dir), "--tokens", "62"])
    assert result.exit_code == 0 and "N=62 tokens" in result.stdout
