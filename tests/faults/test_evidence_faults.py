"""Fault injection at the evidence levels: true statements that cancel to exact 0 are not falsely rejected, a
statement proved only on its grid says so everywhere, and one refuted above its grid gets a definite verdict."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest
import sympy
from sympy.combinatorics import Permutation

from symuat import Entry, Identity, Level, Source, Status, check_identity, dims_grid, identity_matrix, kron, ones
from symuat.errors import ArgumentTypeError, InvalidValueError
from symuat.ledger.audit import audit_entry
from symuat.ledger.text import explain, table


def _entry(claim, status=Status.PROVED, statement="lhs = rhs") -> Entry:
    return Entry("duat:eq7", Source("duat", "Eq. 7"), statement, status, claim)


def _centre(M):
    return identity_matrix(M) - ones(M) * ones(M).T / M


#: true identities whose symbolic sides cancel to exact 0 while a float reference keeps a rounding residue
CANCELLING = {
    "C_M 1 x = 0": Identity(
        shapes=lambda d: {"x": (1, 1)}, lhs=lambda e, d: _centre(d["M"]) * ones(d["M"]) * e["x"],
        rhs=lambda e, d: sympy.zeros(d["M"], 1), dims=dims_grid(M=(3, 5, 7)),
        reference=lambda x: (np.eye(7) - np.ones((7, 7)) / 7) @ np.ones((7, 1)) @ x),
    "C_M 1 1^T X = 0": Identity(
        shapes=lambda d: {"X": (1, d["N"])}, lhs=lambda e, d: _centre(d["M"]) * ones(d["M"]) * e["X"],
        rhs=lambda e, d: sympy.zeros(d["M"], d["N"]), dims=dims_grid(M=(3, 6), N=(2,)),
        reference=lambda X: (np.eye(6) - np.ones((6, 6)) / 6) @ np.ones((6, 1)) @ X),
    "A⊗B − B⊗A = 0 (1×1)": Identity(
        shapes=lambda d: {"A": (1, 1), "B": (1, 1)}, lhs=lambda e, d: kron(e["A"], e["B"]) - kron(e["B"], e["A"]),
        rhs=lambda e, d: sympy.zeros(1, 1), dims=dims_grid(N=(1,)),
        reference=lambda A, B: np.kron(A * 0.1, B * 3.0) / 0.3 - np.kron(B, A)),
}


@pytest.mark.parametrize("case", sorted(CANCELLING))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_identity_that_cancels_to_zero_is_proved(case, seed):
    record = audit_entry(_entry(CANCELLING[case]), seed=seed)
    assert record.computed is Status.PROVED and record.agrees, record.evidence
    assert all(ev.holds for ev in record.evidence if ev.level is Level.FLOAT)


def _standard(mats):
    """S₄ = Σ_π sgn(π) A_π1 A_π2 A_π3 A_π4: 0 on 1×1 and 2×2 matrices (Amitsur–Levitzki), not on 3×3."""
    terms = [Permutation(list(p)).signature() * (mats[p[0]] * mats[p[1]] * mats[p[2]] * mats[p[3]])
             for p in itertools.permutations(range(4))]
    return sum(terms[1:], terms[0])


S4 = Identity(shapes=lambda d: {k: (d["n"], d["n"]) for k in "ABCD"},
              lhs=lambda e, d: _standard([e[k] for k in "ABCD"]), rhs=lambda e, d: sympy.zeros(d["n"], d["n"]),
              dims=dims_grid(n=(1, 2)))


def test_a_statement_true_on_its_grid_and_false_above_gets_a_definite_verdict():
    record = audit_entry(_entry(S4, statement="S4(A, B, C, D) = 0"))
    assert record.computed is None and not record.agrees
    assert record.computed_label == "refuted"
    assert record.reason.startswith("false above the grid of the other levels") and "n=3" in record.reason
    assert record.counterexample["dims"] == {"n": 3}
    assert "computed refuted: false above the grid" in table([record])
    assert "recorded proved; computed refuted; DISAGREES" in explain(record)


def test_the_same_statement_recorded_as_checked_is_reported_as_refuted():
    record = audit_entry(_entry(S4, status=Status.CHECKED))
    assert record.computed is None and record.computed_label == "refuted" and not record.agrees
    assert "no correction is recorded" in record.reason


OUTSIDE = Identity(shapes=lambda d: {"A": (d["n"], d["n"])},
                   lhs=lambda e, d: e["A"] + sympy.Matrix(d["n"], d["n"], lambda i, j: 0),  # entry-by-entry: opaque
                   rhs=lambda e, d: e["A"], dims=dims_grid(n=(1, 2)))


def test_a_statement_proved_only_on_its_grid_says_so_everywhere():
    record = audit_entry(_entry(OUTSIDE))
    assert record.computed is Status.PROVED and record.agrees
    undecided = record.evidence[0]
    assert undecided.level is Level.ALL_SIZES and undecided.holds is None
    assert undecided.detail.startswith("undecided: ") and undecided.grid == {"n": 2}
    assert record.status_label == record.computed_label == "proved (grid n ≤ 2)"
    assert table([record]).splitlines()[2].startswith("proved (grid n ≤ 2)  duat:eq7")
    assert "all-sizes ?" in table([record])
    assert "computed proved (grid n ≤ 2)" in explain(record) and "all-sizes ?  undecided: " in explain(record)
    data = json.loads(json.dumps(record.to_json()))
    assert data["grid"] == {"n": 2} and data["evidence"][0]["holds"] is None
    assert data["evidence"][0]["detail"].startswith("undecided: ")


def test_a_statement_proved_for_every_size_has_no_grid_qualifier():
    claim = Identity(shapes=lambda d: {"A": (d["n"], d["n"])}, lhs=lambda e, d: e["A"] + e["A"],
                     rhs=lambda e, d: 2 * e["A"], dims=dims_grid(n=(1, 2)))
    record = audit_entry(_entry(claim))
    assert record.evidence[0].holds is True and record.grid is None and record.status_label == "proved"


# --------------------------------------------------------------------------------------------------------------
# Max, exp, unsupported functions, overflow, hypotheses: a ✗ only with a witness, never an aborted audit
# --------------------------------------------------------------------------------------------------------------

SCALARS = {"a": (), "b": ()}
ONE = ({"d": 1},)


def _levels(claim, seed=0) -> dict[str, tuple]:
    return {ev.level.value: (ev.holds, ev.witness, ev.detail) for ev in check_identity(claim, seed=seed).evidence}


def test_a_true_max_statement_is_proved_and_every_level_evaluates_max():
    claim = Identity(SCALARS, lambda a, b: sympy.Max(a, b) + sympy.Min(a, b), lambda a, b: a + b, ONE)
    got = _levels(claim)
    assert got["symbolic"][0] is True and "case split" in got["symbolic"][2]
    assert got["exact"][0] is True and "points of Q" in got["exact"][2]
    assert got["float"][0] is True
    assert audit_entry(_entry(claim)).computed is Status.PROVED


def test_a_false_max_statement_is_refuted_with_an_exact_rational_witness():
    got = _levels(Identity(SCALARS, lambda a, b: sympy.Max(a, b), lambda a: a, ONE))
    for level in ("symbolic", "exact"):
        holds, witness, _ = got[level]
        assert holds is False and witness.field == "Q" and "SymPy's exact rationals" in witness.checked_by
        a, b = (Fraction(witness.point[k]) for k in "ab")
        assert max(a, b) != a and Fraction(witness.lhs) == max(a, b) and Fraction(witness.rhs) == a


def test_the_flash_attention_rescaling_is_proved_and_exp_is_undecided_only_in_exact_arithmetic():
    m = lambda a, b: sympy.Max(a, b)  # noqa: E731
    claim = Identity({**SCALARS, "u": (), "v": ()},
                     lambda a, b, u, v: (sympy.exp(a - m(a, b)) * u + sympy.exp(b - m(a, b)) * v)
                     / (sympy.exp(a - m(a, b)) + sympy.exp(b - m(a, b))),
                     lambda a, b, u, v: (sympy.exp(a) * u + sympy.exp(b) * v) / (sympy.exp(a) + sympy.exp(b)), ONE)
    got = _levels(claim)
    assert got["symbolic"][0] is True and got["float"][0] is True
    assert got["exact"][0] is None and got["exact"][2].startswith("undecided: ") and "no exact value" in got["exact"][2]
    assert audit_entry(_entry(claim)).computed is Status.PROVED


def test_a_false_exp_statement_is_refuted_with_disjoint_mpmath_enclosures():
    got = _levels(Identity(SCALARS, lambda a, b: sympy.exp(a) * sympy.exp(b), lambda a, b: sympy.exp(a * b), ONE))
    for level in ("symbolic", "float"):
        holds, witness, _ = got[level]
        assert holds is False and witness.field.startswith("R") and "disjoint enclosures" in witness.checked_by


def test_a_function_no_level_evaluates_is_undecided_everywhere_and_never_false():
    f = sympy.Function("f")
    claim = Identity(SCALARS, lambda a: f(a), lambda a: a, ONE)
    got = _levels(claim)
    assert {k: v[0] for k, v in got.items()} == {"all-sizes": None, "symbolic": None, "exact": None, "float": None}
    assert "no level evaluates f" in got["symbolic"][2]
    record = audit_entry(_entry(claim))
    assert record.computed is None and record.reason.startswith("undecided at every level")


def test_an_audit_with_max_exp_and_unknown_functions_is_not_aborted():
    from symuat import audit

    f = sympy.Function("f")
    claims = [Identity(SCALARS, lambda a, b: sympy.Max(a, b), lambda a, b: sympy.Max(b, a), ONE),
              Identity(SCALARS, lambda a: sympy.exp(a), lambda a: sympy.exp(a), ONE),
              Identity(SCALARS, lambda a: f(a), lambda a: f(a) + 0 * a, ONE)]
    entries = [Entry(f"duat:eq{n}", Source("duat", f"Eq. {n}"), "lhs = rhs", Status.PROVED, c)
               for n, c in zip((7, 8, 9), claims)]
    assert [r.computed for r in audit(entries)] == [Status.PROVED, Status.PROVED, Status.PROVED]


def test_float_overflow_inside_a_true_statement_is_decided_by_mpmath_intervals():
    claim = Identity(SCALARS, lambda a: sympy.exp(a + 2000) * sympy.exp(-a - 2000), lambda a: sympy.Integer(1), ONE)
    holds, witness, detail = _levels(claim)["float"]
    assert holds is True and witness is None and "float64 overflows" in detail and "mpmath interval" in detail


def test_float_overflow_inside_a_false_statement_is_refuted_with_a_witness():
    claim = Identity(SCALARS, lambda a: sympy.exp(a + 2000) * sympy.exp(-a - 2000), lambda a: sympy.Integer(2), ONE)
    holds, witness, detail = _levels(claim)["float"]
    assert holds is False and witness.field.startswith("R") and "float64 overflows" in detail


def test_an_undeclared_sign_refutes_with_a_negative_witness_and_a_declared_one_proves():
    free = Identity({"a": ()}, lambda a: sympy.sqrt(a ** 2), lambda a: a, ONE)
    got = _levels(free)
    assert got["symbolic"][0] is False and float(got["symbolic"][1].point["a"]) < 0
    assert got["float"][0] is False and float(got["float"][1].point["a"]) < 0
    declared = Identity({"a": ()}, lambda a: sympy.sqrt(a ** 2), lambda a: a, ONE, assume=("a > 0",))
    got = _levels(declared)
    assert got["symbolic"][0] is True and got["float"][0] is True  # SymPy itself writes sqrt(a**2) = a for a > 0
    assert declared.scope == "Assumes $a > 0$." and "Assumes $a > 0$." in got["symbolic"][2]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_an_order_hypothesis_is_honoured_at_every_seed(seed):
    declared = Identity(SCALARS, lambda a, b: sympy.Max(a, b), lambda b: b, ONE, assume=("a <= b",))
    assert {k: v[0] for k, v in _levels(declared, seed).items()} == {
        "all-sizes": None, "symbolic": True, "exact": True, "float": True}
    free = Identity(SCALARS, lambda a, b: sympy.Max(a, b), lambda b: b, ONE)
    holds, witness, _ = _levels(free, seed)["symbolic"]
    assert holds is False and Fraction(witness.point["a"]) > Fraction(witness.point["b"])


def test_an_integer_hypothesis_proves_what_is_undecided_without_it():
    k = {"k": ()}
    got = _levels(Identity(k, lambda k: (-1) ** (2 * k), lambda k: sympy.Integer(1), ONE))
    assert got["symbolic"][0] is None and got["float"][0] is None  # (-1)^x has no real value for most x
    got = _levels(Identity(k, lambda k: (-1) ** (2 * k), lambda k: sympy.Integer(1), ONE, assume=("k integer",)))
    assert got["symbolic"][0] is True and got["float"][0] is True


def test_a_scalar_is_a_symbol_of_its_own_and_its_reference_value_a_float():
    seen = {}

    def reference(a, X):
        seen["a"] = a
        return a * X

    claim = Identity({"a": (), "X": ("n", "n")}, lambda a, X: a * X, lambda a, X: X * a, dims_grid(n=(1, 2)),
                     reference=reference)
    inst = claim.instantiate({"n": 2})
    assert isinstance(inst.env["a"], sympy.Symbol) and inst.env["a"].name == "a"
    assert check_identity(claim).holds and isinstance(seen["a"], float)


@pytest.mark.parametrize("assume,match", [
    (("c > 0",), "'c' in 'c > 0' is not a declared variable"),
    (("a >> 0",), "cannot read 'a >> 0'"),
    (("a > 0", "a < 0"), "a is both positive and negative"),
    (("a < a",), "relates a to itself"),
    ("a > 0", "assume must be a tuple"),
])
def test_a_hypothesis_that_cannot_be_honoured_is_refused_by_name(assume, match):
    with pytest.raises((InvalidValueError, ArgumentTypeError), match=match):
        Identity(SCALARS, lambda a: a, lambda a: a, ONE, assume=assume)


def test_a_reading_no_level_decides_leaves_the_entry_without_a_status():
    from symuat import Readings

    f = sympy.Function("f")
    undecided = Identity(SCALARS, lambda a: f(a), lambda a: a, ONE)
    holds = Identity(SCALARS, lambda a: a, lambda a: a, ONE)
    record = audit_entry(Entry("duat:eq7", Source("duat", "Eq. 7"), "lhs = rhs", Status.CONVENTION,
                               Readings("a convention", {"r1": undecided, "r2": holds})))
    assert record.computed is None and record.reason.startswith("reading 'r1' is undecided: undecided: ")
