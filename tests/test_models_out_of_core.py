"""``load(dir, out_of_core=True)``: a Llama checkpoint's layers read from its safetensors shards one at a time.

On tiny random checkpoints stored in float32 and in bf16, sharded so that several files exist: the out-of-core form
equals the in-memory form (every layer's input, every layer's output, the output) bit for bit, the library's whole
float64 forward within 1e-12 at every layer and token, and the per-layer library reference
(:func:`symuat.models.check_layers`); the prefix ``layers=k``; the automatic choice; and what the form holds: no
layer's float64 weights after the evaluation (a walk over the objects the form reaches), where the in-memory form
holds them all.  The checks that fail (a tampered weight, hostile inputs) are in tests/faults/."""

from __future__ import annotations

import gc
import types

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, T = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.models import check_layers, library_float64, load  # noqa: E402
from symuat.models.layer_check import form_layers  # noqa: E402
from symuat.models.out_of_core import EmbeddingRows, float64_bytes, needs_out_of_core  # noqa: E402
from symuat.numeric.streamed import StreamedStack  # noqa: E402

TOL = 1e-12
V, N = 50, 9
CONFIG = dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=4,
              intermediate_size=48, max_position_embeddings=64, vocab_size=V)


@pytest.fixture(scope="module", params=["float32", "bfloat16"])
def saved(request, tmp_path_factory):
    """(path, in-memory Model, out-of-core Model, ids) of a LlamaForCausalLM stored in ``param``, in several shards."""
    path = tmp_path_factory.mktemp(request.param)
    model = randomize(T.LlamaForCausalLM(T.LlamaConfig(**CONFIG)), seed=7).to(getattr(torch, request.param))
    model.save_pretrained(path, max_shard_size="20KB")
    assert len(list(path.glob("*.safetensors"))) > 3
    return path, load(path, out_of_core=False), load(path, out_of_core=True), \
        np.random.default_rng(5).integers(0, V, size=N)


def _library_layers(model, ids):
    """Every decoder layer's output in the library's whole float64 forward (forward hooks), and the last state."""
    base = model.library.base_model
    got = []
    hooks = [layer.register_forward_hook(lambda m, a, out: got.append((out[0] if isinstance(out, tuple) else out)
                                                                      [0].detach().numpy().copy()))
             for layer in base.layers]
    try:
        with torch.no_grad(), library_float64():
            last = base(input_ids=torch.tensor(ids[None])).last_hidden_state[0].numpy()
    finally:
        for h in hooks:
            h.remove()
    return got, last


def _rel(a, b):
    return float(np.max(np.linalg.norm(a - b, axis=1) / np.linalg.norm(b, axis=1)))


def test_is_out_of_core(saved):
    _, mem, ooc, _ = saved
    assert ooc.out_of_core and not mem.out_of_core
    assert isinstance(ooc.stack, StreamedStack) and isinstance(ooc.word_embeddings, EmbeddingRows)
    assert ooc.head is None and "no LM head" in ooc.head_refusal
    assert ooc.stack.depth == CONFIG["num_hidden_layers"] and ooc.stack.blocks.held == 0


def test_equals_in_memory_form(saved):
    """Same weights, same code after the read: every number of the two forms is equal."""
    _, mem, ooc, ids = saved
    a, b = mem.duat_form(input_ids=ids), ooc.duat_form(input_ids=ids)
    assert np.array_equal(ooc.inputs_embeds(ids, None), mem.inputs_embeds(ids, None))
    assert np.array_equal(a.output, b.output)
    for i in range(a.depth):
        assert np.array_equal(a.params.input(i), b.params.input(i))
    for x, y in zip(form_layers(mem, ids), form_layers(ooc, ids)):
        assert np.array_equal(x, y)
    assert b.reference is None and ooc.stack.blocks.held == 0


def test_equals_library_forward_every_layer(saved):
    """Every layer and token of the out-of-core form within 1e-12 of the library's whole float64 forward."""
    _, mem, ooc, ids = saved
    want, last = _library_layers(mem, ids)
    got = form_layers(ooc, ids)
    assert len(got) == len(want) == CONFIG["num_hidden_layers"]
    for i, (g, w) in enumerate(zip(got, want)):
        assert _rel(g, w) <= TOL, i
    assert _rel(ooc.duat_form(input_ids=ids).output, last) <= TOL


def test_per_layer_reference_passes(saved):
    path, mem, ooc, ids = saved
    check = check_layers(ooc, ids)
    assert check.passed and len(check.errors) == CONFIG["num_hidden_layers"] and max(check.errors) <= TOL
    assert check_layers(mem, ids, directory=path).passed


def test_views_read_the_layer_again(saved):
    """A view needs a layer's weights: the layer is read again (and is the same as in memory)."""
    _, mem, ooc, ids = saved
    a, b = mem.duat_form(input_ids=ids), ooc.duat_form(input_ids=ids)
    before = ooc.stack.blocks.builds
    assert np.array_equal(a.attention(2, 1), b.attention(2, 1))
    assert ooc.stack.blocks.builds == before + 1
    terms_a, terms_b = a.token_terms(), b.token_terms()
    assert all(np.array_equal(terms_a[k], terms_b[k]) for k in terms_a)


def test_prefix(saved):
    path, _, _, ids = saved
    mem, ooc = load(path, layers=2, out_of_core=False), load(path, layers=2, out_of_core=True)
    assert ooc.stack.depth == 2
    assert np.array_equal(mem.duat_form(input_ids=ids).output, ooc.duat_form(input_ids=ids).output)
    assert check_layers(ooc, ids).passed


def test_embedding_rows_read_lazily(saved):
    path, mem, ooc, ids = saved
    rows = ooc.word_embeddings
    assert rows.shape == (V, CONFIG["hidden_size"])
    assert np.array_equal(rows[np.array([[3, 3], [0, V - 1]])], mem.word_embeddings[np.array([[3, 3], [0, V - 1]])])


def test_automatic_when_too_big(saved, monkeypatch):
    """``load(dir)`` goes out of core when twice the float64 weights exceed the memory allowed."""
    path, _, _, ids = saved
    size = float64_bytes(path)
    monkeypatch.setenv("SYMUAT_MEMORY_LIMIT", str(size))
    assert needs_out_of_core(path)
    assert load(path).out_of_core
    monkeypatch.setenv("SYMUAT_MEMORY_LIMIT", str(4 * size))
    assert not needs_out_of_core(path) and not load(path).out_of_core
    assert float64_bytes(path, layers=1) < size


# ---- memory: what a form holds --------------------------------------------------------------------------------------

def held_bytes(root) -> int:
    """Bytes of the NumPy arrays and CPU torch storages reachable from ``root`` (each counted once; a function is
    followed through its closure, not its globals; modules and classes are not followed)."""
    seen, todo, owners, total = set(), [root], set(), 0
    while todo:
        o = todo.pop()
        if id(o) in seen or isinstance(o, (type, types.ModuleType)):
            continue
        seen.add(id(o))
        if isinstance(o, np.ndarray):
            if o.base is None:
                total += o.nbytes
            else:
                todo.append(o.base)
            continue
        if isinstance(o, torch.Tensor):
            if o.device.type != "meta":
                storage = o.untyped_storage()
                if storage.data_ptr() not in owners:
                    owners.add(storage.data_ptr())
                    total += storage.nbytes()
            continue
        if isinstance(o, types.FunctionType):
            todo.extend(c.cell_contents for c in (o.__closure__ or ()))
            continue
        todo.extend(gc.get_referents(o))
    return total


@pytest.fixture(scope="module")
def deep(tmp_path_factory):
    """Layers much bigger than the form's own arrays (width 64, FFN 512, 6 layers; N = 4)."""
    path = tmp_path_factory.mktemp("deep")
    cfg = dict(CONFIG, hidden_size=64, intermediate_size=512, num_hidden_layers=6)
    randomize(T.LlamaForCausalLM(T.LlamaConfig(**cfg)), seed=2).to(torch.bfloat16).save_pretrained(path)
    return path, np.array([1, 4, 9, 16])


def test_form_holds_no_layer(deep):
    path, ids = deep
    ooc = load(path, out_of_core=True)
    layer = 8 * (2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 512)  # one layer's float64 weights
    model_size = float64_bytes(path)
    form = ooc.duat_form(input_ids=ids)
    held = held_bytes(form)
    assert held < layer / 2 < model_size / 12, (held, layer, model_size)
    form.attention(3, 0)  # a view reads layer 3 again; LayerParams keeps the layer last asked for
    assert held_bytes(form) < 2 * layer
    in_memory = load(path, out_of_core=False).duat_form(input_ids=ids)
    assert held_bytes(in_memory) > 6 * layer  # the in-memory form reaches every layer's float64 weights


def test_lm_logits_in_vocabulary_chunks(saved):
    """The LM head applied in chunks of 7 rows equals the library's own ``.logits`` within 1e-12."""
    _, mem, ooc, ids = saved
    from symuat.models.out_of_core import lm_logits

    with torch.no_grad(), library_float64():
        want = mem.library(input_ids=torch.tensor(ids[None])).logits[0].numpy()
    got = lm_logits(ooc, ooc.duat_form(input_ids=ids).output, chunk=7)
    assert got.shape == (N, V) and _rel(got, want) <= TOL
