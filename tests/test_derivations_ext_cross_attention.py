"""The cross-attention entry (``ext:cross-attention.mv-form``): proved at the symbolic, exact and float levels, its
mutants killed at every level, and the self-attention reading (the operator on the decoder's own stream) refused
with a witness."""

from __future__ import annotations

import dataclasses

import pytest
from ledger_support import assert_every_mutant_killed, verdicts
from symuat_paper import ext_cross_attention

from symuat import Status
from symuat.ledger.audit import audit_entry


def test_the_entry_audits_as_recorded():
    (entry,) = ext_cross_attention.entries()
    record = audit_entry(entry)
    assert entry.status is Status.PROVED and record.agrees
    assert {ev.level.value for ev in record.evidence if ev.holds} == {"all-sizes", "symbolic", "exact", "float"}


def test_the_decoder_stream_reading_is_wrong():
    """Applying Eq. 10's operator to the decoder's own x' (square N = N_e) instead of e': false at every level."""
    square = ({"h": 1, "N": 2, "Ne": 2, "d": 1}, {"h": 2, "N": 2, "Ne": 2, "d": 1})
    wrong = dataclasses.replace(ext_cross_attention.cross_identity(), rhs=ext_cross_attention.decoder_stream_rhs,
                                dims=square, random_dims={"h": 2, "N": 3, "Ne": 3, "d": 2}, reference=None)
    assert verdicts(wrong) == {"symbolic": False, "exact": False, "float": False}  # all sizes: N, N_e differ there


@pytest.mark.slow  # every mutant, three levels each
def test_every_mutant_is_killed_at_every_level():
    assert_every_mutant_killed(ext_cross_attention.entries())
