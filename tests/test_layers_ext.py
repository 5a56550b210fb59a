"""Error paths and small facts of the symbolic layers beyond the paper (RMSNorm, gated FFN, rotary, GQA, masks)."""

from __future__ import annotations

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.algebra.matrices import symbolic_matrix
from symuat.errors import ShapeError
from symuat.layers.gated_ffn import GatedFFN
from symuat.layers.grouped_attention import (
    causal_padding_mask,
    grouped_closed_form,
    kv_group,
    masked_row_stochastic_matrix,
)
from symuat.layers.rmsnorm import RMSNorm, inverse_rms
from symuat.layers.rotary import rotary_operator, rotate_half_apply


def test_rmsnorm_errors():
    with pytest.raises(ShapeError, match="gain has shape"):
        RMSNorm(symbolic_matrix("g", 1, 2))
    norm = RMSNorm(symbolic_matrix("g", 2, 1))
    with pytest.raises(ShapeError, match="X has 3 columns"):
        norm.apply(symbolic_matrix("x", 1, 3), symbolic_matrix("r", 1, 1))
    with pytest.raises(ShapeError, match="one inverse RMS per token"):
        norm.apply(symbolic_matrix("x", 2, 2), symbolic_matrix("r", 1, 1))
    with pytest.raises(ShapeError, match="expected \\(N, 1\\)"):
        norm.matrix_vector_form(symbolic_matrix("r", 1, 2))


def test_rmsnorm_with_true_inverse_rms_has_unit_rms():
    X = sympy.Matrix([[1, 2, 2]])
    Y = RMSNorm(sympy.Matrix([1, 1, 1])).apply(X, inverse_rms(X, 0))
    assert sympy.simplify(sum(v**2 for v in Y) / 3) == 1


def test_gated_ffn_errors():
    W = symbolic_matrix("w", 2, 3)
    with pytest.raises(ShapeError, match="W_g"):
        GatedFFN(W, W, W)
    with pytest.raises(ShapeError, match="b_u has shape"):
        GatedFFN(W, W, W.T, b_u=symbolic_matrix("b", 2, 1))


def test_rotary_errors_and_rotation():
    c, s = symbolic_matrix("c", 1, 2), symbolic_matrix("s", 1, 2)
    with pytest.raises(ShapeError, match="exceeds the head width"):
        rotate_half_apply(symbolic_matrix("q", 1, 3), c, s)
    with pytest.raises(ShapeError, match="same shape"):
        rotary_operator(c, symbolic_matrix("s", 1, 1), 4)
    theta = sympy.Symbol("theta")
    R = rotary_operator(sympy.Matrix([[sympy.cos(theta)]]), sympy.Matrix([[sympy.sin(theta)]]), 3)
    assert sympy.simplify(R * R.T) == sympy.eye(3)  # a rotation (orthogonal) once c^2 + s^2 = 1


def test_grouping_and_masks():
    assert [kv_group(h, 6, 3) for h in range(6)] == [0, 0, 1, 1, 2, 2]
    assert [kv_group(h, 4, 1) for h in range(4)] == [0, 0, 0, 0]
    with pytest.raises(ShapeError, match="must be positive and divide"):
        kv_group(0, 4, 3)
    with pytest.raises(ShapeError, match="do not fit"):
        grouped_closed_form((sympy.eye(1),) * 2, symbolic_matrix("v", 1, 3), symbolic_matrix("o", 2, 1), 1)
    with pytest.raises(ShapeError, match="at least one real token"):
        causal_padding_mask(2, 2)
    with pytest.raises(ShapeError, match="fully masked row"):
        masked_row_stochastic_matrix("h", 2, lambda n, m: n == 0)
    H = masked_row_stochastic_matrix("h", 3, causal_padding_mask(3, 1))
    assert H[:, 2] == sympy.zeros(3, 1)
    assert all(sympy.expand(sum(H[n, :])) == 1 for n in range(3))


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 8), st.integers(1, 8))
def test_kv_groups_are_consecutive_and_equal_sized(groups, per_group):
    heads = groups * per_group
    assign = [kv_group(h, heads, groups) for h in range(heads)]
    assert assign == sorted(assign)
    assert [assign.count(g) for g in range(groups)] == [per_group] * groups
