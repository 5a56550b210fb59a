"""The library side of the patching tests: the same patch done by torch hooks on the library's own modules.

Not a test module.  For each unit a hook on the library model captures the unit's value in the clean run and writes
it into the corrupted run; nothing here calls symuat's forward.  The module paths per family are this table's
(read from the transformers sources), never symuat's importers.
"""

from __future__ import annotations

import numpy as np

from symuat.models._torch import library_base

#: model_type -> (layer list, attention output projection, FFN output module, routed experts module[, the down
#: projection of a dense layer when it is not the FFN output module]) below the base
_LLAMA = ("layers", "self_attn.o_proj", "mlp.down_proj", None)
_MOE = ("layers", "self_attn.o_proj", "mlp", "mlp.experts", "mlp.down_proj")
PATHS = {
    "gpt2": ("h", "attn.c_proj", "mlp.c_proj", None),
    "gptj": ("h", "attn.out_proj", "mlp.fc_out", None),
    "gpt_neox": ("layers", "attention.dense", "mlp.dense_4h_to_h", None),
    "phi": ("layers", "self_attn.dense", "mlp.fc2", None),
    "starcoder2": ("layers", "self_attn.o_proj", "mlp.c_proj", None),
    "falcon": ("h", "self_attention.dense", "mlp.dense_4h_to_h", None),
    "bert": ("encoder.layer", "attention.output.dense", "output.dense", None),
    "roberta": ("encoder.layer", "attention.output.dense", "output.dense", None),
    "distilbert": ("transformer.layer", "attention.out_lin", "ffn.lin2", None),
    "modernbert": ("layers", "attn.Wo", "mlp.Wo", None),
    **{f: ("encoder.block", "layer.0.SelfAttention.o", "layer.1.DenseReluDense.wo", None)
       for f in ("t5", "mt5", "umt5")},
    # an encoder–decoder's decoder (below the ...ForConditionalGeneration model itself)
    **{f"{f}:decoder": ("decoder.block", "layer.0.SelfAttention.o", "layer.2.DenseReluDense.wo", None)
       for f in ("t5", "mt5", "umt5")},
    "llama4_text": ("layers", "self_attn.o_proj", "feed_forward", "feed_forward.experts", "feed_forward.down_proj"),
    **{f: _LLAMA for f in ("llama", "mistral", "qwen2", "qwen3", "phi3", "olmo", "olmo2", "cohere", "stablelm",
                           "gemma", "gemma2", "gemma3_text")},
    **{f: _MOE for f in ("mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "gpt_oss", "deepseek_v2", "deepseek_v3")},
}


def _get(module, dotted):
    for part in dotted.split("."):
        module = module[int(part)] if part.isdigit() else getattr(module, part)
    return module


def _first(x):
    return x[0] if isinstance(x, tuple) else x


def _replace_first(out, value):
    return (value,) + tuple(out[1:]) if isinstance(out, tuple) else value


class LibraryPatch:
    """Hooks that capture a unit in one run and write it into the next (``mode`` "capture" then "patch")."""

    def __init__(self, base, unit, head_dim, key=None):
        self.base, self.unit, self.head_dim = base, unit, head_dim
        layers, attn, ffn, experts, *down = PATHS[key or base.config.model_type]
        self.layers = _get(base, layers)
        self.paths = {"attn": attn, "ffn": ffn, "experts": experts, "neuron": (down or [ffn])[0]}
        self.value, self.mode = None, "capture"

    def rows(self):
        pos = self.unit[-1] if len(self.unit) == (4 if self.unit[0] in ("head", "neuron", "expert") else 3) else None
        return slice(None) if pos is None else [pos] if isinstance(pos, int) else list(pos)

    def _swap(self, tensor, cols=slice(None)):
        """Capture tensor[0, rows, cols], or write the captured value there (on a copy)."""
        rows = self.rows()
        if self.mode == "capture":
            self.value = tensor[0][rows][..., cols].clone()
            return tensor
        out = tensor.clone()
        sub = out[0][rows]
        sub[..., cols] = self.value
        out[0][rows] = sub
        return out

    def register(self):
        kind, k = self.unit[0], self.unit[1]
        L = len(self.layers)
        if kind == "resid" and k < L:
            def pre(module, args, kwargs):
                if args:
                    return (self._swap(args[0]),) + tuple(args[1:]), kwargs
                return args, {**kwargs, "hidden_states": self._swap(kwargs["hidden_states"])}
            return self.layers[k].register_forward_pre_hook(pre, with_kwargs=True)
        if kind == "resid":
            return self.layers[L - 1].register_forward_hook(
                lambda m, a, out: _replace_first(out, self._swap(_first(out))))
        layer = self.layers[k]
        if kind in ("attn", "ffn"):
            return _get(layer, self.paths[kind]).register_forward_hook(
                lambda m, a, out: _replace_first(out, self._swap(_first(out))))
        if kind in ("head", "neuron"):
            module = _get(layer, self.paths["attn" if kind == "head" else "neuron"])
            if kind == "head":  # head h's columns of the output projection's input (the heads' concatenation)
                d = self.head_dim
                cols = slice(self.unit[2] * d, (self.unit[2] + 1) * d)
            else:
                cols = self.unit[2]
            return module.register_forward_pre_hook(lambda m, args: (self._swap(args[0], cols),) + tuple(args[1:]))
        return self._expert_hook(_get(layer, self.paths["experts"]))

    def _expert_hook(self, experts):
        import torch

        e = self.unit[2]

        def contribution(args, out):
            if self.base.config.model_type == "llama4_text":  # the experts' rows, expert by expert: (E*N, M) of
                return out.view(experts.num_experts, -1, out.shape[-1])[e]  # inputs already scaled by the router
            hidden, index, weights = args[:3]
            if self.base.config.model_type == "gpt_oss":  # its loop cannot skip an index: the others weigh 0
                return experts.forward(hidden, index, torch.where(index == e, weights, torch.zeros_like(weights)))
            only = torch.where(index == e, index, torch.full_like(index, experts.num_experts))
            return experts.forward(hidden, only, weights)  # the library's own expert loop, expert e only

        def hook(module, args, out):
            mine = contribution(args, out)[None]  # (1, N, M): tokens are flattened by the MoE block
            if self.mode == "capture":
                self.value = mine[0][self.rows()].clone()
                return out
            delta = torch.zeros_like(mine)
            delta[0][self.rows()] = self.value - mine[0][self.rows()]
            if self.base.config.model_type == "llama4_text":  # into expert e's rows; the MoE block sums the experts
                full = torch.zeros_like(out).view(experts.num_experts, -1, out.shape[-1])
                full[e] = delta[0]
                return out + full.view_as(out)
            return out + delta[0]
        return experts.register_forward_hook(hook)


def library_patched(model, clean_ids, corrupted_ids, unit):
    """``(last_hidden_state, logits or None)`` of the library run on ``corrupted_ids`` with ``unit`` set to its value
    in the run on ``clean_ids`` (float64, under ``library_float64``)."""
    import torch

    from symuat.models import library_float64

    library = model.library
    base = library_base(library)
    patcher = LibraryPatch(base, unit, model.stack.blocks[0].attention.head_dim)
    handle = patcher.register()
    try:
        with torch.no_grad(), library_float64():
            base(input_ids=torch.as_tensor(clean_ids)[None])
            patcher.mode = "patch"
            hidden = base(input_ids=torch.as_tensor(corrupted_ids)[None]).last_hidden_state[0].numpy()
            logits = None
            if model.lm_head is not None:
                logits = library(input_ids=torch.as_tensor(corrupted_ids)[None]).logits[0].numpy()
    finally:
        handle.remove()
    return hidden, logits


def library_patched_seq2seq(model, encoder_ids, clean_ids, corrupted_ids, unit):
    """:func:`library_patched` for an encoder–decoder: the same encoder input in both runs, the decoder's ``unit``
    patched; ``(decoder last hidden state, logits)``."""
    import torch

    from symuat.models import library_float64

    library = model.library
    patcher = LibraryPatch(library, unit, model.stack.blocks[0].attention.head_dim,
                           f"{library.config.model_type}:decoder")
    handle = patcher.register()
    enc = torch.as_tensor(encoder_ids)[None]
    try:
        with torch.no_grad(), library_float64():
            library(input_ids=enc, decoder_input_ids=torch.as_tensor(clean_ids)[None])
            patcher.mode = "patch"
            out = library(input_ids=enc, decoder_input_ids=torch.as_tensor(corrupted_ids)[None],
                          output_hidden_states=True)
    finally:
        handle.remove()
    return out.decoder_hidden_states[-1][0].numpy(), out.logits[0].numpy()


def units(stack):
    """A few units of every kind the stack has (0-based), positions included."""
    from symuat.numeric.moe import MoEFFNWeights

    L = stack.depth
    out = [("resid", 0, 1), ("resid", 1, 4), ("resid", L, 5), ("attn", L - 1, [1, 3]), ("ffn", 0, 3),
           ("head", 0, 1), ("head", L - 1, 0, 4)]
    for k, b in enumerate(stack.blocks):
        if isinstance(b.ffn, MoEFFNWeights):
            out += [("expert", k, 1), ("expert", k, 2, [1, 5])]
        else:
            out += [("neuron", k, 3, 3)]
    return out


def assert_patching_matches_library(model, tol=1e-12):
    """Every unit of :func:`units`, patched re-computed by symuat, equals the library's hooked run within ``tol``
    (hidden states relative per row; logits relative to their scale)."""
    V = model.word_embeddings.shape[0]
    rng = np.random.default_rng(11)
    clean = rng.integers(2, V, size=7)
    corrupted = clean.copy()
    corrupted[[1, 3]] = (clean[[1, 3]] + 5) % (V - 2) + 2
    fc, fx = model.duat_form(input_ids=clean), model.duat_form(input_ids=corrupted)
    changed = []
    for unit in units(model.stack):
        got = fx.patch(unit, fc)
        hidden, logits = library_patched(model, clean, corrupted, unit)
        err = float(np.max(np.linalg.norm(got.output - hidden, axis=1) / np.linalg.norm(hidden, axis=1)))
        assert err <= tol, f"{unit}: relative error {err:.1e}"
        if logits is not None:
            assert np.max(np.abs(got.logits - logits)) <= 10 * tol * max(1.0, float(np.max(np.abs(logits)))), unit
        changed.append((unit, float(np.max(np.abs(got.output - fx.output)))))
    # no patch is a no-op on both sides: every unit but an expert (which the router may pick in neither run) moves
    assert all(v > 1e-9 for u, v in changed if u[0] != "expert"), [c for c in changed if c[1] <= 1e-9]
    assert any(v > 1e-9 for u, v in changed if u[0] == "expert") or not any(u[0] == "expert" for u, _ in changed)
    return changed


class LibraryHold:
    """Hold the routing and the norms of the library run: capture each router's output (``mlp.gate``, and Qwen2-MoE's
    ``shared_expert_gate``, whose sigmoid is the shared expert's gate) and each RMSNorm's input and output in one
    run, then replay them in the next: a router returns its captured output (which experts, and their weights), a
    norm returns ``input * (output0 / input0)`` — its held diagonal times its weight, read from the library's own
    values.  With ``gates=True`` every activation module (``act_fn``) also replays its outputs, call by call (the
    routing is held, so the experts are called in the same order; ``paused`` lets a hook's own extra calls through).
    Attention is not held: units after the last layer's attention, or a one-token input (its attention is 1)."""

    def __init__(self, base, gates=False):
        self.mode, self.saved, self.handles, self.paused = "capture", {}, [], False
        self.calls: dict = {}
        for name, module in base.named_modules():
            router = name.endswith("mlp.gate") or name.endswith("mlp.shared_expert_gate")
            if router or type(module).__name__.endswith("RMSNorm"):
                self.handles.append(module.register_forward_hook(self._hook(name, router)))
            elif gates and name.endswith("act_fn"):
                self.handles.append(module.register_forward_hook(self._act(name)))

    def _hook(self, name, router):
        def hook(module, args, out):
            if self.mode == "capture":
                self.saved[name] = (args[0].clone(), out)
                return out
            x0, y0 = self.saved[name]
            return y0 if router else args[0] * (y0 / x0)
        return hook

    def _act(self, name):
        def hook(module, args, out):
            if self.paused:
                return out
            if self.mode == "capture":
                self.saved.setdefault(name, []).append(out)
                return out
            i = self.calls.get(name, 0)
            self.calls[name] = i + 1
            return self.saved[name][i]
        return hook

    def remove(self):
        for h in self.handles:
            h.remove()


def scale_expert(layer, experts_path, e, scale, holder=None):
    """A hook scaling routed expert ``e``'s weighted output by ``scale`` (the library's own expert loop, ``e``
    only; a ``holder``'s activation replay paused for that extra call: the expert's input is unchanged there)."""
    import torch

    experts = _get(layer, experts_path)

    def hook(module, args, out):
        hidden, index, weights = args[:3]
        only = torch.where(index == e, index, torch.full_like(index, experts.num_experts))
        if holder is not None:
            holder.paused = True
        try:
            return out + (scale - 1.0) * experts.forward(hidden, only, weights)
        finally:
            if holder is not None:
                holder.paused = False
    return experts.register_forward_hook(hook)


def library_frozen(model, corrupted_ids, *, unit=None, clean_ids=None, scale=None, hold=True, gates=False):
    """The library's last hidden state on ``corrupted_ids`` with its routing and norms (``gates=True``: and its
    activations) held (:class:`LibraryHold`; ``hold=False``: live) and either ``unit`` patched from the run on
    ``clean_ids`` or routed expert ``unit = ("expert", k, e)`` scaled by ``scale`` (float64, under
    ``library_float64``)."""
    import torch

    from symuat.models import library_float64

    library = model.library
    base = library_base(library)
    run = lambda ids: base(input_ids=torch.as_tensor(ids)[None]).last_hidden_state[0]  # noqa: E731
    handles, holder = [], None
    try:
        with torch.no_grad(), library_float64():
            if scale is None:
                patcher = LibraryPatch(base, unit, model.stack.blocks[0].attention.head_dim)
                handles.append(patcher.register())
                run(clean_ids)
                value = patcher.value
            if hold:
                holder = LibraryHold(base, gates)
                run(corrupted_ids)
                holder.mode = "replay"
            if scale is None:
                patcher.value, patcher.mode = value, "patch"
            else:
                layers, _, _, experts, *_ = PATHS[base.config.model_type]
                handles.append(scale_expert(_get(base, layers)[unit[1]], experts, unit[2], scale, holder))
            return run(corrupted_ids).numpy()
    finally:
        for h in handles:
            h.remove()
        if holder is not None:
            holder.remove()
