"""The MoE substitution table (one term family per expert) and its every-depth proof."""

from __future__ import annotations

import pytest
import sympy

from symuat.errors import DerivationError, InvalidValueError
from symuat.expansion import INPUT, canonical_expand, layer_symbols, nc_symbol, sigma
from symuat.expansion.moe import (
    derive_moe_table,
    expert_symbols,
    moe_induction,
    moe_residual_term,
)
from symuat.expansion.table import U_name, V_name, beta_name

EXPERTS = ("1", "2", "s")


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_the_unfolded_table_is_the_nested_network(gated, depth):
    layer = moe_residual_term(EXPERTS, gated)
    x = INPUT
    for i in range(1, depth + 1):
        x = layer(i, x)
    t = derive_moe_table(depth, layer, EXPERTS, gated=gated)
    assert canonical_expand(x - t.unfold(t.form())) == 0


def test_the_rules_are_the_papers_per_expert():
    t = derive_moe_table(3, moe_residual_term(EXPERTS), EXPERTS)
    W1 = layer_symbols(3).W1
    for e in EXPERTS:
        p = expert_symbols(3, e)
        assert t.definition(V_name(f"3,{e}")) == p["W2"] * nc_symbol(r"\tilde{A}_{2}")
        assert t.definition(U_name(f"3,{e}", 3)) == p["W3"]
        assert t.definition(U_name(f"1,{e}", 3)) == W1 * nc_symbol(U_name(f"1,{e}", 2))
        assert canonical_expand(t.definition(beta_name(f"3,{e}")) - p["W2"] * (nc_symbol(r"\tilde{c}_{2}")
                                + nc_symbol("R_{2}")) - p["b2"]) == 0
    assert len(sympy.Add.make_args(t.definition("R_{3}"))) == 3 * len(EXPERTS)


@pytest.mark.parametrize("gated", [False, True])
def test_the_induction_holds(gated):
    proof = moe_induction(moe_residual_term(EXPERTS, gated), EXPERTS, gated=gated)
    assert proof.problems == () and proof.holds() and proof.cases == ("base", "step", "lemma")


def test_a_layer_whose_experts_share_a_term_is_refused():
    def merged(i, x):  # one application that mixes two experts' symbols
        s, a, b = layer_symbols(i), expert_symbols(i, "1"), expert_symbols(i, "2")
        return s.W1 * x + s.b3 + a["W3"] * sigma(a["W2"] * x + b["W2"] * x + a["b2"])
    with pytest.raises(DerivationError, match="belongs to experts"):
        derive_moe_table(1, merged, ("1", "2"))


def test_a_layer_missing_an_expert_is_refused():
    with pytest.raises(DerivationError, match="one new application per expert"):
        derive_moe_table(1, moe_residual_term(("1",)), ("1", "2"))


@pytest.mark.parametrize("experts", [(), ("1", "1"), ("",), (1,)])
def test_bad_expert_labels_are_refused(experts):
    with pytest.raises(InvalidValueError, match="experts must be distinct"):
        moe_residual_term(experts)


def test_a_wrong_step_fails_the_induction():
    proof = moe_induction(moe_residual_term(EXPERTS), EXPERTS)
    lhs, rhs = proof.sides["step"]
    assert canonical_expand(lhs - rhs) == 0
    a, b = nc_symbol("W'_{i+1,3,1}"), nc_symbol("W'_{i+1,3,2}")
    assert a in rhs.free_symbols and b in rhs.free_symbols
    swapped = rhs.xreplace({a: b, b: a})  # expert 1's output matrix on expert 2's term and vice versa
    assert canonical_expand(lhs - swapped) != 0


def test_rule_layer_is_validated():
    with pytest.raises(InvalidValueError, match="rule_layer"):
        moe_induction(moe_residual_term(EXPERTS), EXPERTS, rule_layer=1)
