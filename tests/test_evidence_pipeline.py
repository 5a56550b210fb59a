"""One evidence pipeline: the level registry, the instance cache, one float tolerance model for both kinds."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

from symuat import Identity, InstanceCache, Level, OpaqueIdentity, check_identity
from symuat.evidence.float_level import tolerance
from symuat.evidence.identity import ExplicitInstance
from symuat.evidence.levels import RUNNERS, register_level
from symuat.evidence.opaque import OpaqueInstance
from symuat.evidence.protocol import Claim, Instance
from symuat.evidence.verdict import Evidence
from symuat.ledger.entry import Entry, Source, Status
from symuat.soundness.kill_rate import true_statement_sweep

W = sympy.Symbol("W", commutative=False)
x = sympy.Symbol("x", commutative=False)


def _explicit():
    return Identity({"A": ("N", "N"), "B": ("N", "N")}, lambda A, B: (A + B) * A, lambda A, B: A * A + B * A,
                    ({"N": 1}, {"N": 2}), reference=lambda A, B: (A + B) @ A)


def _opaque(reference=None):
    return OpaqueIdentity(lambda c: W ** c * x, lambda c: W ** c * x, (2, 3), reference=reference)


def test_both_kinds_implement_the_claim_protocol():
    for claim, kind in ((_explicit(), ExplicitInstance), (_opaque(), OpaqueInstance)):
        assert isinstance(claim, Claim)
        inst = claim.instantiate(claim.check_point)
        assert isinstance(inst, Instance) and isinstance(inst, kind)
        assert check_identity(claim).holds


def test_the_cache_is_hit_across_levels_and_runs():
    cache = InstanceCache()
    claim = _explicit()
    check_identity(claim, cache=cache)
    assert cache.misses == 2 and cache.hits == 2  # grid N=1, N=2; exact and float reuse N=2
    check_identity(claim, seed=1, cache=cache)
    assert cache.misses == 2 and cache.hits == 6


def test_true_statement_sweep_builds_each_claim_once_through_the_public_cache():
    entries = [Entry("ext:explicit", Source("ext", "t"), "", Status.PROVED, _explicit()),
               Entry("ext:opaque", Source("ext", "t"), "", Status.PROVED, _opaque())]
    cache = InstanceCache()
    runs, failures = true_statement_sweep(range(3), entries, cache=cache)
    assert failures == [] and runs == 3 * 2 * 2
    assert cache.misses == 2 and cache.hits == 3 * 2 * 2 - 2


def test_a_level_is_one_registration():
    level = Level.FLOAT
    original = RUNNERS[level]
    seen = []

    @register_level(level)
    def spy(claim, run):
        seen.append(claim.check_point)
        return Evidence(level, True, "spy")

    try:
        assert check_identity(_opaque(), levels=(level,)).evidence[0].detail == "spy"
        assert seen == [3]
    finally:
        RUNNERS[level] = original


def test_opaque_float_level_retries_an_overflow_closer_to_zero():
    """2^1023 W x overflows float64 at Gaussian inputs; a true identity holds at every point, so the
    level redraws the inputs at a smaller scale (the former opaque float level reported a failure)."""
    big = sympy.Integer(2) ** 1023

    def ref(a, c):
        return float(big) * (a["W"] @ a["x"])

    def claim(factor):
        return OpaqueIdentity(lambda c: big * W * x, lambda c: factor * big * W * x, (1,), reference=ref,
                              levels=(Level.FLOAT,))

    ev = check_identity(claim(1)).evidence[0]
    assert ev.holds and "inputs scaled by 0.0625 to avoid float64 overflow" in ev.detail
    assert not check_identity(claim(sympy.Rational(1, 2))).holds


def test_opaque_float_level_allows_for_a_float32_reference():
    def ref(a, c):
        return (np.linalg.matrix_power(a["W"].astype(np.float32), c) @ a["x"].astype(np.float32))

    ev = check_identity(_opaque(ref), levels=(Level.FLOAT,)).evidence[0]
    assert ev.holds and "reference's eps" in ev.detail


def test_opaque_exact_failure_names_the_entry():
    V = sympy.Symbol("V", commutative=False)
    ev = check_identity(OpaqueIdentity(lambda c: W * V * x, lambda c: V * W * x, (1,)),
                        levels=(Level.EXACT,)).evidence[0]
    assert not ev.holds and ev.detail.startswith("entry (1,1) differs in F_p at case 1, 3x3 matrices")
    assert ev.counterexample["entry"] == [1, 1]


@pytest.mark.parametrize("n,mag,ref_eps", [(1, 1.0, 0.0), (50, 3.5, 0.0), (7, 2.0, float(np.finfo(np.float32).eps))])
def test_tolerance_is_eight_n_eps_magnitude(n, mag, ref_eps):
    eps = max(np.finfo(float).eps, ref_eps)
    tiny = np.finfo(np.float32 if ref_eps else float).tiny
    assert tolerance(n, np.array([mag]))[0] == pytest.approx(8 * n * np.finfo(float).eps * mag + np.finfo(float).tiny)
    assert tolerance(n, np.array([mag]), ref_eps)[0] == pytest.approx(8 * n * eps * mag + tiny)
