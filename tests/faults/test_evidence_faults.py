"""Fault injection at the evidence levels: true statements that cancel to exact 0 are not falsely rejected, a
statement proved only on its grid says so everywhere, and one refuted above its grid gets a definite verdict."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import sympy
from sympy.combinatorics import Permutation

from symuat import Entry, Identity, Level, Source, Status, dims_grid, identity_matrix, kron, ones
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
