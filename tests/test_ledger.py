"""One test per ledger entry: the computed status must equal the recorded one (SPEC §7)."""

from __future__ import annotations

import pytest

from symuat import Level, Status, audit_entry, load_entries

ENTRIES = load_entries()


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_entry(entry):
    record = audit_entry(entry)
    assert record.computed is entry.status, (
        f"{entry.id}: recorded {entry.status.value}, computed "
        f"{record.computed.value if record.computed else None} ({record.reason}); "
        + "; ".join(f"{e.level.value}: {e.detail}" for e in record.evidence)
    )
    if entry.status is not Status.PROSE:
        assert len({e.level for e in record.evidence}) >= 2, "every equation needs two evidence levels"
    if entry.status is Status.ERRATUM:
        assert record.counterexample is not None, "an erratum must show its counterexample"
        assert any(e.level is Level.SYMBOLIC and e.holds for e in record.correction_evidence)
        assert all(e.holds for e in record.correction_evidence)


def test_ids_unique_and_required_present():
    ids = [e.id for e in ENTRIES]
    assert len(ids) == len(set(ids))
    for required in ["uat-arxiv:eq4", "uat-arxiv:eq15", "duat:eq3", "duat:eq5", "duat:eq6"]:
        assert required in ids
    assert any(i.startswith("uat-arxiv:eq13.step") for i in ids)
    assert any(i.startswith("uat-arxiv:eq14.step") for i in ids)
