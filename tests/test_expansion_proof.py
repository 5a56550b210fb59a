"""Tests for symuat.expansion.proof: the checks hold on the derived table and FAIL on corrupted ones."""

from __future__ import annotations

import dataclasses

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.errors import InvalidValueError
from symuat.expansion import (
    INPUT,
    A_name,
    R_name,
    SubstitutionTable,
    U_name,
    V_name,
    beta_name,
    c_name,
    induction_proof,
    layer_symbols,
    nc_symbol,
    sigma,
    substitution_table,
    verify_depth,
    verify_depth_naive,
    verify_table,
)

S = nc_symbol


def corrupt(table: SubstitutionTable, name: str, definition) -> SubstitutionTable:
    """A copy of ``table`` with the row ``name`` redefined."""
    assert name in table.names
    rows = tuple(dataclasses.replace(r, definition=definition) if r.name == name else r for r in table.rows)
    return SubstitutionTable(table.depth, rows)


def corruptions(i: int) -> dict:
    """Single-rule corruptions of box ``i`` (i >= 2)."""
    s = layer_symbols(i)
    A, c, R = S(A_name(i - 1)), S(c_name(i - 1)), S(R_name(i - 1))
    return {
        "V uses A_i instead of A_{i-1}": (V_name(i), s.W2 * S(A_name(i))),
        "beta drops W2 R_{i-1}": (beta_name(i), s.W2 * c + s.b2),
        "A product order swapped": (A_name(i), A * s.W1),
        "U carried product order swapped": (U_name(1, i), S(U_name(1, i - 1)) * s.W1),
        "c drops b3": (c_name(i), s.W1 * c),
        "beta uses W1 instead of W2 on R": (beta_name(i), s.W2 * c + s.b2 + s.W1 * R),
        "new U uses W2": (U_name(i, i), s.W2),
        "R_i drops its last sigma term": (
            R_name(i),
            sympy.Add(*(S(U_name(j, i)) * sigma(S(V_name(j)) * INPUT + S(beta_name(j))) for j in range(1, i))),
        ),
    }


# --- induction ------------------------------------------------------------------------


def test_induction_proof_holds():
    p = induction_proof()
    assert p.holds, p.detail
    assert p.base.holds and p.step.holds and p.lemma.holds
    assert p.lhs == p.rhs
    assert p.rule_layer == 3


@pytest.mark.parametrize("rule_layer", [2, 4])
def test_induction_proof_other_rule_boxes(rule_layer):
    assert induction_proof(rule_layer=rule_layer).holds


@pytest.mark.parametrize("label", sorted(corruptions(3)))
def test_induction_proof_fails_on_corrupted_rule(label):
    name, definition = corruptions(3)[label]
    p = induction_proof(corrupt(substitution_table(3), name, definition), rule_layer=3)
    assert not p.holds, label
    assert "FAILS" in p.detail or "not" in p.detail


def test_induction_base_case_fails_on_corrupted_layer1():
    s = layer_symbols(1)
    bad = corrupt(substitution_table(3), beta_name(1), s.b3)
    p = induction_proof(bad)
    assert not p.base.holds and not p.holds


def test_induction_proof_bad_arguments():
    with pytest.raises(InvalidValueError):
        induction_proof(rule_layer=1)
    with pytest.raises(InvalidValueError):
        induction_proof(substitution_table(2), rule_layer=3)


# --- local depth verification -----------------------------------------------------------


@settings(max_examples=8, deadline=None)
@given(st.integers(min_value=1, max_value=16))
def test_verify_depth_holds(L):
    v = verify_depth(L)
    assert v.holds, v.detail
    assert len(v.layers) == L and not v.failures


@pytest.mark.parametrize("label", sorted(corruptions(4)))
@pytest.mark.parametrize("verifier", ["local", "naive"])
def test_verification_fails_on_corrupted_rule(label, verifier):
    name, definition = corruptions(4)[label]
    bad = corrupt(substitution_table(5), name, definition)
    if verifier == "local":
        v = verify_table(bad)
        assert not v.holds
        # the first failing box is the corrupted one (R_4 is also the input form of box 5)
        assert v.failures[0].layer == 4
        assert {lc.layer for lc in v.failures} <= {4, 5}
    else:
        assert not verify_depth_naive(5, bad).holds


def test_well_foundedness_detects_forward_reference():
    t = substitution_table(3)
    s = layer_symbols(2)
    bad = corrupt(t, V_name(2), s.W2 * S(A_name(3)))
    v = verify_table(bad)
    assert not v.holds
    assert not v.layers[1].well_founded


def test_verify_depth_detects_corruption_in_layer1():
    bad = corrupt(substitution_table(3), c_name(1), layer_symbols(1).b2)
    v = verify_depth(3, bad)
    assert [lc.layer for lc in v.failures] == [1]


def test_verify_depth_rejects_mismatched_table():
    with pytest.raises(InvalidValueError):
        verify_depth(3, substitution_table(2))
    with pytest.raises(InvalidValueError, match="depth"):
        verify_depth(0)


@pytest.mark.parametrize("L", [1, 2, 3, 4])
def test_naive_verification_holds(L):
    assert verify_depth_naive(L).holds


def test_layer_check_sides_are_expanded_and_equal():
    v = verify_depth(3)
    lc = v.layers[2]
    assert lc.identity.lhs == lc.identity.rhs
    assert lc.identity.lhs.is_Add
