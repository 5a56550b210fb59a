"""Symbolic MoE dispatch and gates, attention score modifiers, interleaved rotary."""

from __future__ import annotations

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.algebra.matrices import symbolic_matrix, vec_r
from symuat.errors import ShapeError
from symuat.evidence.fields import SIGMA
from symuat.layers.attention_scores import alibi_bias, masked_weights, sliding_window_mask, softcap
from symuat.layers.gated_ffn import GatedFFN
from symuat.layers.moe import (
    check_choice,
    dispatch,
    gated_experts,
    gated_experts_matrix_vector,
    input_scaled_experts,
    input_scaled_experts_matrix_vector,
    routing_gates,
)
from symuat.layers.rotary_interleaved import interleaved_rotary_operator, rotate_every_two_apply

Matrix = sympy.ImmutableMatrix


def _experts(n, M=2, F=2):
    return [GatedFFN(symbolic_matrix(f"G{e}", M, F), symbolic_matrix(f"U{e}", M, F), symbolic_matrix(f"D{e}", F, M))
            for e in range(n)]


def test_dispatch_equals_the_dense_gated_form():
    H, P = symbolic_matrix("h", 3, 2), symbolic_matrix("p", 3, 3)
    choice = ((0, 2), (1, 0), (2, 1))
    experts = _experts(3)
    G = routing_gates(P, choice, renormalise=True, scale=sympy.Symbol("s"))
    W = Matrix(3, 2, lambda n, k: G[n, choice[n][k]])
    lhs = dispatch(H, experts, choice, W, SIGMA)
    rhs = gated_experts(H, lambda e: G[:, e], lambda e: experts[e], 3, SIGMA)
    assert sympy.expand(lhs - rhs) == sympy.zeros(3, 2)
    mv = gated_experts_matrix_vector(vec_r(H), 3, 2, lambda e: G[:, e], lambda e: experts[e], 3, SIGMA)
    assert sympy.expand(vec_r(lhs) - mv) == sympy.zeros(6, 1)


def test_routing_gates_renormalised_and_raw():
    P = Matrix([[sympy.Symbol("a"), sympy.Symbol("b"), sympy.Symbol("c")]])
    a, b, c = P
    assert routing_gates(P, ((2, 0),), True) == Matrix([[a / (a + c), 0, c / (a + c)]])
    assert routing_gates(P, ((2, 0),), False, 3) == Matrix([[3 * a, 0, 3 * c]])


def test_an_unchosen_expert_is_never_read():
    H, W = symbolic_matrix("h", 2, 2), symbolic_matrix("w", 2, 1)
    experts = _experts(3)
    other = experts[:2] + [GatedFFN(*(symbolic_matrix(f"Z{k}", *s) for k, s in enumerate(((2, 2), (2, 2), (2, 2)))))]
    assert dispatch(H, experts, ((0,), (1,)), W, SIGMA) == dispatch(H, other, ((0,), (1,)), W, SIGMA)


@pytest.mark.parametrize("choice, message", [
    ((), "k >= 1"), (((0, 1), (0,)), "k >= 1"), (((0, 0),), "distinct"), (((3,),), "0..2"), (((-1,),), "0..2"),
])
def test_bad_choices_are_refused(choice, message):
    with pytest.raises(ShapeError, match=message):
        check_choice(choice, 3)


def test_dispatch_refuses_mismatched_weights():
    H = symbolic_matrix("h", 2, 2)
    with pytest.raises(ShapeError, match="do not fit"):
        dispatch(H, _experts(2), ((0,), (1,)), symbolic_matrix("w", 2, 2), SIGMA)
    with pytest.raises(ShapeError, match="covers 1 tokens"):
        routing_gates(symbolic_matrix("p", 2, 2), ((0,),), True)


def test_sliding_window_mask():
    allowed = sliding_window_mask(5, 2, padded_left=1)
    grid = [[int(allowed(n, m)) for m in range(5)] for n in range(5)]
    assert grid == [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 1, 1, 0], [0, 0, 0, 1, 1]]
    with pytest.raises(ShapeError):
        sliding_window_mask(3, 0)
    with pytest.raises(ShapeError):
        sliding_window_mask(3, 2, padded_left=3)


def test_alibi_softcap_and_masked_weights():
    m = sympy.Symbol("m")
    assert alibi_bias(3, m, 1) == Matrix([[0, 0, m]] * 3)
    c, s = sympy.symbols("c s")
    assert softcap(Matrix([[s]]), c, sympy.tanh) == Matrix([[c * sympy.tanh(s / c)]])
    z = Matrix([1, 2])
    assert masked_weights(Matrix([[1, 2], [3, 4]]), lambda n, k: k <= n, z, sympy.exp) == \
        Matrix([[sympy.E, 0], [2 * sympy.exp(3), 2 * sympy.exp(4)]])
    with pytest.raises(ShapeError):
        alibi_bias(2, m, 2)


def test_interleaved_rotary_partial():
    Q = symbolic_matrix("q", 2, 3)
    c, s = symbolic_matrix("c", 2, 1), symbolic_matrix("s", 2, 1)
    assert vec_r(rotate_every_two_apply(Q, c, s)) == interleaved_rotary_operator(c, s, 3) * vec_r(Q)
    assert rotate_every_two_apply(Q, c, s)[:, 2] == Q[:, 2]
    with pytest.raises(ShapeError, match="exceeds"):
        interleaved_rotary_operator(symbolic_matrix("c", 1, 2), symbolic_matrix("s", 1, 2), 3)
    with pytest.raises(ShapeError, match="same shape"):
        rotate_every_two_apply(Q, c, symbolic_matrix("s", 1, 1))


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_dispatch_is_the_gate_form_for_random_shapes_and_choices(data):
    N, M, F, E = (data.draw(st.integers(1, n)) for n in (4, 2, 2, 4))
    k = data.draw(st.integers(1, E))
    choice = tuple(tuple(data.draw(st.permutations(range(E)))[:k]) for _ in range(N))
    ints = st.integers(-3, 3)

    def mat(r, c):
        return Matrix(r, c, lambda *_: data.draw(ints))
    experts = [GatedFFN(mat(M, F), mat(M, F), mat(F, M), b_d=mat(M, 1)) for _ in range(E)]
    H, P = mat(N, M), Matrix(N, E, lambda *_: data.draw(st.integers(1, 5)))
    renormalise = data.draw(st.booleans())
    G = routing_gates(P, choice, renormalise, 2)
    W = Matrix(N, k, lambda n, j: G[n, choice[n][j]])
    lhs = vec_r(dispatch(H, experts, choice, W, SIGMA))
    rhs = gated_experts_matrix_vector(vec_r(H), N, M, lambda e: G[:, e], lambda e: experts[e], E, SIGMA)
    assert sympy.expand(lhs - rhs) == sympy.zeros(N * M, 1)


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_input_scaled_experts_are_their_matrix_vector_form(data):
    """Llama 4: each expert on its tokens' scaled rows = the gate form with D_in on the gate branch, for random
    shapes and integer gates (zero ones included: an unchosen expert's zero row gives zero)."""
    N, M, F, E = (data.draw(st.integers(1, n)) for n in (3, 2, 2, 3))
    ints = st.integers(-3, 3)

    def mat(r, c):
        return Matrix(r, c, lambda *_: data.draw(ints))
    experts = [GatedFFN(mat(M, F), mat(M, F), mat(F, M)) for _ in range(E)]
    H, G = mat(N, M), mat(N, E)
    lhs = vec_r(input_scaled_experts(H, lambda e: G[:, e], lambda e: experts[e], E, SIGMA))
    rhs = input_scaled_experts_matrix_vector(vec_r(H), N, M, lambda e: G[:, e], lambda e: experts[e], E, SIGMA)
    assert sympy.expand(lhs - rhs) == sympy.zeros(N * M, 1)
    zero = input_scaled_experts(H, lambda e: sympy.zeros(N, 1), lambda e: experts[e], E, SIGMA)
    assert zero == sympy.zeros(N, M)
