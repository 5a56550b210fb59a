"""The audit's status rules (SPEC §6–7), each pinned by a small synthetic entry."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import sympy

from symuat import (
    SIGMA,
    Correction,
    Denial,
    Entry,
    Identity,
    Level,
    Readings,
    Source,
    Status,
    audit_entry,
    dims_grid,
    load_entries,
)
from symuat.errors import UnsupportedError
from symuat.evidence.fields import MERSENNE_61, PrimeField, RealField, evaluate

SHAPES = lambda d: {"W": (d["n"], d["n"]), "x": (d["n"], 1)}  # noqa: E731
GOOD = dict(shapes=SHAPES, lhs=lambda e, d: e["W"] * e["x"], rhs=lambda e, d: e["W"] * e["x"],
            dims=dims_grid(n=(1, 2)), reference=lambda a, d: a["W"] @ a["x"])
BAD_RHS = lambda e, d: e["W"].T * e["x"]  # noqa: E731


def _entry(claim, status, correction=None):
    return Entry("duat:eq5", Source("duat", "Eq. 5"), "x", status, claim, correction=correction)


def test_without_symbolic_level_the_status_is_checked_not_proved():
    checked = Identity(**GOOD, levels=(Level.EXACT, Level.FLOAT))
    assert audit_entry(_entry(checked, Status.CHECKED)).agrees
    assert not audit_entry(_entry(checked, Status.PROVED)).agrees
    assert audit_entry(_entry(Identity(**GOOD), Status.PROVED)).agrees


def test_erratum_needs_a_proved_correction():
    bad = Identity(**{**GOOD, "rhs": BAD_RHS})
    ok = audit_entry(_entry(bad, Status.ERRATUM, Correction("Wx", Identity(**GOOD))))
    assert ok.agrees and ok.counterexample["dims"] == {"n": 2}
    unproved = audit_entry(_entry(bad, Status.ERRATUM, Correction("Wx", bad)))
    assert unproved.computed is None and "not proved" in unproved.reason


def test_denial_of_a_true_identity_is_an_erratum_with_the_proof_as_witness():
    record = audit_entry(_entry(Denial(Identity(**GOOD)), Status.ERRATUM, Correction("Wx", Identity(**GOOD))))
    assert record.agrees
    assert "expands to 0" in record.counterexample["proof"]


def test_convention_reports_the_first_failing_reading():
    entry = next(e for e in load_entries() if e.id == "uat-arxiv:sec3.2.claim6")
    record = audit_entry(entry)
    assert record.computed is Status.CONVENTION and record.counterexample["reading"] == "right"
    readings = Readings("r", {"a": Identity(**GOOD), "b": Identity(**{**GOOD, "rhs": BAD_RHS})})
    assert audit_entry(_entry(readings, Status.CONVENTION)).counterexample["reading"] == "b"


def test_exact_level_names_the_wrong_entry():
    def rhs(e, d):
        out = sympy.Matrix(e["W"] * e["x"])
        if len(out) >= 2:
            out[1, 0] += 1
        return out

    ev = audit_entry(_entry(Identity(**{**GOOD, "rhs": rhs}), Status.PROVED)).evidence
    exact = next(e for e in ev if e.level is Level.EXACT)
    assert "entry (2,1)" in exact.detail and exact.counterexample["entry"] == [2, 1]


def test_prime_field_is_prime_and_frozen():
    assert sympy.isprime(MERSENNE_61)
    with pytest.raises(dataclasses.FrozenInstanceError):
        PrimeField(seed=0).seed = 1


def test_only_sigma_is_an_uninterpreted_function():
    x = sympy.Symbol("x")
    for fld in (PrimeField(seed=0), RealField()):
        with pytest.raises(UnsupportedError, match="cannot evaluate"):
            evaluate(sympy.Function("f")(x), {x: 1}, fld)
    assert np.isclose(evaluate(SIGMA(x), {x: 0.0}, RealField()), 0.5)
    with pytest.raises(UnsupportedError, match="not symuat.SIGMA"):  # a look-alike is named, not evaluated
        evaluate(sympy.Function("sigma")(x), {x: 0.0}, RealField())


def test_entries_that_share_a_claim_share_its_sides():
    from symuat import audit
    from symuat.ledger.parallel import audit_data

    built = []

    def lhs(e, d):
        if isinstance(d["n"], int):  # not the all-sizes level's symbolic size
            built.append(d["n"])
        return e["W"] * e["x"]

    shared = Identity(**{**GOOD, "lhs": lhs})
    twin = Identity(**{**GOOD, "lhs": lhs})  # an equal claim, but another object: built again
    entries = [Entry(f"duat:eq{k}", Source("duat", f"Eq. {k}"), "x", Status.PROVED, c)
               for k, c in ((5, shared), (6, shared), (7, twin))]
    records = audit(entries)
    assert all(r.agrees for r in records)
    assert sorted(built) == [1, 1, 2, 2]  # n = 1, 2 (the check point is n = 2), once per claim object
    built.clear()
    audit_data(entries, jobs=1)
    assert sorted(built) == [1, 1, 2, 2]


def test_every_refutation_in_the_json_carries_its_witness_and_who_rechecked_it():
    """Each ✗ of the all-sizes, symbolic, exact and float levels: the point and the re-checking code, also inside
    readings and after the audit cache's round trip (docs/ledger-format.md)."""
    from symuat.ledger.snapshot import record_from_data, record_to_data

    bad = Identity(**{**GOOD, "rhs": BAD_RHS})
    readings = Readings("two readings", {"good": Identity(**GOOD), "bad": bad})
    for claim, status in ((bad, Status.ERRATUM), (readings, Status.CONVENTION)):
        record = audit_entry(_entry(claim, status, Correction("Wx", Identity(**GOOD))))
        failed = [ev for ev in record.to_json()["evidence"] if ev["holds"] is False]
        assert {ev["level"] for ev in failed} == {"all-sizes", "symbolic", "exact", "float"}
        for ev in failed:
            w = ev["witness"]
            assert set(w) == {"field", "point", "lhs", "rhs", "checked_by"} and w["point"] and w["lhs"] != w["rhs"]
        again = record_from_data(record_to_data(record))
        assert again.to_json()["evidence"] == record.to_json()["evidence"]
    shapes = Identity(**{**GOOD, "rhs": lambda e, d: e["x"].T * e["W"]})
    evidence = audit_entry(_entry(shapes, Status.PROVED)).to_json()["evidence"]
    ev = next(ev for ev in evidence if ev["level"] == "symbolic")
    assert ev["holds"] is False and ev["witness"]["field"] == "sizes"
    assert ev["witness"]["point"] == {"n": "2"}  # the sides are both 1 x 1 at n = 1
