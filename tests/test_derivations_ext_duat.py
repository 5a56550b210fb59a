"""Ledger entries beyond the paper for gated FFNs, block layouts, the parallel block, input and final boxes."""

from __future__ import annotations

import pytest
from symuat_paper import ext_duat_blocks, ext_duat_gated

from symuat import DerivationError, Entry, InvalidValueError, OpaqueIdentity, Status, audit_entry, check_identity
from symuat.expansion import block_term, extended_induction, nc_symbol
from symuat.expansion.extended import gated_residual_term
from symuat.expansion.extended_proof import ExtendedInduction

ENTRIES = ext_duat_blocks.entries() + ext_duat_gated.entries()


@pytest.fixture(scope="module")
def records(audited_without_coq):
    """This module's entries as the session audits them (every level but Coq: tests/conftest.py)."""
    return audited_without_coq([e.id for e in ENTRIES])

@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_every_ext_entry_audits_as_recorded(entry, records):
    record = records[entry.id]
    assert entry.id.startswith("ext:") and entry.source.version == "ext"
    assert record.agrees, (entry.id, record.computed, record.reason, record.evidence)
    levels = {ev.level.value for ev in record.evidence}
    assert levels >= ({"symbolic", "float"} if entry.status is Status.PROSE else {"symbolic", "exact", "float"})


def test_a_wrong_parallel_claim_is_caught_at_every_level():
    # the paper's merge W'_{i,2} = F_1 W'_{i,1} does NOT hold for a parallel block
    X = nc_symbol("x'_{i-1}")
    c = ext_duat_blocks.block_claims("parallel")
    s = {k: v for k, v in zip(("A", "L1", "Fi", "fi"), (nc_symbol("W'_{i,HVO}"), nc_symbol("W'_{i,N1}"),
                                                         nc_symbol("W'_{i,in}"), nc_symbol("b'_{i,in}")))}
    from symuat.expansion import sigma
    wrong = c["W1"] * X + c["b3"] + c["W3"] * sigma(s["Fi"] * c["W1"] * X + s["Fi"] * c["Y"] + s["fi"])
    ident = OpaqueIdentity(lambda _: ext_duat_blocks.enc(block_term("parallel")("i", X)),
                           lambda _: ext_duat_blocks.enc(wrong), ("generic",),
                           reference=lambda a, _: ext_duat_blocks.np_block(a, "parallel", False, "i", a["x'_{i-1}"]))
    verdict = check_identity(ident)
    assert not any(ev.holds for ev in verdict.evidence)


def test_measured_dynamic_sets_match_the_rule():
    from symuat.numeric import dynamic_parameters
    got = ext_duat_gated.measured_dynamic(3, layouts=("parallel", "pre_ln"))
    assert got == {lay: dynamic_parameters(lay, True) for lay in ("parallel", "pre_ln")}


def _entry(claim):
    return Entry("ext:test.induction", "a test induction", "x'_L", Status.PROVED, claim)


def test_an_induction_is_built_when_audited_and_one_of_the_wrong_shape_is_one_error():
    built = []

    def broken(gated):
        built.append(gated)
        return ExtendedInduction({}, ("rule U_{1,3} is not a left multiple of U_{1,2}",), 3)

    claim = ext_duat_blocks.plain_and_gated_induction(broken, "tampered: rules of the wrong shape", "scope")
    assert built == [] and claim.cases[:3] == ((False, "base"), (False, "step"), (False, "lemma"))
    with pytest.raises(DerivationError, match=r"ext:test\.induction.*tampered: rules of the wrong shape: "
                                              r"\('rule U_\{1,3\} is not a left multiple of U_\{1,2\}',\)"):
        audit_entry(_entry(claim))
    assert built[0] is False


def test_an_induction_with_other_cases_than_declared_is_one_error():
    with_final = ext_duat_blocks.proved_lazily(lambda: extended_induction(gated_residual_term),
                                               ext_duat_blocks.PROOF_CASES_WITH_FINAL, "gated: wrong shape")
    with pytest.raises(InvalidValueError, match=r"gated: wrong shape: the proof has the cases "
                                              r"\('base', 'step', 'lemma'\), not \('base', 'step', 'final', 'lemma'\)"):
        with_final()


def test_a_lazily_built_induction_audits_as_its_eager_proof():
    claim = ext_duat_blocks.induction_claim("gated", lambda g: gated_residual_term)
    record = audit_entry(_entry(claim))
    assert record.computed is Status.PROVED and record.agrees
