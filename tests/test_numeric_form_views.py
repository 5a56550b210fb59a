"""Named views of a DUAT form (A~, c~, V~_j, beta~_j, U~_j, per-token terms, attention, layer parameters): they
rebuild the form's output through the paper's Eq. 11 / 33 and match the direct forward pass, for every layout."""

from __future__ import annotations

import numpy as np
import pytest

from symuat.errors import InvalidValueError
from symuat.numeric import LAYOUTS, activation_function, duat_form, head_attention_weights, random_stack, stack_output
from symuat.numeric.norms import apply_norm

CASES = [(kind, gated, extras) for kind in LAYOUTS for gated in (False, True)
         for extras in ({}, dict(position_embeddings=True, input_norm=True, final_norm=True))
         if not (kind in ("paper", "standard") and extras)]


def _form(kind, gated, extras, seed=0, N=5):
    rng = np.random.default_rng(seed)
    stack = random_stack(rng, 3, 8, 2, 12, kind=kind, activation="gelu", gated=gated, causal=True, **extras)
    return stack, duat_form(stack, rng.standard_normal((N, 8)))


@pytest.mark.parametrize("kind, gated, extras", CASES)
def test_eq11_rebuilt_from_the_views(kind, gated, extras):
    stack, form = _form(kind, gated, extras)
    x0 = form.X0.reshape(-1)
    lin, c = form.A_tilde() @ x0, form.c_tilde()
    np.testing.assert_allclose(lin, form.terms.linear_term, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c, form.terms.bias_term, rtol=1e-12, atol=1e-12)
    total = lin + c
    for j in range(1, form.depth + 1):
        d = form.dynamic(j)
        app = activation_function(stack.block_activation(j - 1))(d.V @ x0 + d.beta)
        if gated:
            app = app * (d.P @ x0 + d.gamma)
        np.testing.assert_allclose(d.U @ app, form.terms.sigma_terms[j - 1], rtol=1e-10, atol=1e-12)
        total = total + d.U @ app
    want = stack_output(stack, form.X0)
    np.testing.assert_allclose(total.reshape(want.shape), want, rtol=1e-10, atol=1e-12)
    terms = form.token_terms()
    assert list(terms)[:2] == ["A~x0", "c~"] and len(terms) == 2 + form.depth
    np.testing.assert_allclose(sum(terms.values()), form.output, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", LAYOUTS)
def test_attention_view_is_the_layer_attention(kind):
    stack, form = _form(kind, False, {}, seed=1)
    X = form.params.input(1)
    U = apply_norm(X, stack.blocks[1].ln1) if kind in ("pre_ln", "parallel", "sandwich") else X
    want = head_attention_weights(U, stack.blocks[1].attention)
    for h in range(2):
        np.testing.assert_allclose(form.attention(1, h), want[h], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(form.attention(1, h).sum(axis=1), 1.0, rtol=1e-14)


def test_layer_parameters_and_their_factors():
    stack, form = _form("pre_ln", True, {}, seed=2)
    p = form.parameters(2)
    assert p.layer == 2 and p.W4 is not None and p.W1.shape == (40, 40)
    names = [f.name for f in p.factors]
    assert names == ["attention head 0", "attention head 1", "FFN gate", "FFN up", "FFN down"]
    head = p.factors[1]
    np.testing.assert_array_equal(head.token_mixing, form.attention(2, 1))
    a = stack.blocks[2].attention
    np.testing.assert_allclose(head.feature_map[0] @ head.feature_map[1],
                               (a.W_V[:, a.kv_slice(1)] @ a.W_O[a.head_slice(1), :]).T)


def test_html_summary_and_bad_indices():
    _, form = _form("post_ln", False, {})
    html = form._repr_html_()
    assert html.startswith("<table>") and "U~3 app_3" in html and "N=5, M=8" in html
    for call, arg in ((form.attention, (3, 0)), (form.attention, (0, 2)), (form.parameters, (-1,)),
                      (form.dynamic, (0,)), (form.dynamic, (4,)), (form.attention, (True, 0))):
        with pytest.raises(InvalidValueError):
            call(*arg)


def test_form_holds_no_attention_matrices():
    """Streaming: the form keeps layer inputs, not operators; params are recomputed on demand (one at a time)."""
    _, form = _form("pre_ln", False, {}, seed=3)
    assert all(isinstance(x, np.ndarray) and x.shape == (5, 8) for x in form.params._inputs)
    first = form.params[0]
    assert form.params[0] is first and form.params[1] is not first
    assert len(form.params[:]) == form.depth == 3
