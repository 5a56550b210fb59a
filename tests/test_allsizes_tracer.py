"""Index types, tracer matrices and canonical normal forms of the all-sizes level."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy

from symuat import Identity, dims_grid
from symuat.algebra.matrices import identity_matrix, kron, ones, unvec_r, vec_r
from symuat.allsizes import Atom, OutsideFragment, Tracer, decide
from symuat.allsizes.index_types import UNIT, Prod, Sum, as_type, canonical, cases, parse_size, same, size_of
from symuat.allsizes.size_mutants import size_only_mutants
from symuat.allsizes.terms import canonical_poly
from symuat.evidence.fields import SIGMA
from symuat.evidence.identity import check_identity
from symuat.evidence.verdict import Level
from symuat.layers.layernorm import centring_matrix

N, M, h, m = Atom("N"), Atom("M"), Atom("h"), Atom("m")


def test_canonical_types_keep_the_case_list():
    t = Prod((Sum((h, m)), Prod((N, UNIT)), M))
    assert cases(t) == cases(canonical(t)) == [("h", "N", "M"), ("m", "N", "M")]
    assert size_of(t, {"h": 2, "m": 3, "N": 4, "M": 5}) == (2 + 3) * 4 * 5


def test_right_distribution_is_not_assumed():
    assert not same(Prod((N, Sum((h, m)))), Sum((Prod((N, h)), Prod((N, m)))))  # different layouts


@pytest.mark.parametrize("op, match", [
    (lambda: N - 1, "only \\+ and \\* are sizes"),
    (lambda: N // 2, "only \\+ and \\* are sizes"),
    (lambda: range(N), "concrete value of the size N"),
    (lambda: N == M, "equal at some sizes only"),
    (lambda: N == 1, "equal at some sizes only"),
    (lambda: as_type(0), "not a positive integer"),
    (lambda: as_type(2.5), "neither symbolic nor an integer"),
    (lambda: parse_size("N+k", {"N": N}), "'k' is not a dimension"),
])
def test_size_arithmetic_outside_the_fragment(op, match):
    with pytest.raises(OutsideFragment, match=match):
        op()


def test_tracer_vec_unvec_and_blocks():
    X = Tracer.input("X", N, M)
    assert same(vec_r(X).rows, N * M) and same(vec_r(X).cols, 1)
    back = unvec_r(vec_r(X), N, M)
    assert back.blocks.keys() == X.blocks.keys()
    wide = sympy.ImmutableMatrix.hstack(X, Tracer.input("Y", N, h))
    assert same(wide.cols, M + h)
    assert same(wide[:, :M].cols, M) and same(wide[:, M:].cols, h)
    assert same(kron(identity_matrix(N), X).rows, N * N) and same(ones(N).cols, UNIT)


@pytest.mark.parametrize("op, match", [
    (lambda X, Y: Y * X, "product of index types"),
    (lambda X, Y: X + Y, "sum of matrices"),
    (lambda X, Y: X[:, :1], "not a boundary"),
    (lambda X, Y: X[0, 0], "single \\(flat\\) index|concrete position"),
    (lambda X, Y: unvec_r(vec_r(X), M, N), "unvec_r of a"),
    (lambda X, Y: X.applyfunc(sympy.exp), "the elementwise map uses exp"),
    (lambda X, Y: X.applyfunc(lambda e: 1 / (1 + e)), "the elementwise map uses Pow"),
    (lambda X, Y: 1.5 * X, "not rational"),
    (lambda X, Y: X.applyfunc(lambda e: SIGMA(e) if e != 0 else 0), "0 maps elsewhere"),
])
def test_tracer_errors_name_the_reason(op, match):
    X, Y = Tracer.input("X", N, M), Tracer.input("Y", M, M)
    if "sum" in match:
        Y = Tracer.input("Y", M, N)
    with pytest.raises(OutsideFragment, match=match):
        op(X, Y)


def test_canonical_form_ignores_dummy_names_and_factor_order():
    a = [(Fraction(2), (("e", "A", 0, 0, ("i", "k")), ("e", "A", 0, 0, ("k", "l")), ("e", "B", 0, 0, ("l", "j"))),
          (("k", "N"), ("l", "N")))]
    b = [(Fraction(2), (("e", "B", 0, 0, ("p", "j")), ("e", "A", 0, 0, ("q", "p")), ("e", "A", 0, 0, ("i", "q"))),
          (("p", "N"), ("q", "N")))]
    c = [(Fraction(2), (("e", "A", 0, 0, ("k", "i")), ("e", "A", 0, 0, ("k", "l")), ("e", "B", 0, 0, ("l", "j"))),
          (("k", "N"), ("l", "N")))]
    free = {"i": 0, "j": 1}
    assert canonical_poly(a, free) == canonical_poly(b, free) != canonical_poly(c, free)
    assert canonical_poly(a + [(Fraction(-2),) + b[0][1:]], free) == ()


@pytest.mark.slow  # a mutation sweep (CI's slow step; docs/testing.md)
def test_size_only_mutants_hold_on_the_grid_and_are_killed():
    ident = Identity(shapes={"A": ("n", "n")}, lhs=lambda A: (A * A).T, rhs=lambda A: A.T * A.T,
                     dims=dims_grid(n=(1, 2)))
    mutants = dict(size_only_mutants(ident))
    assert sorted(mutants) == ["standard:n", "wedge:n"]
    for mutant in mutants.values():
        assert check_identity(mutant, levels=[Level.SYMBOLIC]).holds
        ev = decide(mutant).evidence
        assert not ev.holds and ev.counterexample["dims"] == {"n": 3}


# --- Hadamard products and statements about sizes ----------------------------------------------------

def _sym(shapes, lhs, rhs, **grid) -> Identity:
    return Identity(shapes=shapes, lhs=lhs, rhs=rhs, dims=dims_grid(**grid), levels=(Level.SYMBOLIC,))


def test_hadamard_product_commutes_with_transpose_for_every_size():
    ident = _sym({"A": ("N", "M"), "B": ("N", "M")}, lambda A, B: A.multiply_elementwise(B).T,
                 lambda A, B: B.T.multiply_elementwise(A.T), N=(1, 2), M=(1, 2))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds and decide(ident).evidence.holds


def test_hadamard_product_is_not_the_matrix_product():
    """Equal for 1x1 matrices (a grid {1} accepts); the smallest witness is N = 2."""
    ident = _sym({"A": ("N", "N"), "B": ("N", "N")}, lambda A, B: A.multiply_elementwise(B), lambda A, B: A * B,
                 N=(1,))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    ev = decide(ident).evidence
    assert not ev.holds and ev.counterexample["dims"] == {"N": 2}
    with pytest.raises(OutsideFragment, match="elementwise product of matrices of index types"):
        Tracer.input("A", N, M).multiply_elementwise(Tracer.input("B", M, N))


def test_the_number_of_rows_is_a_size():
    """A side that is an explicit matrix of sizes (e.g. ``[[rows of A B]]``) is compared as a polynomial in them."""
    ident = _sym({"A": ("N", "M"), "B": ("M", "N")}, lambda A, B: sympy.Matrix([[(A * B).shape[0]]]),
                 lambda N: sympy.Matrix([[N]]), N=(1, 2), M=(1, 2))
    assert decide(ident).evidence.holds
    wrong = _sym({"A": ("N", "M")}, lambda A: sympy.Matrix([[A.shape[0]]]), lambda M: sympy.Matrix([[M]]),
                 N=(1,), M=(1,))
    ev = decide(wrong).evidence
    assert not ev.holds and ev.counterexample["dims"] == {"N": 1, "M": 2}


def test_a_polynomial_in_a_size_is_searched_beyond_its_degree():
    r""":math:`N(N-1)(N-2) = 0` for :math:`N \le 2`: a grid {1, 2} accepts; the witness N = 3 is within degree + 1."""
    def cubic(N):
        n = sympy.sympify(N)
        return sympy.Matrix([[n * (n - 1) * (n - 2)]])

    ident = _sym({"x": ("N", 1)}, lambda N: cubic(N), lambda x: sympy.Matrix([[0]]), N=(1, 2))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    ev = decide(ident).evidence
    assert not ev.holds and ev.counterexample["dims"] == {"N": 3}


def test_a_constant_side_with_an_unknown_symbol_is_outside():
    ident = _sym({"x": ("N", 1)}, lambda x: x.T * x, lambda: sympy.Matrix([[sympy.Symbol("w")]]), N=(1,))
    d = decide(ident)
    assert not d.inside and "is not rational" in d.reason


def test_the_centring_matrix_subtracts_the_mean_for_every_size():
    ident = _sym({"x": ("M", 1)}, lambda x, M: centring_matrix(M) * x, lambda x, M: x - ones(M) * (ones(M).T * x) / M,
                 M=(1, 2))
    assert decide(ident).evidence.holds
    wrong = _sym({"x": ("M", 1)}, lambda x, M: centring_matrix(M) * x, lambda x: x, M=(2,))
    ev = decide(wrong).evidence
    assert not ev.holds and ev.counterexample["dims"] == {"M": 1}


def test_an_identity_needing_the_sum_of_ones_is_outside_not_rejected():
    r""":math:`C_M^2 = C_M` uses :math:`\mathbf 1^{\mathsf T}\mathbf 1 = M`, which the normal form does not evaluate."""
    ident = _sym({"x": ("M", 1)}, lambda x, M: centring_matrix(M) * centring_matrix(M) * x,
                 lambda x, M: centring_matrix(M) * x, M=(1, 2))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    d = decide(ident)
    assert not d.inside and "the difference may vanish at every size" in d.reason
