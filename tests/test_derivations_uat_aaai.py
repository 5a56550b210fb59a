"""Cross-checks of the seed-000 (uat-aaai) main-text and App. A entries against their seed-004 twins."""

from __future__ import annotations

import re

import pytest
from symuat_paper import diamond, uat_aaai_diamond, uat_aaai_main

from symuat import audit_entry

AAAI = {e.id: e for e in (*uat_aaai_diamond.entries(), *uat_aaai_main.entries())}
ARXIV = {e.id: e for e in diamond.entries()}
_W12_DEF = re.compile(r"\\quad\(\\mathbf\{W\}_\{12\}=.*\)$")


def test_every_reading_has_a_sibling():
    stems = {}
    for i in AAAI:
        m = re.match(r"(.*)\.reading(\d+)$", i)
        if m:
            stems.setdefault(m.group(1), set()).add(int(m.group(2)))
    assert stems, "App. A has ambiguous OCR rows"
    assert all(r == {1, 2} for r in stems.values()), stems


def test_app_a_steps_present():
    for eq, n in ((1, 7), (2, 5)):
        for k in range(1, n + 1):
            assert any(i.startswith(f"uat-aaai:appA.eq{eq}.step{k}") for i in AAAI), (eq, k)


@pytest.mark.parametrize("aaai_id", sorted(i for i in AAAI if ":appA." in i or ":sec3.2." in i))
def test_same_statement_same_status_as_seed_004(aaai_id):
    """A seed-000 step printed exactly like a seed-004 step (up to the W12 definition) gets the same status."""
    entry = AAAI[aaai_id]
    statement = _W12_DEF.sub("", entry.statement)
    twins = [e for e in ARXIV.values() if e.statement == statement]
    for twin in twins:
        assert entry.status is twin.status, (aaai_id, twin.id)


def test_ocr_alternatives_disagree_where_documented():
    """Reading 1 (OCR glyphs) of each ambiguous App. A row is an erratum or a different convention than reading 2."""
    pairs = [("appA.eq1.step4", "erratum", "proved"), ("appA.eq1.step5", "erratum", "proved"),
             ("appA.eq2.step3", "erratum", "proved"), ("appA.eq2.step4", "erratum", "proved"),
             ("appA.eq1.step7", "convention", "convention")]
    for stem, s1, s2 in pairs:
        r1, r2 = (audit_entry(AAAI[f"uat-aaai:{stem}.reading{k}"]) for k in (1, 2))
        assert (r1.computed.value, r2.computed.value) == (s1, s2), stem
    r1, r2 = (audit_entry(AAAI[f"uat-aaai:appA.eq1.step7.reading{k}"]) for k in (1, 2))
    assert "left-NN" in r1.reason.split(";")[0] and "left-TN" in r2.reason.split(";")[0]
