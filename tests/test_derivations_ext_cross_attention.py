"""The cross-attention entries: ``ext:cross-attention.mv-form`` (Eq. 10 on the encoder's output) and
``ext:cross-attention.induction`` (a decoder stack of any depth with the second input e'), proved at their levels,
their mutants killed at every level, and the wrong readings (the operator on the decoder's own stream; e' dropped
from the sigma arguments) refused with a witness."""

from __future__ import annotations

import dataclasses

import pytest
from ledger_support import assert_every_mutant_killed, verdicts
from symuat_paper import ext_cross_attention

from symuat import Status
from symuat.expansion import canonical_expand, derive_table, nc_symbol
from symuat.expansion.extended import plain_residual_term
from symuat.expansion.table import A_name, U_name, V_name, c_name

ENTRIES = {e.id: e for e in ext_cross_attention.entries()}
LEVELS = {"ext:cross-attention.mv-form": {"all-sizes", "symbolic", "exact", "float"},
          "ext:cross-attention.induction": {"symbolic", "exact", "float"}}


@pytest.fixture(scope="module")
def records(audited_without_coq):
    """This module's entries as the session audits them (every level but Coq: tests/conftest.py)."""
    return audited_without_coq(sorted(LEVELS))

@pytest.mark.parametrize("entry_id", sorted(LEVELS))
def test_the_entry_audits_as_recorded(entry_id, records):
    entry = ENTRIES[entry_id]
    record = records[entry_id]
    assert entry.status is Status.PROVED and record.agrees
    assert {ev.level.value for ev in record.evidence if ev.holds} == LEVELS[entry_id]
    assert entry.coq is not None  # the Coq theorem (derivations/_coq_links.py)


def test_the_decoder_stream_reading_is_wrong():
    """Applying Eq. 10's operator to the decoder's own x' (square N = N_e) instead of e': false at every level."""
    square = ({"h": 1, "N": 2, "Ne": 2, "d": 1}, {"h": 2, "N": 2, "Ne": 2, "d": 1})
    wrong = dataclasses.replace(ext_cross_attention.cross_identity(), rhs=ext_cross_attention.decoder_stream_rhs,
                                dims=square, random_dims={"h": 2, "N": 3, "Ne": 3, "d": 2}, reference=None)
    assert verdicts(wrong) == {"symbolic": False, "exact": False, "float": False}  # all sizes: N, N_e differ there


def test_e_dropped_from_the_sigma_arguments_is_wrong():
    """beta~ without W'_{i,2E} e' (the table of the network without the second input), c~ keeping its e'-term:
    false at every level (Coq: coq/mutants/ext/Mutant_decoder_beta_static.v)."""
    claim = ext_cross_attention.decoder_induction_identity()
    wrong = dataclasses.replace(claim, rhs=ext_cross_attention.static_beta_rhs)
    assert verdicts(wrong) == {"symbolic": False, "exact": False, "float": False}
    assert verdicts(claim) == {"symbolic": True, "exact": True, "float": True}


def test_e_leaves_the_rules_of_A_U_V_unchanged():
    """A~, U~, V~ of the decoder's derived table are the paper's (the table of plain Eq. 20 boxes), depth 3."""
    decoder = derive_table(3, ext_cross_attention.decoder_residual_term).table
    plain = derive_table(3, plain_residual_term).table
    names = [A_name(i) for i in range(4)] + [V_name(j) for j in (1, 2, 3)]
    names += [U_name(j, i) for i in (1, 2, 3) for j in range(1, i + 1)]
    assert all(decoder.definition(n) == plain.definition(n) for n in names)
    assert ext_cross_attention.ENCODER not in plain.definition(c_name(3)).free_symbols


def test_the_main_bias_is_affine_in_e():
    """c~_3(e') = c~_3(0) + E~_3 e' with E~_3 = W'_{3,1} W'_{2,1} W'_{1,E} + W'_{3,1} W'_{2,E} + W'_{3,E}
    (Coq: Decoder.c_tilde_ext for every depth), unfolded against the plain table's c~_3."""
    decoder = derive_table(3, ext_cross_attention.decoder_residual_term).table
    plain = derive_table(3, plain_residual_term).table
    W = {(i, k): nc_symbol(f"W'_{{{i},{k}}}") for i in (1, 2, 3) for k in ("1", "E")}
    E3 = W[3, "1"] * W[2, "1"] * W[1, "E"] + W[3, "1"] * W[2, "E"] + W[3, "E"]
    c3 = nc_symbol(c_name(3))
    assert canonical_expand(decoder.unfold(c3) - plain.unfold(c3) - E3 * ext_cross_attention.ENCODER) == 0
    assert canonical_expand(decoder.unfold(c3) - plain.unfold(c3) - W[3, "E"] * ext_cross_attention.ENCODER) != 0


def test_every_mutant_of_the_induction_is_killed_at_every_level():
    """About 2 s: 83 tree mutants of the cases' right-hand sides, each killed symbolically; the 50 that differ at
    the check case ("step") killed by the exact and float levels too."""
    assert_every_mutant_killed([ENTRIES["ext:cross-attention.induction"]])


@pytest.mark.slow  # every mutant, three levels each
def test_every_mutant_of_the_mv_form_is_killed_at_every_level():
    assert_every_mutant_killed([ENTRIES["ext:cross-attention.mv-form"]])
