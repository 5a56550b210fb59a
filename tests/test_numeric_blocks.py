"""The generalised block model: norms, rotary, GQA, q/k norms, masks, gated FFNs and every residual layout."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from symuat.errors import InvalidValueError, ShapeError
from symuat.numeric import (
    LAYOUTS,
    AttentionWeights,
    GatedFFNWeights,
    LayerNormWeights,
    RMSNormWeights,
    Rotary,
    apply_rotary,
    forward,
    hidden_states,
    multi_head_attention,
    random_stack,
    residual_params,
    rms_norm,
    vec_r,
)
from symuat.numeric.residual_params import apply_residual


def rel(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


def test_rms_norm_by_hand():
    X = np.array([[3.0, 4.0], [1.0, -1.0]])
    n = RMSNormWeights(np.array([0.5, 2.0]), eps=0.0 + 1e-12, offset=1.0)
    want = np.array([[3 / np.sqrt(12.5) * 1.5, 4 / np.sqrt(12.5) * 3.0], [1.5, -3.0]])
    assert np.allclose(rms_norm(X, n), want, rtol=1e-10)


def test_rotary_styles_agree_up_to_a_permutation_and_are_relative():
    rng = np.random.default_rng(0)
    N, d, r = 5, 6, 4
    Z = rng.standard_normal((N, d))
    half, inter = Rotary(r, style="half"), Rotary(r, style="interleaved")
    perm = [0, 2, 1, 3, 4, 5]  # interleaved pairs (0,1),(2,3) <-> half pairs (0,2),(1,3)
    assert np.allclose(apply_rotary(Z[:, perm], half)[:, perm], apply_rotary(Z, inter))
    # rotations keep norms, leave the non-rotary coordinates alone
    R = apply_rotary(Z, half)
    assert np.allclose(np.linalg.norm(R[:, :r], axis=1), np.linalg.norm(Z[:, :r], axis=1))
    assert np.array_equal(R[:, r:], Z[:, r:])
    # <rot_m q, rot_n k> depends on m - n only
    q, k = rng.standard_normal(d), rng.standard_normal(d)
    Q, K = apply_rotary(np.tile(q, (N, 1)), half), apply_rotary(np.tile(k, (N, 1)), half)
    assert np.isclose(Q[3] @ K[1], Q[4] @ K[2]) and np.isclose(Q[2] @ K[2], q @ k)


def test_gqa_equals_mha_with_repeated_kv_weights():
    rng = np.random.default_rng(1)
    M, H, G, d = 8, 4, 2, 2
    Wq, Wk, Wv, Wo = (rng.standard_normal(s) for s in ((M, H * d), (M, G * d), (M, G * d), (H * d, M)))
    gqa = AttentionWeights(Wq, Wk, Wv, Wo, n_heads=H, n_kv_heads=G)
    rep = np.concatenate([Wk[:, (h * G // H) * d:(h * G // H + 1) * d] for h in range(H)], axis=1)
    repv = np.concatenate([Wv[:, (h * G // H) * d:(h * G // H + 1) * d] for h in range(H)], axis=1)
    mha = AttentionWeights(Wq, rep, repv, Wo, n_heads=H)
    X = rng.standard_normal((5, M))
    assert np.allclose(multi_head_attention(X, gqa), multi_head_attention(X, mha), rtol=1e-13, atol=1e-13)


def test_padding_mask_equals_dropping_the_padded_keys():
    rng = np.random.default_rng(2)
    stack = random_stack(rng, 1, 6, 2, 4, kind="pre_ln", causal=False)
    attn = stack.blocks[0].attention
    X = rng.standard_normal((5, 6))
    mask = np.array([1, 1, 0, 1, 0])
    Y = multi_head_attention(X, attn, attention_mask=mask)
    keep = mask.astype(bool)
    # the kept tokens see only each other: same as running attention on the kept rows alone (no mask)
    assert np.allclose(Y[keep], multi_head_attention(X[keep], attn), rtol=1e-12, atol=1e-12)


COMBOS = list(itertools.product(LAYOUTS, ("layer", "rms"), (False, True), (None, "half", "interleaved"),
                                (None, 1), (False, True)))


@pytest.mark.parametrize("kind,norm,gated,rot,kv,masked", COMBOS)
def test_eq20_params_reproduce_the_direct_forward_pass(kind, norm, gated, rot, kv, masked):
    rng = np.random.default_rng(abs(hash((kind, norm, gated, rot, kv, masked))) % 2**32)
    stack = random_stack(rng, 2, 8, 2, 6, kind=kind, activation="silu" if gated else "gelu_tanh", causal=masked,
                         norm=norm, gated=gated, n_kv_heads=kv, rotary_dim=None if rot is None else 2,
                         rotary_style=rot or "half", qk_norm="head" if masked else None,
                         position_embeddings=masked, input_scale=1.5 if gated else None,
                         input_norm=(norm == "layer"), final_norm=True)
    X = rng.standard_normal((4, 8))
    mask = np.array([1, 0, 1, 1]) if masked else None
    xs = forward(stack, X, mask)
    x = vec_r(xs[0])
    for i, p in enumerate(residual_params(stack, X, mask)):
        x = apply_residual(p, x)
        assert rel(x, vec_r(xs[i + 1])) <= 1e-12
    assert hidden_states(stack, X, mask)[-1].shape == X.shape


def test_bad_block_inputs():
    W = np.ones((6, 6))
    with pytest.raises(ShapeError, match="n_heads=4 must divide the width M=6"):
        AttentionWeights(W, W, W, W, n_heads=4)
    with pytest.raises(ShapeError, match="n_kv_heads=2 must divide n_heads=3"):
        AttentionWeights(W, np.ones((6, 4)), np.ones((6, 4)), W, n_heads=3, n_kv_heads=2)
    with pytest.raises(ShapeError, match="rotary dim must be even"):
        Rotary(3)
    with pytest.raises(ShapeError, match="rotary dim 4 exceeds head_dim 2"):
        AttentionWeights(W, W, W, W, n_heads=3, rotary=Rotary(4))
    with pytest.raises(InvalidValueError, match="W_up must be finite"):
        GatedFFNWeights(np.ones((6, 3)), np.full((6, 3), np.nan), np.ones((3, 6)))
    with pytest.raises(InvalidValueError, match="activation must be one of"):
        GatedFFNWeights(np.ones((6, 3)), np.ones((6, 3)), np.ones((3, 6)), activation="swish")
    with pytest.raises(ShapeError, match="q_norm has width 4"):
        AttentionWeights(W, W, W, W, n_heads=3, q_norm=RMSNormWeights(np.ones(4)))
    stack = random_stack(np.random.default_rng(0), 1, 6, 2, 4, causal=True)
    with pytest.raises(ShapeError, match="input width must be the stack's width"):
        forward(stack, np.ones((3, 5)))
    with pytest.raises(InvalidValueError, match=r"rows \[0\] are fully masked"):
        forward(stack, np.ones((3, 6)), attention_mask=[0, 1, 1])
    with pytest.raises(InvalidValueError, match="only 0 and 1"):
        forward(stack, np.ones((3, 6)), attention_mask=[2, 1, 1])
    with pytest.raises(InvalidValueError, match="beta must be finite"):
        LayerNormWeights(np.ones(3), np.array([0, np.nan, 0]))


def test_attention_overflow_names_layer_and_head():
    stack = random_stack(np.random.default_rng(0), 2, 4, 2, 4, kind="standard")
    with pytest.raises(InvalidValueError, match="attention in layer 1 head 0: .* overflow"):
        forward(stack, np.full((2, 4), 1e160))
