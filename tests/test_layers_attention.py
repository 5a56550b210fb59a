"""symuat.layers.attention: closed form, static bias, paper reduction, softmax, errors."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat import (
    Identity,
    Level,
    MultiHeadAttention,
    PaperMultiHeadAttention,
    ShapeError,
    check_identity,
    dims_grid,
    row_stochastic_matrix,
    softmax,
    split_columns,
    symbolic_matrix,
    vec_r,
)
from symuat.layers.attention import block_diagonal
from symuat.numeric.attention import AttentionWeights, head_attention_weights, multi_head_attention


@settings(max_examples=25, deadline=None)
@given(N=st.integers(1, 4), n_heads=st.integers(1, 3), d=st.integers(1, 2), causal=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_closed_form_matches_numeric_mha(N, n_heads, d, causal, seed):
    rng = np.random.default_rng(seed)
    M = n_heads * d
    W = {k: rng.standard_normal((M, M)) for k in ("W_Q", "W_K", "W_V", "W_O")}
    b = {k: rng.standard_normal(M) for k in ("b_V", "b_O")}
    attn = AttentionWeights(**W, **b, n_heads=n_heads, causal=causal)
    X = rng.standard_normal((N, M))
    H = tuple(sympy.ImmutableMatrix(Hh) for Hh in head_attention_weights(X, attn))
    mha = MultiHeadAttention(H, sympy.ImmutableMatrix(W["W_V"]), sympy.ImmutableMatrix(W["W_O"]),
                             sympy.ImmutableMatrix(b["b_V"]), sympy.ImmutableMatrix(b["b_O"]))
    form = mha.matrix_vector_form()
    got = np.array(form.W_prime, dtype=float) @ X.reshape(-1) + np.array(form.b_prime, dtype=float).reshape(-1)
    want = multi_head_attention(X, attn).reshape(-1)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * (1 + np.abs(want).max()))


def _mha_shapes(d):
    N, h, k = d["N"], d["h"], d["k"]
    shapes = {"X": (N, 2), "WV": (2, h * k), "WO": (h * k, 2), "bV": (h * k, 1), "bO": (2, 1)}
    shapes.update({f"H{i}": (N, N) for i in range(h)})
    return shapes


def _mha(e, d, stochastic: bool) -> MultiHeadAttention:
    H = tuple(row_stochastic_matrix(f"H{i}", d["N"]) if stochastic else e[f"H{i}"] for i in range(d["h"]))
    return MultiHeadAttention(H, e["WV"], e["WO"], e["bV"], e["bO"])


def _bias_identity(stochastic: bool) -> Identity:
    return Identity(shapes=_mha_shapes, lhs=lambda e, d: vec_r(_mha(e, d, stochastic).apply(e["X"])),
                    rhs=lambda e, d: _mha(e, d, stochastic).matrix_vector_form().apply(vec_r(e["X"])),
                    dims=dims_grid(N=(1, 2), h=(1, 2), k=(1, 2)), random_dims={"N": 3, "h": 2, "k": 2})


def test_static_value_bias_needs_row_stochastic_H():
    assert check_identity(_bias_identity(True)).holds
    denied = check_identity(_bias_identity(False))
    assert not any(ev.holds for ev in denied.evidence)
    assert denied.counterexample["dims"] == {"N": 1, "h": 1, "k": 1}


def test_W_HVO_is_product_and_closed_form():
    identity = Identity(
        shapes=_mha_shapes,
        lhs=lambda e, d: _mha(e, d, False).W_O_prime() * _mha(e, d, False).W_HV(),
        rhs=lambda e, d: _mha(e, d, False).W_HVO_closed_form(),
        dims=dims_grid(N=(1, 2), h=(1, 2), k=(1, 2)), random_dims={"N": 3, "h": 3, "k": 2})
    verdict = check_identity(identity)
    assert verdict.holds and Level.SYMBOLIC in verdict.levels


def test_paper_mha_is_block_diagonal_standard_mha():
    H = (symbolic_matrix("a", 2, 2), symbolic_matrix("b", 2, 2))
    W_V = (symbolic_matrix("v", 2, 3), symbolic_matrix("u", 2, 3))
    paper = PaperMultiHeadAttention(H, W_V, symbolic_matrix("o", 6, 4))
    X = symbolic_matrix("x", 2, 4)
    assert (paper.apply(X) - paper.as_standard().apply(X)).expand().is_zero_matrix
    assert paper.as_standard().W_V == block_diagonal(*W_V)


def test_softmax_rows_sum_to_one():
    S = symbolic_matrix("s", 2, 3)
    assert all(sympy.simplify(sum(softmax(S).row(i)) - 1) == 0 for i in range(2))


def test_row_stochastic_rows_sum_to_one():
    H = row_stochastic_matrix("h", 3)
    assert all(sympy.expand(sum(H.row(i))) == 1 for i in range(3))


def test_errors():
    H = (sympy.eye(2), sympy.eye(2), sympy.eye(2))
    with pytest.raises(ShapeError, match=r"n_heads=3 must divide the value width D=4"):
        MultiHeadAttention(H, sympy.ImmutableMatrix.zeros(4, 4), sympy.ImmutableMatrix.zeros(4, 4))
    with pytest.raises(ShapeError, match=r"n_heads=0"):
        MultiHeadAttention((), sympy.ImmutableMatrix.zeros(4, 4), sympy.ImmutableMatrix.zeros(4, 4))
    with pytest.raises(ShapeError, match=r"H\[1\] has shape \(3, 3\)"):
        MultiHeadAttention((sympy.eye(2), sympy.eye(3)), sympy.ImmutableMatrix.zeros(4, 4),
                           sympy.ImmutableMatrix.zeros(4, 4))
    with pytest.raises(ShapeError, match=r"W_O has 3 rows, expected D=4"):
        MultiHeadAttention(H[:2], sympy.ImmutableMatrix.zeros(4, 4), sympy.ImmutableMatrix.zeros(3, 4))
    with pytest.raises(ShapeError, match=r"bias b_V has shape"):
        MultiHeadAttention(H[:2], sympy.ImmutableMatrix.zeros(4, 4), sympy.ImmutableMatrix.zeros(4, 4),
                           b_V=sympy.ImmutableMatrix.zeros(3, 1))
    mha = MultiHeadAttention(H[:2], sympy.ImmutableMatrix.zeros(4, 4), sympy.ImmutableMatrix.zeros(4, 4))
    with pytest.raises(ShapeError, match=r"X has shape \(2, 3\), expected \(2, 4\)"):
        mha.apply(sympy.ImmutableMatrix.zeros(2, 3))
    with pytest.raises(ShapeError, match=r"n_heads=3 must divide the width M=4"):
        split_columns(sympy.ImmutableMatrix.zeros(2, 4), 3)
    with pytest.raises(ShapeError, match=r"n_heads=2 attention matrices but 1 value matrices"):
        PaperMultiHeadAttention(H[:2], (sympy.eye(2),), sympy.eye(4))
    with pytest.raises(ShapeError, match=r"W_O has 3 rows, expected n_heads\*d=4"):
        PaperMultiHeadAttention(H[:2], (sympy.eye(2), sympy.eye(2)), sympy.ImmutableMatrix.zeros(3, 4))
