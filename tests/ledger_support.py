"""Shared pieces of the tests of single ledger entries (not a test module): each level's verdict on a claim, and the
kill rates of an entry's mutants."""

from __future__ import annotations

from symuat import check_identity
from symuat.soundness.kill_rate import assess, kill_rates, ledger_mutants

#: the levels that assess a ledger entry's mutants; the all-sizes level has its own size-only mutants
#: (tests/test_allsizes_*.py, benchmarks/bench_all_sizes.py)
MUTANT_LEVELS = ("symbolic", "exact", "float")


def verdicts(claim) -> dict:
    """``{level: holds}`` of every level that decided ``claim``."""
    return {ev.level.value: ev.holds for ev in check_identity(claim).decided}


def assert_every_mutant_killed(entries) -> None:
    """Every non-equivalent mutant of ``entries`` is killed at each of :data:`MUTANT_LEVELS`, and each level
    assessed at least one."""
    report = kill_rates(assess(m) for m in ledger_mutants(entries))
    assert report.counts
    for family, per in report.counts.items():
        assert set(MUTANT_LEVELS) <= set(per), family
        for level in MUTANT_LEVELS:
            count = per[level]
            assert count.total and count.killed == count.total, (family, level, count.survivors)
