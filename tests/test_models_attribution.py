"""Exact attributions and interventions on tiny random checkpoints of several families (issue 21): every attribution
sums to the output within 1e-12, causal sources, logits through the LM head against the library's logits, the frozen
round trip, frozen ablations against the attribution, and a re-computed head ablation against the library run with
that head's output zeroed (a forward pre-hook on the output projection, in this test only)."""

from __future__ import annotations

import numpy as np
import pytest
from models_support import randomize, require_torch

torch, transformers = require_torch()
pytestmark = pytest.mark.xdist_group("models")

from symuat.errors import InvalidValueError  # noqa: E402
from symuat.models import library_float64, load  # noqa: E402

TOL = 1e-12
V = 30
_SMALL = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=2, intermediate_size=24,
              max_position_embeddings=32, vocab_size=V)

#: family -> (model with an LM head where the family has one, causal, attention output projection of layer k,
#: FFN output projection of layer k)
FAMILIES = {
    "gpt2": (lambda T: T.GPT2LMHeadModel(T.GPT2Config(n_embd=16, n_head=2, n_layer=2, n_positions=32, vocab_size=V)),
             True, lambda m, k: m.transformer.h[k].attn.c_proj, lambda m, k: m.transformer.h[k].mlp.c_proj),
    "llama": (lambda T: T.LlamaForCausalLM(T.LlamaConfig(**_SMALL, num_key_value_heads=1)),
              True, lambda m, k: m.model.layers[k].self_attn.o_proj,
              lambda m, k: m.model.layers[k].mlp.down_proj),
    "gpt_neox": (lambda T: T.GPTNeoXForCausalLM(T.GPTNeoXConfig(**_SMALL)),
                 True, lambda m, k: m.gpt_neox.layers[k].attention.dense,
                 lambda m, k: m.gpt_neox.layers[k].mlp.dense_4h_to_h),
    "olmo2": (lambda T: T.Olmo2ForCausalLM(T.Olmo2Config(**_SMALL, num_key_value_heads=1)),
              True, lambda m, k: m.model.layers[k].self_attn.o_proj,
              lambda m, k: m.model.layers[k].mlp.down_proj),
    "bert": (lambda T: T.BertModel(T.BertConfig(**_SMALL)),
             False, lambda m, k: m.encoder.layer[k].attention.output.dense,
             lambda m, k: m.encoder.layer[k].output.dense),
}
IDS = np.array([4, 9, 1, 7, 12, 3])


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def case(request, tmp_path_factory):
    family = request.param
    make, causal, o_proj, down = FAMILIES[family]
    path = tmp_path_factory.mktemp(family)
    randomize(make(transformers), seed=len(family)).save_pretrained(path)
    model = load(path)
    return family, model, model.duat_form(input_ids=IDS), causal, o_proj, down


@pytest.mark.parametrize("by", ["term", "source", "layer", "head", "neuron"])
def test_attributions_sum_to_the_output(case, by):
    _, _, form, causal, _, _ = case
    a = form.attribution(by)
    assert a.values.shape == (len(a.parts),) + form.output.shape and a.rest.shape == form.output.shape
    assert np.max(np.abs(a.values.sum(0) + a.rest - form.output)) <= TOL
    assert abs(sum(a.shares().values()) - 1.0) <= 1e-12
    if by == "source" and causal:  # token n gets nothing from a later token s > n (exactly)
        for s in range(1, len(IDS)):
            assert not np.any(a.values[s, :s])
        assert np.any(a.values[0, 1:])
    elif by == "source":  # an encoder's later tokens do reach earlier ones
        assert np.any(a.values[-1, 0])


def test_logit_attribution_matches_the_library_logits(case):
    family, model, form, _, _, _ = case
    if model.lm_head is None:  # no head: no logit target, one clear error
        assert form.unembedding is None
        with pytest.raises(InvalidValueError, match="LM head"):
            form.attribution("head", target="logits")
        return
    with torch.no_grad(), library_float64():
        logits = model.library(input_ids=torch.as_tensor(IDS)[None]).logits[0].numpy()
    for by in ("head", "source"):
        a = form.attribution(by, target="logits")
        assert np.max(np.abs(a.values.sum(0) + a.rest - logits)) <= 1e-11 * max(1.0, np.max(np.abs(logits)))
        t = form.attribution(by, target=5)
        assert t.values.shape == (len(t.parts), len(IDS))
        assert np.max(np.abs(t.values.sum(0) + t.rest - logits[:, 5])) <= TOL * max(1.0, np.max(np.abs(logits)))


def test_frozen_round_trip_and_frozen_ablations(case):
    _, _, form, _, _, _ = case
    for gates in ("held", "live"):
        assert np.max(np.abs(form.frozen(gates)(form.X0) - form.output)) <= TOL
    src = form.attribution("source")
    iv = form.intervene(("source", 2))
    assert np.max(np.abs(iv.frozen - (form.output - src.values[2]))) <= TOL
    # a last-layer neuron: nothing downstream re-reads its write (only held norms), so its frozen ablation removes
    # exactly its direct part (full frozen pass with a scale vs. the routed direct pass)
    neurons = form.attribution("neuron")
    L = form.depth - 1
    p = neurons.parts.index(f"L{L}.N3")
    assert np.max(np.abs(form.intervene(("neuron", L, 3)).frozen - (form.output - neurons.values[p]))) <= TOL
    # a first-layer head is re-read downstream: its frozen (total) effect is not its direct part, but with every
    # other read held (frozen_direct) removing it removes exactly its direct part
    heads = form.attribution("head")
    for k in range(form.depth):
        for h in (0, 1):
            iv = form.intervene(("head", k, h), 0.25)
            part = heads.values[heads.parts.index(f"L{k}.H{h}")]
            assert np.max(np.abs(iv.frozen_direct - (form.output - 0.75 * part))) <= TOL
    assert not np.allclose(form.intervene(("head", 0, 1)).frozen_effect, heads.values[heads.parts.index("L0.H1")])
    terms = form.attribution("term")
    assert np.max(np.abs(form.intervene(("term", "U~1 app_1")).frozen - (form.output - terms.values[2]))) <= TOL


def test_recomputed_head_ablation_equals_the_library_with_the_head_zeroed(case):
    _, model, form, _, o_proj, _ = case
    k, h = 0, 1
    attn = form.stack.blocks[k].attention
    cols = attn.head_slice(h)

    def zero_head(module, args):
        (x,) = args
        x = x.clone()
        x[..., cols] = 0
        return (x,)

    base = getattr(model.library, "base_model", model.library)
    handle = o_proj(model.library, k).register_forward_pre_hook(zero_head)
    try:
        with torch.no_grad(), library_float64():
            want = base(input_ids=torch.as_tensor(IDS)[None]).last_hidden_state[0].numpy()
    finally:
        handle.remove()
    iv = form.intervene(("head", k, h))
    assert np.max(np.linalg.norm(iv.recomputed - want, axis=1) / np.linalg.norm(want, axis=1)) <= TOL
    assert not np.allclose(iv.recomputed, iv.frozen)  # layer 1 re-reads the change: the parameters respond
    assert np.isfinite(iv.dynamic_share)


def test_recomputed_neuron_ablation_equals_the_library_with_the_neuron_zeroed(case):
    _, model, form, _, _, down = case
    k, n = 0, 5

    def zero_neuron(module, args):
        (x,) = args
        x = x.clone()
        x[..., n] = 0
        return (x,)

    base = getattr(model.library, "base_model", model.library)
    handle = down(model.library, k).register_forward_pre_hook(zero_neuron)
    try:
        with torch.no_grad(), library_float64():
            want = base(input_ids=torch.as_tensor(IDS)[None]).last_hidden_state[0].numpy()
    finally:
        handle.remove()
    iv = form.intervene(("neuron", k, n))
    assert np.max(np.linalg.norm(iv.recomputed - want, axis=1) / np.linalg.norm(want, axis=1)) <= TOL
    assert np.max(np.abs(iv.recomputed - form.output)) > 1e-6  # the neuron mattered


def test_patching_matches_library_hooks(case):
    """Re-computed activation patching equals the library run with the same patch done by torch hooks, hidden states
    and (with an LM head) logits within 1e-12 (tests/patching_support.py)."""
    from patching_support import assert_patching_matches_library

    assert_patching_matches_library(case[1])


def test_minilm_shaped_bert_graph_links_through_the_held_post_ln(tmp_path):
    """A MiniLM-shaped BERT (post-LN, an embedding LayerNorm, no final norm; 3 layers, 3 heads, FFN 4× wide) has an
    exact graph with feature links: the links into the target plus the pruned weight and rest equal the held
    output's value along the direction and the library's within 1e-12, and every head -> head and neuron -> head
    link equals the same link recomputed by runs of the held network (tests/graph_support.py)."""
    from graph_support import direct_path

    from symuat.analysis import frozen

    cfg = dict(hidden_size=24, num_attention_heads=3, num_hidden_layers=3, intermediate_size=96,
               max_position_embeddings=32, vocab_size=V)
    randomize(transformers.BertModel(transformers.BertConfig(**cfg)), seed=5).save_pretrained(tmp_path)
    model = load(tmp_path)
    form = model.duat_form(input_ids=IDS)
    assert form.stack.kind == "post_ln" and form.stack.final_norm is None
    d = np.random.default_rng(2).standard_normal(24)
    pos = 2
    g = form.graph(d, position=pos, max_features=12)
    meta = g["metadata"]["symuat"]
    with torch.no_grad(), library_float64():
        lib = model.library(input_ids=torch.as_tensor(IDS)[None]).last_hidden_state[0].numpy()
    target = next(n["node_id"] for n in g["nodes"] if n["feature_type"] == "logit")
    into = sum(li["weight"] for li in g["links"] if li["target"] == target) + meta["pruned_weight"]
    assert abs(into + meta["rest"] - float(form.output[pos] @ d)) <= TOL * max(1.0, abs(meta["value"]))
    assert abs(into + meta["rest"] - float(lib[pos] @ d)) <= TOL * max(1.0, abs(meta["value"]))
    assert meta["error_max"] <= TOL and meta["feature_links"] > 0
    held = frozen(form).held
    from symuat.analysis.graph_links import feature_links

    kept = [_unit(n["clerp"]) for n in g["nodes"] if n["feature_type"] == "cross layer transcoder"]
    for u, v, w in feature_links(form, d, pos, kept):
        assert abs(w - direct_path(form, held, u, v, d, pos)) <= TOL * max(1.0, abs(w)), (u, v)


def _unit(clerp):
    """``"L1 head 0"`` -> ``("head", 1, 0)``."""
    layer, kind, index = clerp.split()
    return kind, int(layer[1:]), int(index)
