"""The path expansion of attention-only stacks (symuat.expansion.paths, derivations/path_expansion.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import sympy
import symuat_paper.path_expansion as dp
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat import check_identity
from symuat.errors import InvalidValueError, ShapeError, UnsupportedError
from symuat.evidence.verdict import Level
from symuat.expansion import (
    KRON_SEPARATOR,
    Path,
    PathTerm,
    attention_symbol,
    count_paths,
    encode_kron,
    kron_multiply,
    layer_factor,
    ov_symbol,
    path_expansion,
    virtual_heads,
)
from symuat.numeric.paths import apply_paths, path_contributions

SETTINGS = settings(max_examples=25, deadline=None)
heads_lists = st.integers(1, 3).flatmap(lambda L: st.lists(st.integers(1, 2), min_size=L, max_size=L))


# ---------------------------------------------------------------- structure

@SETTINGS
@given(heads_lists)
def test_terms_are_exactly_the_enumerated_paths(heads):
    L = len(heads)
    terms = path_expansion(L, heads)
    assert len(terms) == count_paths(L, heads) == int(np.prod([1 + h for h in heads]))
    assert sorted(map(str, (t.path for t in terms))) == sorted(map(str, virtual_heads(L, heads)))
    assert len({t.path for t in terms}) == len(terms)
    for t in terms:  # the recursion builds the same products as the direct definition
        assert t.pair == t.path.products()


def test_uniform_count_is_one_plus_h_to_the_L():
    assert [count_paths(L, 2) for L in (1, 2, 3)] == [3, 9, 27]
    assert len(virtual_heads(3, 2)) == 27


@SETTINGS
@given(heads_lists)
def test_product_of_layer_factors_is_the_path_sum(heads):
    r"""F_L ⋯ F_1 multiplied out by the mixed-product rule equals Σ over paths (symbolic, any size)."""
    pairs = ((sympy.S.One, sympy.S.One),)
    for layer, h in enumerate(heads, start=1):
        pairs = kron_multiply(layer_factor(layer, h), pairs)
    expected = encode_kron([t.pair for t in path_expansion(len(heads), heads)])
    assert sympy.expand(encode_kron(pairs) - expected) == 0


def test_encoding_is_order_sensitive():
    A, B = attention_symbol(1, 1), ov_symbol(1, 1)
    assert encode_kron([(A, B)]) == A * KRON_SEPARATOR * B
    assert sympy.expand(encode_kron([(A, B)]) - encode_kron([(B, A)])) != 0


def test_path_validation_errors():
    with pytest.raises(InvalidValueError, match="strictly increasing"):
        Path((2, 1), (1, 1))
    with pytest.raises(ShapeError, match="one head per layer"):
        Path((1, 2), (1,))
    with pytest.raises(InvalidValueError, match="must be a positive integer"):
        Path((0,), (1,))
    with pytest.raises(InvalidValueError, match="PathTerm.path must be a Path"):
        PathTerm("1.1", 1, 1)
    with pytest.raises(InvalidValueError, match="heads_per_layer"):
        path_expansion(2, [1])
    with pytest.raises(InvalidValueError, match="depth"):
        path_expansion(0, 1)


def test_latex_of_a_term():
    t = path_expansion(2, 1)[-1]
    assert sympy.latex(t) == (r"\left(H^{(2)}_{1} H^{(1)}_{1}\right)\otimes"
                              r"\left(W_{OV}^{(2)}_{1} W_{OV}^{(1)}_{1}\right)")
    assert str(t.path) == "1.1 → 2.1"


# ---------------------------------------------------------------- numeric, arbitrary matrices

def _random_bindings(rng, heads, N, M):
    b = {}
    for l, h in enumerate(heads, start=1):
        for k in range(1, h + 1):
            b[attention_symbol(l, k).name] = rng.standard_normal((N, N))
            b[ov_symbol(l, k).name] = rng.standard_normal((M, M))
    return b


def _direct(b, heads, X):
    for l, h in enumerate(heads, start=1):
        X = X + sum(b[attention_symbol(l, k).name] @ X @ b[ov_symbol(l, k).name].T for k in range(1, h + 1))
    return X.reshape(-1)


def _corrupt(terms, index, how):
    t = terms[index]
    if how == "drop":
        return terms[:index] + terms[index + 1:]
    if how == "double":
        return terms[:index] + (dataclasses.replace(t, attention_product=2 * t.attention_product),) + terms[index + 1:]
    # "swap": exchange the Kronecker factors' roles is impossible for N != M; reverse the OV product instead
    rev = sympy.Mul(*reversed(sympy.Mul.make_args(t.ov_product)))
    return terms[:index] + (dataclasses.replace(t, ov_product=rev),) + terms[index + 1:]


@SETTINGS
@given(heads_lists, st.integers(1, 3), st.integers(1, 3), st.integers(0, 2**32 - 1),
       st.sampled_from(["drop", "double", "swap"]), st.data())
def test_apply_paths_matches_the_direct_recursion_and_corruption_fails(heads, N, M, seed, how, data):
    rng = np.random.default_rng(seed)
    b = _random_bindings(rng, heads, N, M)
    X = rng.standard_normal((N, M))
    terms = path_expansion(len(heads), heads)
    want = _direct(b, heads, X)
    parts = path_contributions(terms, b, X.reshape(-1))
    tol = 1e-12 * max(1.0, sum(float(np.max(np.abs(p))) for p in parts))
    assert np.max(np.abs(apply_paths(terms, b, X.reshape(-1)) - want)) <= tol
    candidates = [i for i, t in enumerate(terms) if how != "swap" or (t.path.order >= 2 and M >= 2)]
    if not candidates:
        return
    index = data.draw(st.sampled_from(candidates))
    bad = apply_paths(_corrupt(terms, index, how), b, X.reshape(-1))
    assert np.max(np.abs(bad - want)) > tol


def test_apply_paths_never_needs_a_dense_operator_and_matches_one():
    rng = np.random.default_rng(3)
    heads, N, M = [2, 1], 3, 2
    b = _random_bindings(rng, heads, N, M)
    x = rng.standard_normal(N * M)
    dense = np.eye(N * M)
    for l, h in enumerate(heads, start=1):
        F = np.eye(N * M) + sum(np.kron(b[attention_symbol(l, k).name], b[ov_symbol(l, k).name])
                                for k in range(1, h + 1))
        dense = F @ dense
    assert np.allclose(apply_paths(path_expansion(2, heads), b, x), dense @ x, rtol=0, atol=1e-12)


def test_apply_paths_errors():
    terms = path_expansion(1, 1)
    with pytest.raises(InvalidValueError, match="no matrix bound"):
        apply_paths(terms, {}, np.ones(4))
    with pytest.raises(InvalidValueError, match="finite 1-D"):
        apply_paths(terms, {}, np.ones((2, 2)))
    with pytest.raises(InvalidValueError, match="at least one"):
        apply_paths((), {}, np.ones(4))
    bad = (PathTerm(Path(), sympy.Symbol("z") + 1, 1),)
    with pytest.raises(UnsupportedError, match="cannot apply"):
        apply_paths(bad, {}, np.ones(4))
    assert np.array_equal(apply_paths(terms[:1], {}, np.arange(3.0)), np.arange(3.0))


# ---------------------------------------------------------------- real softmax attention

@SETTINGS
@given(st.integers(1, 3), st.sampled_from([(1, 2), (2, 2), (1, 3), (2, 4)]), st.integers(1, 4),
       st.booleans(), st.integers(0, 10_000))
def test_real_attention_paths_equal_direct_forward_and_duat(depth, hm, N, causal, seed):
    heads, M = hm
    r = dp.numeric_check(seed, depth=depth, N=N, M=M, heads=heads, causal=causal)
    assert r["n_terms"] == (1 + heads) ** depth
    assert r["paths_error"] <= r["tolerance"]
    assert r["duat_error"] <= r["tolerance"]
    assert r["duat_rest"] == 0.0
    if causal:
        assert r["lower_triangular"]


@pytest.mark.parametrize("causal", [False, True])
def test_real_attention_corrupted_term_is_caught(causal):
    terms = path_expansion(3, 2)
    for index in (0, 5, len(terms) - 1):
        r = dp.numeric_check(1, causal=causal, terms=_corrupt(terms, index, "drop"))
        assert r["paths_error"] > r["tolerance"]


# ---------------------------------------------------------------- the ledger identities detect slips

def test_induction_fails_with_a_wrong_extension(monkeypatch):
    def wrong(pair, layer, heads):  # new layer multiplied on the right of the OV product
        return (pair,) + tuple((attention_symbol(layer, h) * pair[0], pair[1] * ov_symbol(layer, h))
                               for h in range(1, heads + 1))
    monkeypatch.setattr(dp, "extension_pairs", wrong)
    verdict = check_identity(dp.induction(), levels=[Level.SYMBOLIC])
    assert not verdict.holds
    assert verdict.counterexample["case"] == ("step", 1)


def test_explicit_stack_identity_fails_when_a_path_is_dropped(monkeypatch):
    real = dp.path_expansion
    monkeypatch.setattr(dp, "path_expansion", lambda L, h: real(L, h)[:-1])
    verdict = check_identity(dp.residual_stack(depths=(1,)), levels=[Level.SYMBOLIC])
    assert not verdict.holds
    assert verdict.counterexample["dims"] == {"L": 1, "h": 1, "N": 1, "M": 1}


def test_all_path_entries_hold():
    from symuat import audit_entry
    for e in dp.entries():
        assert audit_entry(e).computed is e.status, e.id
