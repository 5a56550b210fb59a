"""``load(dir, layers=k)`` and ``symuat model DIR --layers K``: the first k layers of a checkpoint are the library's
k-layer model (final norm kept, no LM head) and the full model's first k layers, within 1e-12."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from models_support import randomize, require_torch, row_errors

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.cli import main  # noqa: E402
from symuat.models import library_float64, library_outputs, load  # noqa: E402
from symuat.models.layer_reference import layer_reference  # noqa: E402
from symuat.numeric import duat_form  # noqa: E402

TOL = 1e-12
V, N = 40, 9
_SMALL = dict(hidden_size=16, num_attention_heads=4, num_hidden_layers=3, intermediate_size=24,
              max_position_embeddings=32, vocab_size=V, num_key_value_heads=2)

FAMILIES = {
    "llama": lambda T: T.LlamaForCausalLM(T.LlamaConfig(**_SMALL)),
    "qwen2": lambda T: T.Qwen2Model(T.Qwen2Config(**_SMALL, use_sliding_window=True, sliding_window=3,
                                                  max_window_layers=1)),
    "gpt2": lambda T: T.GPT2LMHeadModel(T.GPT2Config(n_embd=16, n_head=2, n_layer=3, n_positions=32, vocab_size=V)),
}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def saved(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param)
    randomize(FAMILIES[request.param](transformers), seed=2).save_pretrained(path)
    return request.param, path, load(path)


def _layer_outputs(model, ids):
    """Every decoder layer's output (pre final norm) in the library's whole float64 forward (forward hooks)."""
    base = getattr(model.library, "base_model", model.library)
    got = []
    hooks = [layer.register_forward_hook(lambda m, a, out: got.append((out[0] if isinstance(out, tuple) else out)
                                                                      [0].detach().numpy().copy()))
             for layer in (base.h if hasattr(base, "h") else base.layers)]
    try:
        with torch.no_grad(), library_float64():
            base(input_ids=torch.tensor(ids[None]))
    finally:
        for h in hooks:
            h.remove()
    return got


def _boxes(model, ids):
    """The DUAT form's output of the first i layers, i = 1..depth (box i, before the final norm)."""
    boxes = {}
    form = model.duat_form(input_ids=ids)
    duat_form(form.stack, form.X0, on_box=lambda i, lin, bias, terms: boxes.__setitem__(
        i, (lin + bias + sum(terms)).reshape(N, -1)))
    return form, [boxes[i] for i in range(1, model.stack.depth + 1)]


@pytest.mark.parametrize("k", [2])
def test_prefix_is_the_first_layers(saved, k):
    family, path, full = saved
    ids = np.random.default_rng(k).integers(0, V, size=N)
    prefix = load(path, layers=k)
    assert prefix.stack.depth == k and prefix.lm_head is None and prefix.stack.final_norm is not None
    assert np.array_equal(prefix.word_embeddings, full.word_embeddings)
    form, boxes = _boxes(prefix, ids)
    want = _layer_outputs(full, ids)[:k]  # the whole model's first k layers
    assert max(row_errors(w, g, slice(None)) for w, g in zip(want, boxes)) <= TOL
    hidden, logits = library_outputs(prefix, ids)  # the library's own k-layer model, final norm included
    assert logits is None and row_errors(hidden, form.output, slice(None)) <= TOL
    if family != "gpt2":
        ref = layer_reference(path, ids, layers=k)
        assert max(row_errors(r, g, slice(None)) for r, g in zip(ref.outputs, boxes)) <= TOL


def test_full_depth_prefix(saved):
    _, path, full = saved
    assert load(path, layers=3).stack.depth == full.stack.depth == 3


def test_cli_layers(saved):
    _, path, _ = saved
    res = CliRunner().invoke(main, ["model", str(path), "--layers", "2", "--tokens", "5", "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert [layer["layer"] for layer in data["layers"]] == [1, 2] and data["max_relative_error"] <= TOL


def test_a_prefix_prints_no_report_of_the_later_layers(saved):
    """The later layers' weights are unexpected by design and checked by symuat itself: the library's loading report
    of them is not logged (its own logger, which writes to the terminal), and its verbosity is left as it was."""
    import logging

    from transformers.utils import logging as hf_logging

    class Records(logging.Handler):
        def __init__(self):
            super().__init__(logging.DEBUG)
            self.messages = []

        def emit(self, record):
            self.messages.append(record.getMessage())

    _, path, _ = saved
    before, seen = hf_logging.get_verbosity(), Records()
    library = logging.getLogger("transformers")
    library.addHandler(seen)
    try:
        model = load(path, layers=1)
    finally:
        library.removeHandler(seen)
    assert model.stack.depth == 1 and not [m for m in seen.messages if "LOAD REPORT" in m or "UNEXPECTED" in m]
    assert hf_logging.get_verbosity() == before
