"""Fault injection for Llama 4's text model: a module edited so that it no longer computes what symuat reads (a router
bias, a weighted q/k norm, another activation, a parameter symuat does not read, a patched experts class) and the torch
device give the one named error; never a silent wrong form."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, T = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import InvalidValueError, UnsupportedError  # noqa: E402
from symuat.models import from_module, load  # noqa: E402

_S = dict(hidden_size=16, num_attention_heads=2, num_key_value_heads=1, head_dim=8, num_hidden_layers=4,
          intermediate_size=6, intermediate_size_mlp=10, vocab_size=30, max_position_embeddings=64, num_local_experts=4,
          num_experts_per_tok=2, interleave_moe_layer_step=2, attention_chunk_size=16, floor_scale=20, pad_token_id=0,
          rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def _library():
    return randomize(T.Llama4ForCausalLM(T.Llama4TextConfig(**_S)), seed=3)


def _router_bias(m):
    r = m.model.layers[1].feed_forward.router
    r.bias = torch.nn.Parameter(torch.ones(4, dtype=torch.float64))


def _weighted_qk_norm(m):
    m.model.layers[0].self_attn.qk_norm.weight = torch.nn.Parameter(torch.ones(8, dtype=torch.float64))


def _experts_act(m):
    m.model.layers[1].feed_forward.experts.act_fn = torch.nn.GELU()


def _extra_parameter(m):
    m.model.layers[3].feed_forward.register_parameter("scale", torch.nn.Parameter(torch.ones(1, dtype=torch.float64)))


def _experts_shape(m):
    ex = m.model.layers[1].feed_forward.experts
    ex.down_proj = torch.nn.Parameter(ex.down_proj.detach()[:, :4].clone())


MODULES = {
    "a router bias": (_router_bias, UnsupportedError, r"layers\.1\.feed_forward\.router has a bias"),
    "a weighted q/k norm": (_weighted_qk_norm, UnsupportedError,
                            r"layers\.0\.self_attn\.qk_norm \(Llama4TextL2Norm\) is not Llama 4's weightless L2 norm"),
    "another activation in the experts": (_experts_act, UnsupportedError,
                                          r"layers\.1\.feed_forward\.experts\.act_fn is GELU"),
    "a parameter symuat does not read": (_extra_parameter, InvalidValueError,
                                         r"layers\.3\.feed_forward holds parameters symuat did not read \(scale\)"),
    "experts of mismatched shapes": (_experts_shape, InvalidValueError,
                                     r"layers\.1\.feed_forward\.experts: gate_up_proj \(4, 16, 12\) and down_proj "
                                     r"\(4, 4, 16\) are not E×M×2F and E×F×M"),
}


@pytest.mark.parametrize("case", sorted(MODULES))
def test_modules_symuat_cannot_read(case):
    edit, error, match = MODULES[case]
    library = _library()
    edit(library)
    library.eval()
    with pytest.raises(error, match=match):
        from_module(library)


def test_a_patched_experts_class_is_caught_by_the_probe(monkeypatch):
    cls = T.models.llama4.modeling_llama4.Llama4TextExperts
    forward = cls.forward
    monkeypatch.setattr(cls, "forward", lambda self, h: 2 * forward(self, h))  # no instance attribute to see
    with pytest.raises(UnsupportedError, match=r"layer 2 of the module does not compute what its weights and config "
                                               r"say"):
        from_module(_library().eval())


def test_the_torch_device_evaluates_the_input_scaled_experts():
    """Once refused on torch: the experts' input scales are chosen on the host and moved, the form is the library's."""
    form = load(_library(), device="cpu").duat_form(input_ids=np.arange(1, 5))
    want = np.asarray(form.reference["output"])
    got = form.output.numpy()
    assert np.max(np.linalg.norm(got - want, axis=1) / np.linalg.norm(want, axis=1)) <= 1e-12


@pytest.mark.parametrize("tokens, limit", [(17, 16), (40, 16)])
def test_the_command_line_refuses_tokens_past_the_chunk_before_loading(tmp_path, tokens, limit):
    """``symuat model DIR --tokens N`` checks N against the positions the stack covers from the config alone (the
    chunk size here), as the Python API does, before any weight is read: one error line, exit 2."""
    from click.testing import CliRunner

    from symuat.cli import main

    _library().save_pretrained(tmp_path)
    res = CliRunner().invoke(main, ["model", str(tmp_path), "--tokens", str(tokens), "--device", "cpu"])
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == (f"symuat: error: --tokens must be between 1 and {limit} (the model's positions), "
                                  f"got {tokens}")
