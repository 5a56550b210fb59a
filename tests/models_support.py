"""Shared helpers of the model-import tests: torch availability, O(1) random weights, library hidden states.

Not a test module.  Tests that need torch skip when it is missing and fail when ``SYMUAT_REQUIRE_TORCH=1``.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os

import numpy as np
import pytest

from symuat.models import random_init as randomize  # noqa: F401  (re-exported for the model tests)

TOL = 1e-12


class _Deferred:
    """A module imported on first attribute access: collecting the tests does not import torch (about 3 s)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        if attr.startswith("__"):  # introspection (e.g. doctest collection looking for __wrapped__) imports nothing
            raise AttributeError(attr)
        return getattr(importlib.import_module(self._name), attr)


def require_torch():
    """``(torch, transformers)``, imported on first use; skip when missing, fail instead if SYMUAT_REQUIRE_TORCH=1."""
    missing = [name for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]
    if missing:
        if os.environ.get("SYMUAT_REQUIRE_TORCH") == "1":
            pytest.fail(f"SYMUAT_REQUIRE_TORCH=1 but {' and '.join(missing)} cannot be imported")
        pytest.skip(f"{' and '.join(missing)} not installed", allow_module_level=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return _Deferred("torch"), _Deferred("transformers")




def library_states(model, X: np.ndarray, mask=None):
    """The library's own hidden states (list, last one = ``last_hidden_state``) for one sequence."""
    import torch

    from symuat.models import library_float64

    am = None if mask is None else torch.tensor(np.asarray(mask)[None], dtype=torch.long)
    with torch.no_grad(), library_float64():
        out = model(inputs_embeds=torch.from_numpy(X)[None], attention_mask=am, output_hidden_states=True)
    states = [h[0].numpy() for h in out.hidden_states]
    assert np.array_equal(states[-1], out.last_hidden_state[0].numpy())
    return states


def row_errors(want: np.ndarray, got: np.ndarray, rows) -> float:
    """Largest relative error over the selected tokens (rows)."""
    w, g = want[rows], got[rows]
    return float(np.max(np.linalg.norm(w - g, axis=1) / np.linalg.norm(w, axis=1)))


def duat_states(stack, X: np.ndarray, mask=None):
    """The DUAT form's output of the first l blocks for l = 1..L (the last with the final norm)."""
    from symuat.numeric import duat_form

    L = stack.depth
    out = []
    for depth in range(1, L + 1):
        sub = stack if depth == L else dataclasses.replace(stack, blocks=stack.blocks[:depth], final_norm=None)
        out.append(duat_form(sub, X, attention_mask=None if mask is None else np.asarray(mask, float)).output)
    return out


def assert_reproduces(model, stack, X: np.ndarray, mask=None, tol: float = TOL):
    """The DUAT form reproduces every library hidden state for every real token within ``tol``."""
    real = np.ones(X.shape[0], bool) if mask is None else np.asarray(mask, bool)
    want = library_states(model, X, mask)[1:]
    got = duat_states(stack, X, mask)
    assert len(want) == len(got) == stack.depth
    errs = [row_errors(w, g, real) for w, g in zip(want, got)]
    assert max(errs) <= tol, f"per-layer relative errors {['%.1e' % e for e in errs]} exceed {tol:g}"
    return errs


def assert_padded_batch(model, side: str, N: int, V: int, tol: float = TOL) -> None:
    """A batch of 3 rows of random ids (N, 5 and 2 real tokens, padded on ``side``): every real token of every form
    within ``tol`` (relative, per token) of the library's own ``last_hidden_state`` for the same call."""
    import torch

    from symuat.models import library_float64
    from symuat.models._torch import library_base

    ids = np.random.default_rng(5).integers(1, V, size=(3, N))
    mask = np.zeros_like(ids)
    for b, n in enumerate([N, 5, 2]):
        mask[b, slice(N - n, N) if side == "left" else slice(0, n)] = 1
    forms = model.duat_form(input_ids=ids, attention_mask=mask)
    with torch.no_grad(), library_float64():
        base = library_base(model.library)  # a model with a head: its base's output
        want = base(input_ids=torch.as_tensor(ids), attention_mask=torch.as_tensor(mask)).last_hidden_state
    for b, form in enumerate(forms):
        w = want[b].numpy()[mask[b].astype(bool)]
        assert np.max(np.linalg.norm(form.output - w, axis=1) / np.linalg.norm(w, axis=1)) <= tol, (side, b)


def assert_views_rebuild(model, form, want: np.ndarray, tol: float = TOL) -> None:
    r""":math:`\tilde A x'_0 + \tilde c + \sum_j \tilde U_j \mathrm{app}_j` from the form's views (``form.dynamic(j)``
    and the activation of each layer) equals ``want`` (the library's state, N×M), each row relative within ``tol``."""
    from symuat.numeric import activation_function

    x0 = form.X0.reshape(-1)
    total = form.A_tilde() @ x0 + form.c_tilde()
    for j in range(1, form.depth + 1):
        d = form.dynamic(j)
        app = activation_function(model.stack.block_activation(j - 1))(d.V @ x0 + d.beta)
        total = total + d.U @ (app if d.P is None else app * (d.P @ x0 + d.gamma))
    assert np.max(np.linalg.norm(total.reshape(want.shape) - want, axis=1) / np.linalg.norm(want, axis=1)) <= tol


def assert_logit_attributions(model, ids, by=("head", "source", "neuron"), reverse_by=None) -> None:
    """The form's logits equal the library's, each attribution by ``by`` of every logit adds up to them, and (with
    ``reverse_by``) one logit's reverse-mode attribution equals the full method."""
    import torch

    from symuat.models import library_float64
    from symuat.numeric.head import as_head

    form = model.duat_form(input_ids=ids)
    with torch.no_grad(), library_float64():
        want = model.library(input_ids=torch.as_tensor(ids)[None]).logits[0].numpy()
    assert np.max(np.abs(as_head(form.unembedding).logits(form.output) - want)) <= 1e-12 * np.max(np.abs(want))
    for b in by:
        a = form.attribution(b, target="logits")
        assert np.max(np.abs(a.values.sum(0) + a.rest - want)) <= 1e-11 * max(1.0, np.max(np.abs(want))), b
    if reverse_by is not None:
        n = len(ids) - 1
        fast = form.attribution(reverse_by, target=5, position=n)
        full = form.attribution(reverse_by, target=5, position=n, method="full")
        assert np.max(np.abs(fast.values - full.values)) <= 1e-12
