"""All-sizes rules of the family combinators: Σ over a family index, member blocks, diag."""

from __future__ import annotations

import pytest

from symuat import Identity, dims_grid
from symuat.algebra.families import (
    basis_vector,
    block_size,
    col_block,
    diag_vector,
    family_block_diagonal,
    family_hstack,
    family_member,
    family_of,
    family_shapes,
    family_sum,
    row_block,
)
from symuat.algebra.matrices import elementwise, kron, ones
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
    (lambda W, N, m: family_sum(lambda j: row_block(W, j, m), N + m), "compound size"),
    (lambda W, N, m: family_sum(lambda j: row_block(W, j + 1, m), N), "arithmetic on the family index"),
    (lambda W, N, m: family_sum(lambda j: row_block(W, j, N), N), "blocks of N indexed by N"),
    (lambda W, N, m: family_sum(lambda j: row_block(W, 0, m), N), "size 0"),
    (lambda W, N, m: family_sum(lambda j: 0, N), "not a traced matrix"),
])
def test_unsupported_family_uses_leave_the_fragment(lhs, reason):
    ident = _identity({"W": ("N*m", "n")}, lhs, lambda W: W, N=(1,), m=(1,), n=(1,))
    d = decide(ident)
    assert not d.inside and reason in d.reason


def _heads_shapes(d):
    h, N, m = d["h"], d["N"], d["m"]
    return {"X": (N, h * m), "WO": (h * m, m), **family_shapes("H", h, N, N), **family_shapes("WV", h, m, m)}


def _head(e, d, j):
    r""":math:`\hat H_j = H_j x_j W_{Vj}` (the paper's head, Eq. 8)."""
    return family_member(e, "H", j) * col_block(e["X"], j, d["m"]) * family_member(e, "WV", j)


def _heads_identity(lhs, rhs, h=(1, 2)) -> Identity:
    return Identity(shapes=_heads_shapes, lhs=lhs, rhs=rhs, dims=dims_grid(h=h, N=(1, 2), m=(1, 2)),
                    levels=(Level.SYMBOLIC,))


def test_concatenated_heads_times_wo_is_a_sum_over_heads():
    r""":math:`\mathrm{Concat}_j(\hat H_j)W_O = \sum_j \hat H_j W_{O,j}` with :math:`W_{O,j}` the rows of head j."""
    ident = _heads_identity(lambda e, d: family_hstack(lambda j: _head(e, d, j), d["h"]) * e["WO"],
                            lambda e, d: family_sum(lambda j: _head(e, d, j) * row_block(e["WO"], j, d["m"]), d["h"]))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds  # H1, H2, WV1, WV2 at concrete sizes
    ev = decide(ident).evidence
    assert ev is not None and ev.holds and "every h, N, m >= 1" in ev.detail


def test_square_of_a_head_sum_is_not_the_sum_of_squares():
    r""":math:`(\sum_j H_j)^2 = \sum_j H_j^2` holds for one head only: smallest witness h = 2."""
    ident = _heads_identity(lambda e, d: family_sum(lambda j: family_member(e, "H", j), d["h"])
                            * family_sum(lambda j: family_member(e, "H", j), d["h"]),
                            lambda e, d: family_sum(lambda j: family_member(e, "H", j) * family_member(e, "H", j),
                                                    d["h"]), h=(1,))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    ev = decide(ident).evidence
    assert ev is not None and not ev.holds and ev.counterexample["dims"] == {"N": 1, "h": 2, "m": 1}


def test_heads_of_the_wrong_family_leave_the_fragment():
    ident = _heads_identity(lambda e, d: family_hstack(lambda j: family_member(e, "X", j), d["h"]),
                            lambda e, d: e["X"])
    d = decide(ident)
    assert not d.inside and "'X' is not a declared family" in d.reason
    ident = _heads_identity(lambda e, d: family_sum(lambda j: family_member(e, "H", j), d["N"]),
                            lambda e, d: family_member(e, "H", 0))
    assert not decide(ident).inside


def _fam(e, d, name):
    return family_of(e, name, d["h"])


def test_block_diagonal_of_a_family_acts_head_by_head():
    r""":math:`X\operatorname{diag}(W_{V1..h}) = \mathrm{Concat}_j(x_jW_{Vj})` for every h, N, m."""
    ident = _heads_identity(lambda e, d: e["X"] * family_block_diagonal(_fam(e, d, "WV")),
                            lambda e, d: family_hstack(lambda j: col_block(e["X"], j, d["m"])
                                                       * _fam(e, d, "WV")[j], d["h"]))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    ev = decide(ident).evidence
    assert ev is not None and ev.holds


def test_block_diagonal_is_not_the_full_kronecker_sum():
    r""":math:`\operatorname{diag}(W_j) = \sum_j \mathbf 1_h\mathbf 1_h^T\otimes W_j` only for h = 1."""
    def rhs(e, d):
        return family_sum(lambda j: kron(ones(d["h"]) * ones(d["h"]).T, _fam(e, d, "WV")[j]), d["h"])
    ident = _heads_identity(lambda e, d: family_block_diagonal(_fam(e, d, "WV")), rhs, h=(1,))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    ev = decide(ident).evidence
    assert ev is not None and not ev.holds and ev.counterexample["dims"]["h"] == 2


def test_basis_vectors_rebuild_a_family_stack():
    r""":math:`\sum_j e_j\otimes B_j` stacks the members; with :math:`\mathbf 1_h` for :math:`e_j` it does not."""
    stack = _heads_identity(lambda e, d: family_sum(lambda j: kron(basis_vector(j, d["h"]), _fam(e, d, "H")[j]),
                                                    d["h"]),
                            lambda e, d: family_hstack(lambda j: _fam(e, d, "H")[j].T, d["h"]).T)
    ev = decide(stack).evidence
    assert ev is not None and ev.holds
    wrong = _heads_identity(lambda e, d: family_sum(lambda j: kron(ones(d["h"]), _fam(e, d, "H")[j]), d["h"]),
                            lambda e, d: family_hstack(lambda j: _fam(e, d, "H")[j].T, d["h"]).T, h=(1,))
    ev = decide(wrong).evidence
    assert ev is not None and not ev.holds and ev.counterexample["dims"]["h"] == 2


def test_first_member_is_the_first_block_and_H1():
    r""":math:`H_1x_1 = ` the first block of :math:`\mathrm{Concat}_j(H_jx_j)`; member 2 is not (witness h = 2)."""
    def concat(e, d):
        return family_hstack(lambda j: _fam(e, d, "H")[j] * col_block(e["X"], j, d["m"]), d["h"])
    ident = _heads_identity(lambda e, d: e["H1"] * e["X"][:, :d["m"]], lambda e, d: concat(e, d)[:, :d["m"]])
    ev = decide(ident).evidence
    assert ev is not None and ev.holds
    last = _heads_identity(lambda e, d: e["H1"] * e["X"][:, :d["m"]],
                           lambda e, d: family_sum(lambda j: concat(e, d), d["h"])[:, :d["m"]], h=(1,))
    ev = decide(last).evidence
    assert ev is not None and not ev.holds and ev.counterexample["dims"]["h"] == 2


def test_block_size_and_family_misuse_leave_the_fragment():
    r"""``block_size`` of a width that is not h blocks, and iterating a traced family, are outside the fragment."""
    ident = _heads_identity(lambda e, d: col_block(e["WO"], 0, block_size(d["N"], d["h"])), lambda e, d: e["WO"])
    assert "is not h blocks of one size" in decide(ident).reason
    ident = _heads_identity(lambda e, d: sum(_fam(e, d, "H")), lambda e, d: e["H1"])
    assert "iterating over the family H" in decide(ident).reason
    ident = _heads_identity(lambda e, d: family_of(e, "X", d["h"])[0], lambda e, d: e["X"])
    assert "'X' is not a declared family" in decide(ident).reason


def test_a_family_index_that_escapes_its_sum_leaves_the_fragment():
    escaped = []

    def lhs(W, N, m):
        family_sum(lambda j: escaped.append(j) or row_block(W, j, m), N)
        return row_block(W, escaped[0], m)
    ident = _identity({"W": ("N*m", "n")}, lhs, lambda W, m: W[:m, :], N=(1,), m=(1,), n=(1,))
    d = decide(ident)
    assert not d.inside and "outside the family_sum" in d.reason


def test_a_branch_on_the_family_index_leaves_the_fragment():
    r"""``A if j == 0 else B`` must not be traced as :math:`\sum_j B` (the comparison depends on the member)."""
    ident = _identity({"W": ("N*m", "n")},
                      lambda W, N, m: family_sum(lambda j: row_block(W, j, m) if j == 0 else 0 * row_block(W, j, m), N),
                      lambda W, m: W[:m, :], N=(1,), m=(1,), n=(1,))
    d = decide(ident)
    assert not d.inside and "compares the family index" in d.reason
