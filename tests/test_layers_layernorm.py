"""symuat.layers.layernorm: W' = (D ⊗ diag γ)(I_N ⊗ C_M), b' = 1_N ⊗ β (SPEC §3)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

from symuat import Identity, LayerNorm, Level, ShapeError, check_identity, dims_grid, vec_r
from symuat.layers.layernorm import centring_matrix, inverse_std
from symuat.numeric.layernorm import layer_norm


def _shapes(d):
    return {"X": (d["N"], d["M"]), "g": (d["M"], 1), "b": (d["M"], 1), "d": (d["N"], 1)}


def test_matrix_vector_form_is_proved():
    identity = Identity(
        shapes=_shapes,
        lhs=lambda e, d: vec_r(LayerNorm(e["g"], e["b"]).apply(e["X"], e["d"])),
        rhs=lambda e, d: LayerNorm(e["g"], e["b"]).matrix_vector_form(e["d"]).apply(vec_r(e["X"])),
        dims=dims_grid(N=(1, 2), M=(1, 2, 3)), random_dims={"N": 3, "M": 4},
        levels=(Level.SYMBOLIC, Level.EXACT))
    verdict = check_identity(identity)
    assert verdict.holds and set(verdict.levels) == {Level.ALL_SIZES, Level.SYMBOLIC, Level.EXACT}  # every N, M


def test_float_against_numeric_layer_norm():
    rng = np.random.default_rng(3)
    N, M, eps = 3, 5, 1e-5
    X, g, b = rng.standard_normal((N, M)), rng.standard_normal(M), rng.standard_normal(M)
    Xs = sympy.ImmutableMatrix(X)
    d = inverse_std(Xs, sympy.Float(eps))
    form = LayerNorm(sympy.ImmutableMatrix(g), sympy.ImmutableMatrix(b)).matrix_vector_form(d)
    got = np.array(form.apply(vec_r(Xs)), dtype=float).reshape(-1)
    np.testing.assert_allclose(got, layer_norm(X, g, b, eps).reshape(-1), rtol=1e-10, atol=1e-12)


def test_centring_matrix_is_idempotent():
    C = centring_matrix(3)
    assert C * C == C


def test_errors():
    g = sympy.ImmutableMatrix([1, 2])
    with pytest.raises(ShapeError, match=r"gamma \(2, 1\) and beta \(3, 1\)"):
        LayerNorm(g, sympy.ImmutableMatrix([1, 2, 3]))
    ln = LayerNorm(g, g)
    with pytest.raises(ShapeError, match=r"X has 3 columns, gamma has M=2"):
        ln.apply(sympy.ImmutableMatrix.zeros(1, 3), sympy.ImmutableMatrix([1]))
    with pytest.raises(ShapeError, match=r"d has shape \(2, 1\), expected \(1, 1\)"):
        ln.apply(sympy.ImmutableMatrix.zeros(1, 2), sympy.ImmutableMatrix([1, 1]))
    with pytest.raises(ShapeError, match="M=0 must be a positive integer"):
        centring_matrix(0)
