"""Extended substitution tables: gated FFNs, block layouts, input transform and final norm, proved for every depth."""

from __future__ import annotations

import pytest

from symuat.errors import DerivationError
from symuat.expansion import (
    INPUT,
    LAYOUTS,
    P_name,
    SubstitutionTable,
    TableRow,
    affine_term,
    block_eq20,
    block_symbols,
    block_term,
    canonical_expand,
    derive_table,
    dynamic_from_symbols,
    encode_gate,
    extended_induction,
    gate,
    gated_residual_term,
    nc_symbol,
    plain_residual_term,
    sigma,
    substitution_table,
)
from symuat.expansion.extended import INPUT_TRANSFORM
from symuat.numeric.residual_params import dynamic_parameters


def nested(layer, depth, input_transform=False, final=None):
    x = INPUT_TRANSFORM[0] * INPUT + INPUT_TRANSFORM[1] if input_transform else INPUT
    for i in range(1, depth + 1):
        x = layer(i, x)
    return final(depth + 1, x) if final else x


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_plain_derivation_reproduces_the_paper_table(depth):
    ours, paper = derive_table(depth).table, substitution_table(depth)
    assert ours.names == paper.names
    assert all(ours.definition(n) == paper.definition(n) for n in paper.names)


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("extras", [False, True])
def test_gated_table_unfolds_to_the_nested_network(depth, extras):
    final = affine_term if extras else None
    ext = derive_table(depth, gated_residual_term, input_transform=extras, final=final)
    got = ext.table.unfold(ext.form())
    assert canonical_expand(got - nested(gated_residual_term, depth, extras, final)) == 0
    # the suggested shape: P~_j, gamma~_j built like V~_j, beta~_j from the up projection
    assert ext.table.definition(P_name(depth)) == nc_symbol(f"W'_{{{depth},4}}") * (
        nc_symbol(rf"\tilde{{A}}_{{{depth - 1}}}") if depth > 1 or extras else 1)


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_block_tables_unfold_to_nested_blocks_and_are_proved_for_every_depth(layout, gated):
    layer = block_term(layout, gated)
    ext = derive_table(2, layer, input_transform=True, final=affine_term)
    diff = canonical_expand(ext.table.unfold(ext.form()) - nested(layer, 2, True, affine_term))
    assert diff == 0
    assert extended_induction(layer, input_transform=True, final=affine_term).holds()


def test_tampered_gate_rule_fails_the_induction():
    ext = derive_table(3, gated_residual_term)
    wrong = nc_symbol("W'_{3,2}") * nc_symbol(r"\tilde{A}_{2}")  # P~_3 built from the gate projection
    rows = tuple(TableRow(r.name, wrong, r.layer, r.kind) if r.name == P_name(3) else r for r in ext.table.rows)
    bad = type(ext)(SubstitutionTable(3, rows), True, ext.nonlinear, False, False)
    proof = extended_induction(gated_residual_term, table=bad)
    assert not proof.holds()
    lhs, rhs = proof.sides["step"]
    assert canonical_expand(lhs - rhs) != 0


def test_parallel_block_eq20_by_hand():
    s = block_symbols("i")
    (A, a), (L1, b1), (L2, b2), (Fi, fi), (Fo, fo) = (s[k] for k in ("HVO", "N1", "N2", "in", "out"))
    p = block_eq20("parallel")
    want = {"W1": 1 + A * L1, "b3": A * b1 + a + fo, "W2": Fi * L2, "b2": Fi * b2 + fi, "W3": Fo}
    assert all(canonical_expand(p[k] - v) == 0 for k, v in want.items())
    assert A not in p["W2"].free_symbols  # W'_{i,2} no longer contains W'_{i,1}


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_dynamic_sets_agree_with_the_numeric_rule(layout, gated):
    assert dynamic_from_symbols(block_eq20(layout, gated)) == dynamic_parameters(layout, gated)


def test_gate_encoding_is_faithful():
    a, b, c = (nc_symbol(n) for n in ("a_{1}", "b_{1}", "c_{1}"))
    K = nc_symbol("W'_{K}")
    assert encode_gate(gate(a, b), K) == sigma(a + K * b)
    e1, e2 = encode_gate(gate(a + c, b), K), encode_gate(gate(a, b + c), K)
    assert canonical_expand(e1 - e2) != 0


def test_a_layer_without_a_nonlinear_term_is_rejected():
    with pytest.raises(DerivationError, match="adds no nonlinear term"):
        derive_table(2, affine_term)
    with pytest.raises(DerivationError, match="final box must be affine"):
        derive_table(1, plain_residual_term, final=plain_residual_term)
    with pytest.raises(DerivationError, match="at most one new nonlinear term"):
        derive_table(1, lambda i, x: plain_residual_term(i, x) + sigma(x), gated=False)
