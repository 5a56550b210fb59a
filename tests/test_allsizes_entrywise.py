r"""All-sizes rule of ``pair_matrix``: a matrix printed entrywise (seed 004 Eq. 15) as one index-form block."""

from __future__ import annotations

import dataclasses

import pytest

from symuat import Identity, dims_grid
from symuat.algebra.entrywise import kronecker_delta, pair_matrix
from symuat.algebra.matrices import identity_matrix, kron
from symuat.allsizes import decide
from symuat.allsizes.entrywise import TracedEntry
from symuat.allsizes.outside import OutsideFragment
from symuat.evidence.identity import check_identity
from symuat.evidence.verdict import Level

_W = {"W": ("N", "N")}


def _identity(shapes, lhs, rhs, **grid) -> Identity:
    return Identity(shapes=shapes, lhs=lhs, rhs=rhs, dims=dims_grid(**grid), levels=(Level.SYMBOLIC,))


def _printed(W, N, M):
    """Entry ((k,l),(i,j)) = w_{i,k} δ_{lj}, as printed."""
    return pair_matrix(lambda r, c: W[c[0], r[0]] * kronecker_delta(r[1], c[1]), (N, M), (N, M))


def test_printed_eq15_matrix_is_w_transpose_kron_identity_for_every_size():
    ident = _identity(_W, lambda W, N, M: _printed(W, N, M), lambda W, M: kron(W.T, identity_matrix(M)),
                      N=(1, 2), M=(1, 2))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    ev = decide(ident).evidence
    assert ev is not None and ev.holds and "every N, M >= 1" in ev.detail


def test_the_transposed_entry_is_rejected_with_its_smallest_witness():
    """w_{k,i} instead of w_{i,k}: equal for N = 1 (a grid {1} accepts), wrong from N = 2."""
    wrong = _identity(_W, lambda W, N, M: pair_matrix(lambda r, c: W[r[0], c[0]] * kronecker_delta(r[1], c[1]),
                                                      (N, M), (N, M)),
                      lambda W, M: kron(W.T, identity_matrix(M)), N=(1,), M=(1, 2))
    assert check_identity(wrong, levels=[Level.SYMBOLIC]).holds
    ev = decide(wrong).evidence
    assert ev is not None and not ev.holds and ev.counterexample["dims"] == {"N": 2, "M": 1}
    assert not check_identity(dataclasses.replace(wrong, dims=({"N": 2, "M": 1},)), levels=[Level.SYMBOLIC]).holds


def test_a_delta_between_different_sizes_is_outside():
    """δ_{kl} with k over N and l over M depends on the sizes (both 0-based ranges overlap): no verdict."""
    ident = _identity({}, lambda N, M: pair_matrix(lambda r, c: kronecker_delta(r[0], c[0]), (N,), (M,)),
                      lambda N, M: pair_matrix(lambda r, c: kronecker_delta(r[0], c[0]), (N,), (M,)), N=(1,), M=(1,))
    d = decide(ident)
    assert not d.inside and "Kronecker delta between indices over N and M" in d.reason


def test_entries_at_concrete_positions_or_of_stacked_matrices_are_outside():
    at_zero = _identity(_W, lambda W, N: pair_matrix(lambda r, c: W[r[0], 0], (N,), (N,)), lambda W: W, N=(1,))
    assert "an entry at the concrete position 0 (only pair_matrix index variables)" in decide(at_zero).reason
    stacked = _identity({"X": ("N*M", "N")}, lambda X, N: pair_matrix(lambda r, c: X[r[0], c[0]], (N,), (N,)),
                        lambda X, N: pair_matrix(lambda r, c: X[r[0], c[0]], (N,), (N,)), N=(1,), M=(1,))
    assert "entry (N, N) of a matrix of index types (N*M, N)" in decide(stacked).reason


def test_traced_entry_arithmetic():
    one = TracedEntry.of(1)
    assert (one + 1 - 2).terms and (-one * 3).terms[0][0] == -3
    with pytest.raises(OutsideFragment, match="is not rational"):
        TracedEntry.of(object())
