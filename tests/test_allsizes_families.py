"""All-sizes rules of the family combinators: Σ over a family index, member blocks, diag."""

from __future__ import annotations

import pytest

from symuat import Identity, dims_grid
from symuat.algebra.families import col_block, diag_vector, family_sum, row_block
from symuat.algebra.matrices import elementwise, ones
from symuat.allsizes import decide
from symuat.evidence.fields import SIGMA
from symuat.evidence.identity import check_identity
from symuat.evidence.verdict import Level

_FFN = {"W1": ("N", "n"), "b1": ("N", 1), "W2": (1, "N"), "x": ("n", 1)}


def _neuron_sum(W1, b1, W2, x, N):
    return family_sum(lambda j: col_block(W2, j, 1) * elementwise(SIGMA, row_block(W1, j, 1) * x
                                                                   + row_block(b1, j, 1)), N)


def _identity(shapes, lhs, rhs, **grid) -> Identity:
    return Identity(shapes=shapes, lhs=lhs, rhs=rhs, dims=dims_grid(**grid), levels=(Level.SYMBOLIC,))


def test_neuron_sum_equals_the_network_for_every_size():
    ident = _identity(_FFN, lambda W1, b1, W2, x: W2 * elementwise(SIGMA, W1 * x + b1), _neuron_sum,
                      N=(1, 2), n=(1, 2))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds  # the explicit loop, at concrete sizes
    ev = decide(ident).evidence
    assert ev is not None and ev.holds and "every N, n >= 1" in ev.detail


def test_neuron_sum_with_a_wrong_bias_is_rejected():
    wrong = _identity(_FFN, lambda W1, b1, W2, x: W2 * elementwise(SIGMA, W1 * x),
                      _neuron_sum, N=(1,), n=(1,))
    ev = decide(wrong).evidence
    assert ev is not None and not ev.holds
    assert ev.counterexample["dims"] == {"N": 1, "n": 1}


def test_family_sum_of_outer_products_fools_a_one_member_grid():
    r""":math:`\sum_j w_jw_j^T = (W\mathbf 1)(W\mathbf 1)^T` holds for one member only; smallest witness N = 2."""
    ident = _identity({"W": ("m", "N")},
                      lambda W, N: family_sum(lambda j: col_block(W, j, 1) * col_block(W, j, 1).T, N),
                      lambda W, N: (W * ones(N)) * (W * ones(N)).T, N=(1,), m=(1, 2))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    ev = decide(ident).evidence
    assert ev is not None and not ev.holds
    assert ev.counterexample["dims"] == {"N": 2, "m": 1}


def test_blocks_of_a_product_type_sum_back_to_the_product():
    r""":math:`\sum_j W_{[j]}^T x_{[j]} = W^Tx` for :math:`W\in\mathbb R^{Nm\times n}` split in N blocks of m rows."""
    ident = _identity({"W": ("N*m", "n"), "x": ("N*m", 1)},
                      lambda W, x, N, m: family_sum(lambda j: row_block(W, j, m).T * row_block(x, j, m), N),
                      lambda W, x: W.T * x, N=(1, 2), m=(1, 2), n=(1,))
    ev = decide(ident).evidence
    assert ev is not None and ev.holds


def test_diag_vector_times_ones_is_the_vector():
    ident = _identity({"v": ("m", 1)}, lambda v, m: diag_vector(v) * ones(m), lambda v: v, m=(1, 2))
    ev = decide(ident).evidence
    assert ev is not None and ev.holds


def test_diag_vector_is_not_a_broadcast_row():
    r""":math:`\operatorname{diag}(v) = v\mathbf 1^T` holds for m = 1 only: rejected with witness m = 2."""
    ident = _identity({"v": ("m", 1)}, lambda v: diag_vector(v), lambda v, m: v * ones(m).T, m=(1,))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    ev = decide(ident).evidence
    assert ev is not None and not ev.holds and ev.counterexample["dims"] == {"m": 2}


@pytest.mark.parametrize("lhs, reason", [
    (lambda W, N, m: family_sum(lambda j: row_block(W, j, m), N * m), "compound size"),
    (lambda W, N, m: family_sum(lambda j: row_block(W, j + 1, m), N), "arithmetic on the family index"),
    (lambda W, N, m: family_sum(lambda j: row_block(W, j, N), N), "blocks of N indexed by N"),
    (lambda W, N, m: family_sum(lambda j: row_block(W, 0, m), N), "size 0"),
    (lambda W, N, m: family_sum(lambda j: 0, N), "not a traced matrix"),
])
def test_unsupported_family_uses_leave_the_fragment(lhs, reason):
    ident = _identity({"W": ("N*m", "n")}, lhs, lambda W: W, N=(1,), m=(1,), n=(1,))
    d = decide(ident)
    assert not d.inside and reason in d.reason
