"""Transformer stacks: direct forward pass vs the Eq. 20 operator form, and validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from symuat.errors import InvalidValueError, ShapeError
from symuat.numeric import (
    ACTIVATIONS,
    DYNAMIC,
    KINDS,
    BlockWeights,
    FFNWeights,
    TransformerStack,
    activation_function,
    apply_residual,
    forward,
    layer_residual_params,
    random_stack,
    residual_params,
    vec_r,
)
from symuat.numeric.layernorm import LayerNormWeights


def rel(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("kind", KINDS)
def test_eq20_matches_direct_forward(kind, activation, causal):
    rng = np.random.default_rng([KINDS.index(kind), ACTIVATIONS.index(activation), int(causal)])
    stack = random_stack(rng, 3, 6, 2, 10, kind=kind, activation=activation, causal=causal)
    X0 = rng.standard_normal((4, 6))
    xs = forward(stack, X0)
    assert len(xs) == 4 and np.array_equal(xs[0], X0)
    # layer by layer, at the actual input of each layer
    for i, block in enumerate(stack.blocks):
        p = layer_residual_params(block, kind, activation, xs[i])
        assert p.dynamic == DYNAMIC[kind]
        y = apply_residual(p, vec_r(xs[i]), activation)
        # the Eq. 20 expression written out explicitly
        sigma = activation_function(activation)
        x = vec_r(xs[i])
        y2 = p.W1.matvec(x) + p.b3 + p.W3.matvec(sigma(p.W2.matvec(x) + p.b2))
        assert rel(y, vec_r(xs[i + 1])) <= 1e-10
        assert np.array_equal(y, y2)
    # whole trajectory along the operator path only
    X = X0
    for i, p in enumerate(residual_params(stack, X0)):
        X = apply_residual(p, vec_r(X), activation).reshape(X0.shape)
        assert rel(X, xs[i + 1]) <= 1e-10


@pytest.mark.parametrize("kind", KINDS)
def test_residual_params_dense_forms(kind):
    """Small case: compare the operators with independently assembled dense matrices."""
    rng = np.random.default_rng(7)
    N, M, F = 3, 4, 5
    stack = random_stack(rng, 1, M, 2, F, kind=kind, activation="gelu")
    b = stack.blocks[0]
    X = rng.standard_normal((N, M))
    p = layer_residual_params(b, kind, "gelu", X)
    F1 = np.kron(np.eye(N), b.ffn.W1.T)
    F2 = np.kron(np.eye(N), b.ffn.W2.T)
    assert p.W2.shape == (N * F, N * M) and p.W3.shape == (N * M, N * F)
    if kind in ("paper", "standard", "pre_ln"):
        assert np.allclose(p.W3.to_dense(), F2)
    if kind == "paper":
        assert np.allclose(p.W2.to_dense(), F1 @ p.W1.to_dense())  # Eq. 30 -> 31 merge
    if kind == "standard":
        from symuat.numeric import mha_operator

        A, a = mha_operator(X, b.attention)
        assert np.allclose(p.W1.to_dense(), np.eye(N * M) + A.to_dense())
        assert np.allclose(p.b3, a + np.tile(b.ffn.b2, N))


def test_gelu_and_sigmoid_values():
    g = activation_function("gelu")
    xs = np.array([-3.0, -0.5, 0.0, 0.7, 4.0])
    ref = [x * 0.5 * (1 + math.erf(x / math.sqrt(2))) for x in xs]
    assert np.allclose(g(xs), ref, rtol=1e-15, atol=0)
    s = activation_function("sigmoid")
    assert np.allclose(s(np.array([-800.0, 0.0, 800.0])), [0.0, 0.5, 1.0])
    assert np.allclose(s(xs), 1 / (1 + np.exp(-xs)), rtol=1e-14)
    gt = activation_function("gelu_tanh")
    assert np.max(np.abs(gt(xs) - g(xs))) < 1e-3
    assert np.array_equal(activation_function("relu")(xs), np.maximum(xs, 0))


def _block(M=4, F=3, h=2, ln=False):
    from symuat.numeric import AttentionWeights

    W = np.eye(M)
    lnw = LayerNormWeights(np.ones(M), np.zeros(M)) if ln else None
    return BlockWeights(AttentionWeights(W, W, W, W, n_heads=h),
                        FFNWeights(np.ones((M, F)), np.zeros(F), np.ones((F, M)), np.zeros(M)), lnw, lnw)


def test_stack_validation():
    with pytest.raises(InvalidValueError, match="activation must be one of"):
        activation_function("tanh")
    with pytest.raises(InvalidValueError, match="kind must be one of"):
        TransformerStack((_block(),), kind="encoder")
    with pytest.raises(InvalidValueError, match="activation must be one of .* got 'swish'"):
        TransformerStack((_block(),), activation="swish")
    with pytest.raises(InvalidValueError, match="at least one"):
        TransformerStack(())
    with pytest.raises(InvalidValueError, match=r"needs blocks\[0\].ln1"):
        TransformerStack((_block(),), kind="pre_ln")
    with pytest.raises(InvalidValueError, match="uses no LayerNorm"):
        TransformerStack((_block(ln=True),), kind="paper")
    with pytest.raises(ShapeError, match=r"blocks\[1\] has width 6, expected 4"):
        TransformerStack((_block(), _block(M=6)))
    with pytest.raises(InvalidValueError, match=r"blocks\[0\] must be a BlockWeights"):
        TransformerStack(("x",))
    with pytest.raises(ShapeError, match=r"W2 must have shape \(3, 4\), got \(3, 5\)"):
        FFNWeights(np.ones((4, 3)), np.zeros(3), np.ones((3, 5)), np.zeros(4))
    with pytest.raises(ShapeError, match=r"b1 must have shape \(3,\), got \(4,\)"):
        FFNWeights(np.ones((4, 3)), np.zeros(4), np.ones((3, 4)), np.zeros(4))
    with pytest.raises(InvalidValueError, match="W1 must be finite"):
        FFNWeights(np.full((4, 3), np.nan), np.zeros(3), np.ones((3, 4)), np.zeros(4))
    blk = _block()
    with pytest.raises(ShapeError, match="ffn width 5"):
        BlockWeights(blk.attention, FFNWeights(np.ones((5, 3)), np.zeros(3), np.ones((3, 5)), np.zeros(5)))
    with pytest.raises(ShapeError, match="ln1.gamma has length 3"):
        BlockWeights(blk.attention, blk.ffn, LayerNormWeights(np.ones(3), np.zeros(3)))
    st = TransformerStack((blk,))
    with pytest.raises(ShapeError, match=r"X must have shape \(\*, 4\), got \(2, 3\)"):
        forward(st, np.ones((2, 3)))
    with pytest.raises(InvalidValueError, match="X must be finite"):
        forward(st, np.array([[1, 2, 3, np.inf]]))
    with pytest.raises(InvalidValueError, match="stack must be a TransformerStack"):
        forward([blk], np.ones((2, 4)))
    with pytest.raises(ShapeError, match=r"x must have shape \(8,\), got \(7,\)"):
        apply_residual(layer_residual_params(blk, "paper", "relu", np.ones((2, 4))), np.ones(7), "relu")


def test_random_stack_validation():
    rng = np.random.default_rng(0)
    with pytest.raises(ShapeError, match="n_heads=3 must divide width=4"):
        random_stack(rng, 1, 4, 3, 2)
    with pytest.raises(ShapeError, match="n_layers=.* must be a positive integer"):
        random_stack(rng, 0, 4, 2, 2)
    with pytest.raises(InvalidValueError, match="rng must be a numpy.random.Generator"):
        random_stack(0, 1, 4, 2, 2)
    with pytest.raises(InvalidValueError, match="scale must be"):
        random_stack(rng, 1, 4, 2, 2, scale="x")
    s = random_stack(rng, 2, 4, 2, 3, kind="post_ln", activation="sigmoid", causal=True, scale="paper")
    assert s.depth == 2 and s.width == 4 and s.blocks[0].attention.causal
