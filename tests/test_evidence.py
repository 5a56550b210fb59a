"""The evidence engine accepts true identities and rejects broken ones at every level."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat import SIGMA, Identity, Level, check_identity, dims_grid, identity_matrix, kron, vec_r
from symuat.errors import SymuatError, UnsupportedError
from symuat.evidence.fields import (
    MERSENNE_61,
    PrimeField,
    RealField,
    evaluate,
    is_polynomial,
    sigma_arguments,
    structural_degree,
)

SHAPES = lambda d: {"A": (d["N"], d["N"]), "X": (d["N"], d["M"]), "B": (d["M"], d["M"])}  # noqa: E731
DIMS = dims_grid(N=(1, 2, 3), M=(1, 2))


def _vec_identity(rhs, reference=None):
    return Identity(SHAPES, lambda e, d: vec_r(e["A"] * e["X"] * e["B"]), rhs, DIMS,
                    reference=reference or (lambda a, d: (a["A"] @ a["X"] @ a["B"]).reshape(-1)),
                    random_dims={"N": 3, "M": 4})


TRUE_RHS = lambda e, d: kron(e["A"], e["B"].T) * vec_r(e["X"])  # noqa: E731

BROKEN = {
    "transpose-one-factor": lambda e, d: kron(e["A"].T, e["B"].T) * vec_r(e["X"]),
    "forget-transpose": lambda e, d: kron(e["A"], e["B"]) * vec_r(e["X"]),
    "swap-kron-order": lambda e, d: kron(e["B"].T, e["A"]) * vec_r(e["X"]) if d["N"] == d["M"]
    else kron(e["A"], e["B"].T) * vec_r(e["X"]) * 2,
    "flip-sign": lambda e, d: -kron(e["A"], e["B"].T) * vec_r(e["X"]),
    "column-major": lambda e, d: kron(e["A"], e["B"].T) * sympy.ImmutableMatrix(
        sympy.Matrix(e["X"]).T.reshape(len(e["X"]), 1)) if d["M"] > 1 and d["N"] > 1 else 2 * vec_r(e["X"]),
}


def test_true_identity_holds_at_every_level():
    verdict = check_identity(_vec_identity(TRUE_RHS))
    assert verdict.holds and verdict.consistent
    assert set(verdict.levels) == {Level.ALL_SIZES, Level.SYMBOLIC, Level.EXACT, Level.FLOAT}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_identity_fails_at_every_level(name):
    verdict = check_identity(_vec_identity(BROKEN[name]))
    assert [e.holds for e in verdict.evidence if e.level is not Level.ALL_SIZES] == [False, False, False], verdict
    assert not any(e.holds for e in verdict.evidence)
    assert verdict.counterexample is not None


def test_smallest_counterexample_is_reported():
    verdict = check_identity(_vec_identity(BROKEN["transpose-one-factor"]), levels=[Level.SYMBOLIC])
    assert verdict.counterexample["dims"] == {"N": 2, "M": 1}


def test_sympy_combine_kronecker_is_rejected():
    """STYLE §10: SymPy 1.14 rewrites A⊗B + C⊗D as (A+C)⊗(B+D); the checker must refuse it."""
    from sympy.matrices.expressions.kronecker import combine_kronecker

    def rewritten(e, d):
        A, B, C, D = (sympy.MatrixSymbol(n, 2, 2) for n in "ABCD")
        expr = combine_kronecker(sympy.kronecker_product(A, B) + sympy.kronecker_product(C, D))
        subs = {A: e["A"], B: e["B"], C: e["C"], D: e["D"]}
        return sympy.ImmutableMatrix(expr.subs(subs).as_explicit())

    ident = Identity(lambda d: {n: (2, 2) for n in "ABCD"},
                     lambda e, d: kron(e["A"], e["B"]) + kron(e["C"], e["D"]), rewritten, ({"n": 2},),
                     reference=lambda a, d: np.kron(a["A"], a["B"]) + np.kron(a["C"], a["D"]))
    verdict = check_identity(ident)
    assert not any(e.holds for e in verdict.evidence)


def test_sigma_is_uninterpreted_but_argument_sensitive():
    x, y = sympy.symbols("x y")
    ident = Identity(lambda d: {"v": (2, 1)},
                     lambda e, d: sympy.Matrix([SIGMA(e["v"][0] + e["v"][1])]),
                     lambda e, d: sympy.Matrix([SIGMA(e["v"][1] + e["v"][0])]), ({"n": 1},))
    assert check_identity(ident).holds
    wrong = Identity(ident.shapes, ident.lhs, lambda e, d: sympy.Matrix([SIGMA(e["v"][0]) + SIGMA(e["v"][1])]),
                     ({"n": 1},))
    assert not any(e.holds for e in check_identity(wrong).evidence)


def test_prime_field_evaluator_is_exact():
    x, y = sympy.symbols("x y")
    fld = PrimeField(seed=1)
    assert evaluate(sympy.Rational(1, 3) * 3 * x, {x: 5}, fld) == 5
    assert evaluate(x**-1 * x, {x: 12345}, fld) == 1
    assert evaluate(SIGMA(x + y), {x: 1, y: 2}, fld) == evaluate(SIGMA(y + x), {x: 1, y: 2}, fld)
    assert 0 <= evaluate(SIGMA(x), {x: 3}, fld) < MERSENNE_61


def test_prime_field_rejects_irrational_constants():
    x = sympy.Symbol("x")
    with pytest.raises(UnsupportedError, match="no value in F_p"):
        evaluate(sympy.sqrt(2) * x, {x: 1}, PrimeField(seed=0))


def test_unbound_symbol_is_a_clear_error():
    with pytest.raises(SymuatError, match="no value bound"):
        evaluate(sympy.Symbol("z"), {}, RealField())


def test_structural_degree_bounds_the_true_degree():
    x, y = sympy.symbols("x y")
    expr = (x + y) ** 3 * SIGMA(x * y)
    assert structural_degree(expr) >= sympy.Poly(sympy.expand((x + y) ** 3), x, y).total_degree() + 1


def test_noncommutative_products_are_matrix_products():
    A, B = sympy.symbols("A B", commutative=False)
    a = np.array([[1.0, 2.0], [0.0, 1.0]])
    b = np.array([[0.0, 1.0], [1.0, 0.0]])
    assert np.allclose(evaluate(A * B, {A: a, B: b}, RealField()), a @ b)
    assert not np.allclose(evaluate(B * A, {A: a, B: b}, RealField()), a @ b)


def test_identity_needs_dims():
    with pytest.raises(SymuatError, match="at least one dimension"):
        Identity(SHAPES, TRUE_RHS, TRUE_RHS, ())


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 5), m=st.integers(1, 5), p=st.integers(1, 4), q=st.integers(1, 4), seed=st.integers(0, 99))
def test_vec_kron_identity_numerically(n, m, p, q, seed):
    """vec_r(A X B) = (A ⊗ Bᵀ) vec_r(X) for random rectangular shapes (NumPy, independent of symuat)."""
    rng = np.random.default_rng(seed)
    A, X, B = rng.standard_normal((p, n)), rng.standard_normal((n, m)), rng.standard_normal((m, q))
    sym = kron(sympy.Matrix(A), sympy.Matrix(B).T) * vec_r(sympy.Matrix(X))
    assert np.allclose(np.array(sym, dtype=float).ravel(), (A @ X @ B).ravel())


def test_identity_helper_is_identity():
    assert identity_matrix(3) == sympy.eye(3)


def test_noncommutative_powers_are_matrix_powers():
    """SymPy folds W*W into Pow(W, 2); the evaluator must square the matrix, not its entries."""
    W = sympy.Symbol("W", commutative=False)
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert np.allclose(evaluate(W * W, {W: a}, RealField()), a @ a)
    fp = evaluate(W**3, {W: a.astype(int).astype(object)}, PrimeField(seed=0))
    assert np.array_equal(fp, (a @ a @ a).astype(int).astype(object) % MERSENNE_61)


def test_opaque_identity_levels():
    from symuat import OpaqueIdentity

    W, V, x = sympy.symbols("W V x", commutative=False)
    true = OpaqueIdentity(lambda c: W * (V + W) * x, lambda c: W * V * x + W * W * x, (1,),
                          reference=lambda a, c: a["W"] @ (a["V"] + a["W"]) @ a["x"])
    assert check_identity(true).holds
    swapped = OpaqueIdentity(lambda c: W * V * x, lambda c: V * W * x, (1,),
                             reference=lambda a, c: a["W"] @ a["V"] @ a["x"])
    assert not any(e.holds for e in check_identity(swapped).evidence)


def test_identity_is_frozen():
    import dataclasses

    ident = _vec_identity(TRUE_RHS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ident.dims = ()


def test_reference_of_the_wrong_size_fails_the_float_level():
    ident = _vec_identity(TRUE_RHS, reference=lambda a, d: np.zeros(3))
    (ev,) = check_identity(ident, levels=[Level.FLOAT]).evidence
    assert not ev.holds and "reference has 3 entries" in ev.detail


def test_float_counterexample_names_the_wrong_entry():
    """Only entry (3,1) is corrupted: every level must point at it (1-based)."""
    def rhs(e, d):
        out = sympy.Matrix(kron(e["A"], e["B"].T) * vec_r(e["X"]))
        if len(out) >= 3:
            out[2, 0] += 1
        return out

    verdict = check_identity(_vec_identity(rhs))
    assert [ev.counterexample["entry"] for ev in verdict.decided] == [[3, 1], [3, 1], [3, 1]]
    assert "entry (3,1)" in verdict.decided[2].detail
    assert verdict.evidence[0].level is Level.ALL_SIZES and verdict.evidence[0].holds is None  # concrete index


def test_cancelling_reference_is_not_falsely_rejected():
    """Regression: the pruning references cancel large intermediates (|a+c|+|c|-|a|); seed 27 used to fail."""
    from symuat import audit_entry, load_entries

    entry = next(e for e in load_entries() if e.id == "duat:eq16.step1")
    for seed in (27, 120, 517):
        assert audit_entry(entry, seed=seed).agrees


def test_small_wrong_term_is_caught_on_polynomial_entries():
    """The magnitude floor must not hide an error far above rounding level (here 1e-6 relative)."""
    ident = _vec_identity(lambda e, d: kron(e["A"], e["B"].T) * vec_r(e["X"]) * (1 + sympy.Rational(1, 10**6)))
    (ev,) = check_identity(ident, levels=[Level.FLOAT]).evidence
    assert not ev.holds


def test_overflow_at_the_drawn_point_is_retried_closer_to_zero():
    """exp(800 a) overflows float64 at |a| ~ 1: the float level must redraw at a smaller scale and say so."""
    ident = Identity(lambda d: {"a": (1, 1)}, lambda e, d: sympy.Matrix([sympy.exp(800 * e["a"][0, 0])]),
                     lambda e, d: sympy.Matrix([sympy.exp(800 * e["a"][0, 0])]), ({"n": 1},),
                     reference=lambda a, d: np.exp(800 * np.abs(a["a"]) * np.sign(a["a"])),
                     levels=(Level.FLOAT,))
    details = [check_identity(ident, seed=s).evidence[0] for s in range(6)]
    assert all(ev.holds for ev in details)
    assert any("scaled by 0.0625" in ev.detail for ev in details)
    assert not any("scaled by 1 " in ev.detail for ev in details)


# --- DAG walks agree with SymPy's tree walks (``atoms``) -------------------------------------------------

_x, _y = sympy.symbols("x y")
_LEAVES = [_x, _y, sympy.Integer(2), sympy.Rational(1, 3), sympy.pi]
_WRAPS = [SIGMA, sympy.exp, sympy.sqrt, sympy.Abs, sympy.Function("g"), lambda a: sympy.Max(a, _y),
          lambda a: a**2, lambda a: a**-1, lambda a: -a]


@st.composite
def _shared_expressions(draw):
    nodes = list(_LEAVES)
    for _ in range(draw(st.integers(1, 12))):
        a, b = draw(st.sampled_from(nodes)), draw(st.sampled_from(nodes))
        op = draw(st.sampled_from(["add", "mul", "wrap"]))
        nodes.append(a + b if op == "add" else a * b if op == "mul" else draw(st.sampled_from(_WRAPS))(a))
    return nodes[-1]


@settings(max_examples=150, deadline=None)
@given(_shared_expressions())
def test_dag_walks_agree_with_sympy_atoms(expr):
    by_atoms = (all(f.func == SIGMA for f in expr.atoms(sympy.Function))
                and all(p.exp.is_Integer for p in expr.atoms(sympy.Pow)) and not expr.has(sympy.Max))
    assert is_polynomial(expr) == by_atoms
    assert sigma_arguments([expr]) == {a for a in expr.atoms(sympy.core.function.AppliedUndef) if a.func == SIGMA}
