"""The attention-sink entry (``ext:attention-sink.mv-form``): proved for every size and at the symbolic, exact and
float levels, its mutants killed at every level, and the paper's static value bias is refused with a witness when a
sink takes mass."""

from __future__ import annotations

import dataclasses

import pytest
from symuat_paper import ext_attention_sinks

from symuat import Status, check_identity, vec_r
from symuat.ledger.audit import audit_entry
from symuat.soundness.kill_rate import assess, kill_rates, ledger_mutants


def _levels(claim):
    return {ev.level.value: ev.holds for ev in check_identity(claim).decided}


def test_the_entry_audits_as_recorded():
    (entry,) = ext_attention_sinks.entries()
    record = audit_entry(entry)
    assert entry.status is Status.PROVED and record.agrees
    assert {ev.level.value for ev in record.evidence if ev.holds} == {"all-sizes", "symbolic", "exact", "float"}


def test_the_static_value_bias_is_wrong_with_a_sink():
    """The paper's b' (rows summing to 1) misses the sink's share of the value bias: false at every level."""
    good = ext_attention_sinks.sink_identity()

    def static(e, d):
        return ext_attention_sinks._mha(e, d).matrix_vector_form().apply(vec_r(e["X"]))
    assert _levels(dataclasses.replace(good, rhs=static)) == {"all-sizes": False, "symbolic": False, "exact": False,
                                                              "float": False}


@pytest.mark.slow  # 49 mutants, three levels each
def test_every_mutant_is_killed_at_every_level():
    report = kill_rates(assess(m) for m in ledger_mutants(ext_attention_sinks.entries()))
    for family, levels in report.counts.items():
        assert {"symbolic", "exact", "float"} <= set(levels), family
        for level, count in levels.items():
            if level == "all-sizes":  # ledger mutants are assessed by the three levels above; the all-sizes level has
                continue  # its own size-only mutants (tests/test_allsizes_*.py, benchmarks/bench_all_sizes.py)
            assert count.total and count.killed == count.total, (family, level, count.survivors)
