"""The attention-sink entry (``ext:attention-sink.mv-form``): proved for every size and at the symbolic, exact and
float levels, its mutants killed at every level, and the paper's static value bias is refused with a witness when a
sink takes mass."""

from __future__ import annotations

import dataclasses

import pytest
from ledger_support import assert_every_mutant_killed, verdicts
from symuat_paper import ext_attention_sinks

from symuat import Status


def test_the_entry_audits_as_recorded(audited_without_coq):
    (entry,) = ext_attention_sinks.entries()
    record = audited_without_coq([entry.id])[entry.id]
    assert entry.status is Status.PROVED and record.agrees
    assert {ev.level.value for ev in record.evidence if ev.holds} == {"all-sizes", "symbolic", "exact", "float"}


def test_the_static_value_bias_is_wrong_with_a_sink():
    """The paper's b' (rows summing to 1) misses the sink's share of the value bias: false at every level."""
    good = ext_attention_sinks.sink_identity()
    wrong = dataclasses.replace(good, rhs=ext_attention_sinks.static_bias_rhs)
    assert verdicts(wrong) == {"all-sizes": False, "symbolic": False, "exact": False, "float": False}


@pytest.mark.slow  # 49 mutants, three levels each
def test_every_mutant_is_killed_at_every_level():
    assert_every_mutant_killed(ext_attention_sinks.entries())
