"""Ledger entries beyond the paper for gated FFNs, block layouts, the parallel block, input and final boxes."""

from __future__ import annotations

import pytest
from symuat_paper import ext_duat_blocks, ext_duat_gated

from symuat import OpaqueIdentity, Status, check_identity
from symuat.expansion import block_term, nc_symbol

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
