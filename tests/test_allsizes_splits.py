r"""All-sizes rules of split sizes: ``halves`` (N as ⌈N/2⌉ + ⌊N/2⌋), ``but_last`` (N as (N-1) + 1), partitions."""

from __future__ import annotations

import dataclasses

import pytest
import sympy

from symuat import Identity, dims_grid
from symuat.algebra.families import diag_vector
from symuat.algebra.matrices import elementwise, kron, ones
from symuat.algebra.partitions import partition_indicator
from symuat.algebra.splits import but_last, halves
from symuat.allsizes import Atom, Tracer, decide
from symuat.allsizes.index_types import UNIT, Part
from symuat.allsizes.outside import OutsideFragment
from symuat.allsizes.size_mutants import size_only_mutants
from symuat.allsizes.splits import halves as traced_halves
from symuat.evidence.fields import SIGMA
from symuat.evidence.identity import check_identity
from symuat.evidence.verdict import Level

_SHAPES = {"alpha": ("N", 1), "W": ("N", "n"), "x": ("n", 1)}


def _S(alpha, W, x, part):
    return alpha[part, :].T * elementwise(SIGMA, W[part, :] * x)


def _whole(alpha, W, x):
    return alpha.T * elementwise(SIGMA, W * x)


def _lambda1(alpha, W, x, N):
    return _S(alpha, W, x, slice(None, halves(N)[0]))


def _lambda2(alpha, W, x, N):
    return _S(alpha, W, x, slice(halves(N)[0], None))


def _identity(shapes, lhs, rhs, **grid) -> Identity:
    return Identity(shapes=shapes, lhs=lhs, rhs=rhs, dims=dims_grid(**grid), levels=(Level.SYMBOLIC,))


def _fails_at(ident: Identity, dims: dict) -> bool:
    """The explicit symbolic level at one size (independent of the tracer)."""
    return not check_identity(dataclasses.replace(ident, dims=(dims,)), levels=[Level.SYMBOLIC]).holds


def test_the_split_sum_is_the_whole_sum_for_every_size():
    ident = _identity(_SHAPES, _whole, lambda alpha, W, x, N: _lambda1(alpha, W, x, N) + _lambda2(alpha, W, x, N),
                      N=(1, 2, 3), n=(1, 2))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds  # the explicit ranges, at concrete sizes
    ev = decide(ident).evidence
    assert ev is not None and ev.holds and "N as ⌈N/2⌉ + ⌊N/2⌋" in ev.detail and "possibly 0" in ev.detail


def test_dropping_lambda2_holds_at_one_index_only():
    """At N = 1 the second half is empty, so a grid {1} accepts; the smallest witness is N = 2."""
    ident = _identity(_SHAPES, _whole, _lambda1, N=(1,), n=(1, 2))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    ev = decide(ident).evidence
    assert ev is not None and not ev.holds
    assert ev.counterexample["dims"] == {"N": 2, "n": 1} and _fails_at(ident, {"N": 2, "n": 1})


def _gram(a, b):
    r""":math:`(a\cdot a)(b\cdot b) - (a\cdot b)^2`: zero iff the vectors a, b are dependent."""
    return kron(a, b).T * kron(a, b) - kron(a, b).T * kron(b, a)


def test_a_statement_about_lambda2_fools_the_grid_up_to_three():
    r"""Two vectors over :math:`\Lambda_2` are dependent while :math:`\lfloor N/2\rfloor \le 1`: witness N = 4."""
    shapes = {"x": ("N", 1), "u": ("N", 1), "v": ("N", 1)}

    def rhs(x, u, v, N):
        tail = slice(halves(N)[0], None)
        return x.T * x + _gram(u[tail, :], v[tail, :])

    ident = _identity(shapes, lambda x: x.T * x, rhs, N=(1, 2, 3))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    ev = decide(ident).evidence
    assert ev is not None and not ev.holds and ev.counterexample["dims"] == {"N": 4}
    assert _fails_at(ident, {"N": 4}) and not _fails_at(ident, {"N": 3})


def test_the_first_n2_indices_are_outside_the_fragment():
    """Seed 004's literal reading of Σ_{j=1}^{N_2}: not a block of the split, so no all-sizes verdict."""
    ident = _identity(_SHAPES, lambda alpha, W, x, N: _S(alpha, W, x, slice(None, halves(N)[1])), _lambda2,
                      N=(1, 2, 3), n=(1,))
    assert not check_identity(ident, levels=[Level.SYMBOLIC]).holds
    d = decide(ident)
    assert not d.inside and "is not a boundary between concatenated blocks" in d.reason


def test_a_possibly_empty_half_is_never_compared_with_zero():
    def rhs(alpha, W, x, N):
        return _whole(alpha, W, x) if halves(N)[1] == 0 else _lambda1(alpha, W, x, N)

    d = decide(_identity(_SHAPES, _whole, rhs, N=(1, 2), n=(1,)))
    assert not d.inside and "which may be 0, with 0" in d.reason


def test_halves_of_a_compound_size_are_outside():
    ident = _identity({"x": ("N*n", 1)}, lambda x: x.T * x,
                      lambda x, N, n: x[:halves(N * n)[0], :].T * x[:halves(N * n)[0], :], N=(1,), n=(1,))
    d = decide(ident)
    assert not d.inside and "halves of the compound size N*n" in d.reason


def test_traced_halves_errors():
    N = Part.of("N", "halves", 1) + Part.of("M", "halves", 2)
    with pytest.raises(OutsideFragment, match=r"halves of the compound size ⌈N/2⌉\+⌊M/2⌋"):
        traced_halves(N)


# --- partitions numbered by a dimension --------------------------------------------------------------

def _by_partition(alpha, W, x, N, P):
    m, t = partition_indicator(N, P), elementwise(SIGMA, W * x)
    return alpha.T * diag_vector(m) * t + alpha.T * diag_vector(ones(N) - m) * t


def test_every_partition_splits_the_sum_for_every_size():
    ident = _identity(_SHAPES, _whole, _by_partition, N=(1, 2), n=(1,), P=(1, 2, 3, 4))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    ev = decide(ident).evidence
    assert ev is not None and ev.holds


def test_keeping_only_lambda1_is_rejected_at_the_empty_partition():
    ident = _identity(_SHAPES, _whole,
                      lambda alpha, W, x, N, P: alpha.T * diag_vector(partition_indicator(N, P))
                      * elementwise(SIGMA, W * x), N=(1,), n=(1,), P=(2,))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds  # P = 2: Λ1 is everything
    ev = decide(ident).evidence
    assert ev is not None and not ev.holds and ev.counterexample["dims"] == {"N": 1, "n": 1, "P": 1}
    assert _fails_at(ident, {"N": 1, "n": 1, "P": 1})


def test_a_statement_true_only_for_0_1_indicators_gets_no_verdict():
    r""":math:`\operatorname{diag}(m)^2 = \operatorname{diag}(m)` holds for every partition, not for every vector."""
    def mask(N, P):
        return diag_vector(partition_indicator(N, P))

    ident = _identity({"x": ("N", 1)}, lambda x, N, P: mask(N, P) * mask(N, P) * x, lambda x, N, P: mask(N, P) * x,
                      N=(1, 2), P=(1, 2, 3, 4))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    d = decide(ident)
    assert not d.inside and "uses that a partition indicator is 0/1" in d.reason
    assert "'P': 2" in d.reason  # the search covered every partition of N <= 1


# --- all but the last index ---------------------------------------------------------------------------

def _stochastic(H, N):
    free = but_last(N)
    return sympy.ImmutableMatrix.hstack(H[:, :free], ones(N) - H[:, :free] * ones(N)[:free, :])


def test_a_row_stochastic_matrix_has_rows_summing_to_one_for_every_size():
    ident = _identity({"H": ("N", "N")}, lambda H, N: _stochastic(H, N) * ones(N), lambda N: ones(N), N=(1, 2))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    ev = decide(ident).evidence
    assert ev is not None and ev.holds and "N as (N-1) + 1" in ev.detail


def test_its_columns_sum_to_one_at_one_index_only():
    ident = _identity({"H": ("N", "N")}, lambda H, N: _stochastic(H, N).T * ones(N), lambda N: ones(N), N=(1,))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    ev = decide(ident).evidence
    assert ev is not None and not ev.holds and ev.counterexample["dims"] == {"N": 2} and _fails_at(ident, {"N": 2})


def test_the_first_of_a_possibly_empty_part_is_outside():
    """``N-1`` is 0 at N = 1: it has no first member."""
    ident = _identity({"X": ("N*M", 1)}, lambda X, N, M: X[:M, :], lambda X, N, M: X[:M, :], N=(1,), M=(1,))
    assert decide(ident).evidence.holds  # the first block of N blocks exists
    X = Tracer.input("X", Part.of("N", "last", 1) * Atom("M"), UNIT)
    with pytest.raises(OutsideFragment, match=r"slice bound M of \(N-1\)\*M is not a boundary"):
        X[:Atom("M"), :]


@pytest.mark.slow  # a mutation sweep (CI's slow step; docs/testing.md)
def test_size_only_mutants_of_the_split_sum_are_killed_above_the_grid():
    """Each mutant holds on the grid N <= 2 (so a grid prover accepts it) and is rejected with a witness N = 3."""
    ident = _identity(_SHAPES, _whole, lambda alpha, W, x, N: _lambda1(alpha, W, x, N) + _lambda2(alpha, W, x, N),
                      N=(1, 2), n=(1,))
    mutants = [(name, m) for name, m in size_only_mutants(ident) if name.endswith(":N")]
    assert [name for name, _ in mutants] == ["wedge:N", "standard:N"]
    for _, mutant in mutants:
        assert check_identity(mutant, levels=[Level.SYMBOLIC]).holds
        ev = decide(mutant).evidence
        assert ev is not None and not ev.holds and ev.counterexample["dims"]["N"] == 3
