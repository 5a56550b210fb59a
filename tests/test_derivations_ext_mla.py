"""The multi-head latent attention entry (``ext:mla.mv-form``): proved at the symbolic, exact and float levels, its
mutants killed at every level, and the paper's static value bias is refused with a witness."""

from __future__ import annotations

import dataclasses

import pytest
from ledger_support import assert_every_mutant_killed, verdicts
from symuat_paper import ext_mla

from symuat import Status


def test_the_entry_audits_as_recorded(audited_without_coq):
    (entry,) = ext_mla.entries()
    record = audited_without_coq([entry.id])[entry.id]
    assert entry.status is Status.PROVED and record.agrees
    assert {ev.level.value for ev in record.evidence if ev.holds} == {"all-sizes", "symbolic", "exact", "float"}


def test_the_static_value_bias_is_wrong_for_latent_attention():
    """Eq. 10's static b' (rows summing to one) misses H_h d: false at every level."""
    wrong = dataclasses.replace(ext_mla.mla_identity(), rhs=ext_mla.static_bias_rhs)
    assert verdicts(wrong) == {"all-sizes": False, "symbolic": False, "exact": False, "float": False}


@pytest.mark.slow  # every mutant, three levels each
def test_every_mutant_is_killed_at_every_level():
    assert_every_mutant_killed(ext_mla.entries())
