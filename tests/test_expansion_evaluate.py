"""Tests for symuat.expansion.evaluate: the derived table, evaluated with operators, vs. plain numpy."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.errors import InvalidValueError, ShapeError
from symuat.expansion import (
    INPUT,
    SubstitutionTable,
    TableEvaluator,
    beta_name,
    c_name,
    evaluate_form,
    layer_symbols,
    nc_symbol,
    substitution_table,
)


class DenseOp:
    """Trivial operator: wraps a dense matrix, counts mat-vecs, refuses operator products."""

    def __init__(self, M: np.ndarray) -> None:
        self.M = M
        self.shape = M.shape
        self.calls = 0

    def matvec(self, v: np.ndarray) -> np.ndarray:
        assert v.ndim == 1
        self.calls += 1
        return self.M @ v

    def __matmul__(self, other):  # a product of operators must never be formed
        raise AssertionError("operator product formed")

    __mul__ = __rmul__ = __rmatmul__ = __matmul__


def random_network(L: int, seed: int, widths=None, hidden=None):
    rng = np.random.default_rng(seed)
    widths = widths or [int(rng.integers(1, 5)) for _ in range(L + 1)]
    hidden = hidden or [int(rng.integers(1, 6)) for _ in range(L + 1)]
    params = {}
    for i in range(1, L + 1):
        d_in, d_out, h = widths[i - 1], widths[i], hidden[i]
        params[i] = (
            rng.normal(size=(d_out, d_in)) / np.sqrt(d_in),
            rng.normal(size=(h, d_in)) / np.sqrt(d_in),
            rng.normal(size=(d_out, h)) / np.sqrt(h),
            rng.normal(size=h),
            rng.normal(size=d_out),
        )
    x0 = rng.normal(size=widths[0])
    return params, x0


def bindings_of(params, x0):
    b = {INPUT.name: x0}
    for i, (W1, W2, W3, b2, b3) in params.items():
        s = layer_symbols(i)
        b.update({s.W1.name: DenseOp(W1), s.W2.name: DenseOp(W2), s.W3.name: DenseOp(W3), s.b2.name: b2, s.b3.name: b3})
    return b


def nested_numpy(params, x0, act):
    """Independent reference: the residual recursion Eq. 20 in plain numpy."""
    x = x0
    for i in sorted(params):
        W1, W2, W3, b2, b3 = params[i]
        x = (W1 @ x + b3) + W3 @ act(W2 @ x + b2)
    return x


def _tol(*arrays):
    return 1e-12 * (1 + max(float(np.max(np.abs(a))) for a in arrays)) * 50


@settings(max_examples=25, deadline=None)
@given(L=st.integers(1, 7), seed=st.integers(0, 2**32 - 1), act=st.sampled_from(["tanh", "relu", "sin"]))
def test_table_evaluation_matches_nested_numpy(L, seed, act):
    fn = {"tanh": np.tanh, "relu": lambda v: np.maximum(v, 0.0), "sin": np.sin}[act]
    params, x0 = random_network(L, seed)
    terms = evaluate_form(substitution_table(L), bindings_of(params, x0), sigma=fn)
    ref = nested_numpy(params, x0, fn)
    assert terms.total.shape == ref.shape
    assert np.allclose(terms.total, ref, rtol=1e-10, atol=_tol(ref, terms.linear_term, *terms.sigma_terms))
    assert len(terms.sigma_terms) == L


def test_terms_match_closed_forms_and_first_layer():
    """linear_term = W_L1...W_11 x0 and sigma_terms[L-1] = W_L3 sigma(W_L2 x_{L-1} + b_L2), independently."""
    L = 4
    params, x0 = random_network(L, 7, widths=[3, 4, 2, 5, 3], hidden=[0, 4, 3, 5, 2])
    terms = evaluate_form(substitution_table(L), bindings_of(params, x0), sigma=np.tanh)
    lin = x0
    for i in range(1, L + 1):
        lin = params[i][0] @ lin
    assert np.allclose(terms.linear_term, lin)
    x_prev = nested_numpy({i: params[i] for i in range(1, L)}, x0, np.tanh)
    W1, W2, W3, b2, b3 = params[L]
    assert np.allclose(terms.sigma_terms[-1], W3 @ np.tanh(W2 @ x_prev + b2))
    c = params[1][4]
    for i in range(2, L + 1):
        c = params[i][0] @ c + params[i][4]
    assert np.allclose(terms.bias_term, c)
    # U_1^{(L)} sigma_1 = W_L1 ... W_21 W_13 sigma(W_12 x0 + b_12)
    u = params[1][2] @ np.tanh(params[1][1] @ x0 + params[1][3])
    for i in range(2, L + 1):
        u = params[i][0] @ u
    assert np.allclose(terms.sigma_terms[0], u)


def test_matvec_count_is_quadratic_not_exponential():
    L = 10
    params, x0 = random_network(L, 3)
    b = bindings_of(params, x0)
    evaluate_form(substitution_table(L), b, sigma=np.tanh)
    calls = sum(v.calls for v in b.values() if isinstance(v, DenseOp))
    assert calls <= L * L + 4 * L


def test_corrupted_table_disagrees_numerically():
    L = 3
    t = substitution_table(L)
    s = layer_symbols(2)
    rows = tuple(
        dataclasses.replace(r, definition=s.W2 * nc_symbol(c_name(1)) + s.b2) if r.name == beta_name(2) else r
        for r in t.rows
    )
    bad = SubstitutionTable(L, rows)
    params, x0 = random_network(L, 11, widths=[3, 3, 3, 3], hidden=[0, 4, 4, 4])
    ref = nested_numpy(params, x0, np.tanh)
    assert np.allclose(evaluate_form(t, bindings_of(params, x0), np.tanh).total, ref)
    assert not np.allclose(evaluate_form(bad, bindings_of(params, x0), np.tanh).total, ref)


def test_evaluator_named_quantities():
    L = 2
    params, x0 = random_network(L, 5)
    ev = TableEvaluator(substitution_table(L), bindings_of(params, x0), np.tanh)
    W1, W2, W3, b2, b3 = params[2]
    x1 = nested_numpy({1: params[1]}, x0, np.tanh)
    # beta_2 + V_2 x0 is the full pre-activation of layer 2
    pre = ev.vector(nc_symbol(beta_name(2))) + ev.vector(nc_symbol(r"\tilde{V}_{2}") * INPUT)
    assert np.allclose(pre, W2 @ x1 + b2)


def test_binding_errors():
    L = 2
    params, x0 = random_network(L, 1, widths=[3, 3, 3], hidden=[0, 2, 2])
    t = substitution_table(L)
    good = bindings_of(params, x0)
    missing = dict(good)
    del missing["b'_{2,3}"]
    with pytest.raises(InvalidValueError, match="missing"):
        evaluate_form(t, missing, np.tanh)
    with pytest.raises(InvalidValueError, match="unknown"):
        evaluate_form(t, {**good, "W'_{3,1}": DenseOp(np.eye(3))}, np.tanh)
    with pytest.raises(InvalidValueError, match="matvec"):
        evaluate_form(t, {**good, "W'_{1,1}": params[1][0]}, np.tanh)
    with pytest.raises(InvalidValueError, match="NaN"):
        evaluate_form(t, {**good, "x'_{0}": np.array([np.nan, 0.0, 0.0])}, np.tanh)
    with pytest.raises(InvalidValueError, match="1-D"):
        evaluate_form(t, {**good, "b'_{1,2}": np.zeros((2, 1))}, np.tanh)
    with pytest.raises(InvalidValueError, match="callable"):
        evaluate_form(t, good, sigma=3)
    with pytest.raises(ShapeError):
        evaluate_form(t, {**good, "x'_{0}": np.zeros(4)}, np.tanh)


def test_works_with_symuat_numeric_operators():
    """Interoperability with the project's operator classes (same .shape/.matvec protocol)."""
    ops = pytest.importorskip("symuat.numeric.operators")
    L = 3
    params, x0 = random_network(L, 21, widths=[3, 3, 3, 3], hidden=[0, 2, 4, 3])
    b = bindings_of(params, x0)
    for i in range(1, L + 1):
        s = layer_symbols(i)
        b[s.W1.name] = ops.IdentityOperator(3) if i == 2 else ops.Dense(params[i][0])
        b[s.W2.name] = ops.Dense(params[i][1])
        b[s.W3.name] = ops.Dense(params[i][2])
    params[2] = (np.eye(3),) + params[2][1:]
    terms = evaluate_form(substitution_table(L), b, np.tanh)
    assert np.allclose(terms.total, nested_numpy(params, x0, np.tanh))
