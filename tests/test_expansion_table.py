"""Tests for symuat.expansion.symbols / residual / table (seed 001, Eq. 20, Figure 2)."""

from __future__ import annotations

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.errors import ArgumentTypeError, InvalidValueError, SymuatError
from symuat.expansion import (
    INPUT,
    A_name,
    R_name,
    U_name,
    V_name,
    beta_name,
    c_name,
    canonical_expand,
    closed_forms,
    layer_symbols,
    nc_symbol,
    nested_form,
    residual_term,
    sigma,
    substitution_table,
)

X0 = INPUT


def S(name: str) -> sympy.Symbol:
    return nc_symbol(name)


# --- symbols ---------------------------------------------------------------------------


def test_layer_symbol_names_are_the_binding_contract():
    s = layer_symbols(7)
    assert s.names == ("W'_{7,1}", "W'_{7,2}", "W'_{7,3}", "b'_{7,2}", "b'_{7,3}")
    assert X0.name == "x'_{0}"
    assert all(not sym.is_commutative for sym in s.all + (X0,))


def test_symbols_do_not_commute_and_sigma_is_noncommutative():
    s = layer_symbols(1)
    assert s.W1 * s.W2 != s.W2 * s.W1
    app = sigma(s.W2 * X0)
    assert not app.is_commutative
    assert s.W1 * app != app * s.W1


@pytest.mark.parametrize("bad,error", [(0, InvalidValueError), (-1, InvalidValueError),
                                       (1.5, ArgumentTypeError), (True, ArgumentTypeError), (None, ArgumentTypeError)])
def test_bad_layer_index_and_depth(bad, error):
    with pytest.raises(error):
        layer_symbols(bad)
    with pytest.raises(error, match="depth"):
        nested_form(bad)
    with pytest.raises(error, match="depth"):
        substitution_table(bad)


def test_errors_are_symuat_and_value_errors():
    with pytest.raises(SymuatError):
        substitution_table(0)
    with pytest.raises(ValueError):
        substitution_table(0)


# --- residual --------------------------------------------------------------------------


def test_residual_term_is_eq20():
    s = layer_symbols(3)
    x = S("x")
    expected = s.W1 * x + s.b3 + s.W3 * sigma(s.W2 * x + s.b2)
    assert residual_term(3, x) == expected


def test_nested_form_composes():
    assert nested_form(1) == residual_term(1, X0)
    assert nested_form(3) == residual_term(3, residual_term(2, residual_term(1, X0)))


# --- table structure -------------------------------------------------------------------


def test_box_zero_and_box_sizes():
    t = substitution_table(4)
    assert [r.name for r in t.box(0)] == [A_name(0), c_name(0), R_name(0)]
    assert [r.definition for r in t.box(0)] == [1, 0, 0]
    for i in range(1, 5):
        names = [r.name for r in t.box(i)]
        assert names == [A_name(i), c_name(i)] + [U_name(j, i) for j in range(1, i + 1)] + [
            V_name(i),
            beta_name(i),
            R_name(i),
        ]
    with pytest.raises(InvalidValueError):
        t.box(5)
    with pytest.raises(InvalidValueError):
        t.definition("nope")


def test_table_rows_match_spec_rules():
    """The mechanically derived rows equal the SPEC section 5 rules, typed here independently."""
    L = 5
    t = substitution_table(L)
    s1 = layer_symbols(1)
    assert t.definition(A_name(1)) == s1.W1
    assert t.definition(c_name(1)) == s1.b3
    assert t.definition(U_name(1, 1)) == s1.W3
    assert t.definition(V_name(1)) == s1.W2
    assert t.definition(beta_name(1)) == s1.b2
    for i in range(2, L + 1):
        s = layer_symbols(i)
        A, c, R = S(A_name(i - 1)), S(c_name(i - 1)), S(R_name(i - 1))
        assert t.definition(A_name(i)) == s.W1 * A
        assert t.definition(c_name(i)) == s.W1 * c + s.b3
        for j in range(1, i):
            assert t.definition(U_name(j, i)) == s.W1 * S(U_name(j, i - 1))
        assert t.definition(U_name(i, i)) == s.W3
        assert t.definition(V_name(i)) == s.W2 * A
        assert t.definition(beta_name(i)) == s.W2 * c + s.b2 + s.W2 * R
    for i in range(1, L + 1):
        R_expected = sum(
            (S(U_name(j, i)) * sigma(S(V_name(j)) * X0 + S(beta_name(j))) for j in range(1, i + 1)), sympy.S.Zero
        )
        assert t.definition(R_name(i)) == R_expected


def test_definitions_only_use_earlier_names():
    t = substitution_table(6)
    seen = set()
    for row in t.rows:
        for sym in row.definition.free_symbols:
            if sym.name in t.names:
                assert sym.name in seen, (row.name, sym.name)
        seen.add(row.name)


def test_definitions_stay_small():
    """Shared sub-expressions: no definition grows with depth except R_i (i terms)."""
    t = substitution_table(20)
    for row in t.rows:
        n_ops = sympy.count_ops(row.definition)
        assert n_ops <= (5 * row.layer + 5 if row.name.startswith("R_") else 6), (row.name, n_ops)


def test_form_is_eq33_in_named_symbols():
    t = substitution_table(3)
    expected = S(A_name(3)) * X0 + S(c_name(3)) + t.definition(R_name(3))
    assert t.form() == expected
    assert t.form(0) == X0
    assert "[layer 3]" in t.to_text()


@pytest.mark.parametrize("L", [1, 2, 3])
def test_unfolded_table_equals_naive_expansion(L):
    """Independent computation: full sympy.expand of the nested network vs. the unfolded table."""
    t = substitution_table(L)
    naive = sympy.expand(nested_form(L), deep=True)
    assert sympy.expand(t.unfold(t.form()), deep=True) == naive


def test_depth2_matches_paper_eq23_with_its_substitutions():
    """Eq. 22-23 of seed 001 with the paper's renamings written out by hand."""
    s1, s2 = layer_symbols(1), layer_symbols(2)
    first = s1.W3 * sigma(s1.W2 * X0 + s1.b2)
    b22 = (s2.W2 * s1.b3 + s2.b2) + s2.W2 * first
    eq23 = (s2.W1 * s1.W1 * X0 + s2.W1 * s1.b3 + s2.b3) + s2.W1 * first + s2.W3 * sigma(s2.W2 * s1.W1 * X0 + b22)
    t = substitution_table(2)
    assert canonical_expand(t.unfold(t.form())) == canonical_expand(eq23)


@settings(max_examples=10, deadline=None)
@given(st.integers(min_value=1, max_value=12))
def test_closed_forms_hold(L):
    forms = closed_forms(L)
    assert len(forms) == L + 1
    assert all(cf.holds for cf in forms)
    W1 = [layer_symbols(k).W1 for k in range(1, L + 1)]
    assert forms[0].unfolded == sympy.Mul(*reversed(W1))


def test_closed_forms_detect_a_wrong_row():
    import dataclasses

    t = substitution_table(3)
    s2 = layer_symbols(2)
    rows = tuple(
        dataclasses.replace(r, definition=S(A_name(1)) * s2.W1) if r.name == A_name(2) else r for r in t.rows
    )
    bad = type(t)(t.depth, rows)
    forms = closed_forms(3, bad)
    assert not forms[0].holds
    assert all(cf.holds for cf in forms[1:])


def test_duplicate_row_names_rejected():
    t = substitution_table(1)
    with pytest.raises(InvalidValueError):
        type(t)(1, t.rows + t.rows[:1])


def test_cyclic_table_is_a_derivation_error():
    """A table whose rows refer to each other in a cycle is rejected clearly, not with a RecursionError."""
    import pytest

    from symuat.errors import DerivationError
    from symuat.expansion import SubstitutionTable, TableRow, substitution_table
    from symuat.expansion.symbols import nc_symbol
    from symuat.expansion.table import A_name

    table = substitution_table(2)
    rows = [TableRow(r.name, nc_symbol(A_name(2)) if r.name == A_name(1) else r.definition, r.layer, r.kind)
            for r in table.rows]
    cyclic = SubstitutionTable(2, tuple(rows))
    with pytest.raises(DerivationError, match="cyclic"):
        cyclic.unfold(cyclic.form())
