"""The ledger entries of T5's relative position buckets, symmetric local windows, NoPE layers and the Granite
multipliers (``ext:relative-bias.*``, ``ext:symmetric-window.mask``, ``ext:nope.closed-form``, ``ext:granite.*``):
each audits as recorded, a wrong reading is refuted with a witness, the bucket function matches the library's
attention module, and (slow) every mutant is killed at every level."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import sympy
from ledger_support import assert_every_mutant_killed, verdicts
from symuat_paper import ext_granite, ext_local_global, ext_relative_bias

from symuat import Status
from symuat.layers.attention_scores import relative_position_bias, sliding_window_mask

ENTRIES = ext_relative_bias.entries() + ext_local_global.entries() + ext_granite.entries()
ALL_SIZES = {"ext:relative-bias.encoder", "ext:relative-bias.decoder", "ext:symmetric-window.mask"}


@pytest.fixture(scope="module")
def records(audited_without_coq):
    """This module's entries as the session audits them (every level but Coq: tests/conftest.py)."""
    return audited_without_coq([e.id for e in ENTRIES])

@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_the_entry_audits_as_recorded(entry, records):
    record = records[entry.id]
    assert entry.status is Status.PROVED and record.agrees
    held = {ev.level.value for ev in record.evidence if ev.holds}
    assert {"symbolic", "exact", "float"} <= held
    assert ("all-sizes" in held) == (entry.id in ALL_SIZES)


def test_a_causal_window_is_not_the_symmetric_one():
    """The causal window's H_h in the library side only: refuted at every level that decides."""
    ident = ext_local_global.symmetric_window_identity()

    def causal_lhs(e, d):
        from symuat import vec_r
        from symuat.layers.attention import MultiHeadAttention
        from symuat.layers.grouped_attention import row_stochastic_family
        H = row_stochastic_family("H", d["h"], d["N"], sliding_window_mask(d["N"], d["w"]))
        return vec_r(MultiHeadAttention(H, e["WV"], e["WO"], e["bV"], e["bO"]).apply(e["X"]))
    wrong = dataclasses.replace(ident, lhs=causal_lhs, dims=tuple(d for d in ident.dims if d["r"] == d["N"]),
                                reference=None)
    assert set(verdicts(wrong).values()) == {False}


def test_granite_without_the_fold_is_refuted():
    """The pre-LN box with the unscaled sublayers (r forgotten) is not Granite's block."""
    good = ext_granite._eq20_identity()
    wrong = dataclasses.replace(good, rhs=lambda g: good.lhs(g).subs(ext_granite._multiplier("i"), 1),
                                reference=None)
    assert set(verdicts(wrong).values()) == {False}


@pytest.mark.xdist_group("models")  # on the worker that imports torch and transformers for the model tests
@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("buckets, distance", [(32, 128), (8, 16), (6, 20)])
def test_the_bucket_function_matches_the_library(bidirectional, buckets, distance):
    """symuat's bias from a table equals the T5 attention module's own ``compute_bias`` at every relative
    position up to 150 (T5's default 32 buckets, 128 positions, and two small settings)."""
    torch = pytest.importorskip("torch")
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Attention

    cfg = T5Config(relative_attention_num_buckets=buckets, relative_attention_max_distance=distance, num_heads=1,
                   d_model=4, d_kv=4, is_decoder=not bidirectional)
    attention = T5Attention(cfg, has_relative_attention_bias=True)
    with torch.no_grad():
        attention.relative_attention_bias.weight.copy_(torch.arange(buckets, dtype=torch.float32)[:, None])
        library = attention.compute_bias(150, 150)[0, 0].numpy()
    table = sympy.Matrix(range(buckets))
    ours = np.array(relative_position_bias(table, 150, bidirectional, distance), dtype=float)
    np.testing.assert_array_equal(ours, library)


@pytest.mark.slow  # every mutant, three levels each
def test_every_mutant_is_killed_at_every_level():
    assert_every_mutant_killed(ENTRIES)
