"""Soundness: mutants of true statements are rejected, true statements never are (symuat.soundness).

The full measurement is ``python benchmarks/bench_kill_rates.py``; here a
deterministic sample keeps the suite fast.  The ledger-mutant sample (it generates the mutants of every
entry) and the 20-seed sweep of the true statements are marked ``slow``: CI runs them in its second step.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st
from sympy.matrices.matrixbase import MatrixBase

from symuat import Identity, Level, OpaqueIdentity, check_identity, dims_grid, kron, softmax
from symuat.algebra import matrices
from symuat.expansion import INPUT, layer_symbols, sigma
from symuat.numeric.attention import attention_weights
from symuat.soundness import (
    OPERATORS,
    assess,
    expr_sites,
    identity_mutants,
    kill_rates,
    ledger_mutants,
    mutate_expr,
    true_statement_sweep,
)
from symuat.soundness.kill_rate import table_kill_outcomes
from symuat.soundness.mutants import _ORIGINAL


@pytest.fixture(scope="module")
def all_ledger_mutants(ledger):
    return ledger_mutants(ledger)


@pytest.fixture(scope="module")
def ledger_report(all_ledger_mutants):
    return kill_rates(assess(m) for m in all_ledger_mutants[::60])


@pytest.fixture(scope="module")
def table_report():
    return kill_rates(table_kill_outcomes(3))


def test_interception_leaves_sympy_and_kron_untouched(ledger):
    entry = next(e for e in ledger if e.id == "duat:eq3")
    for m in identity_mutants(entry.id, entry.claim)[:4]:
        check_identity(m.claim, levels=(Level.SYMBOLIC,))
    for name, f in _ORIGINAL.items():
        assert MatrixBase.__dict__[name] is f, name
    holders = [m for n, m in sys.modules.items() if n.split(".")[0] in ("symuat", "symuat_paper")
               and hasattr(m, "kron") and callable(m.kron) and m.kron.__name__ in ("kron", "call")]
    assert holders and all(m.kron is matrices.kron for m in holders)
    assert kron is matrices.kron


@pytest.mark.slow  # every mutant of every ledger entry: CI's second step (docs/testing.md)
@pytest.mark.xdist_group("ledger-mutants")
def test_ledger_mutants_cover_every_operator(all_ledger_mutants):
    ops = {m.operator for m in all_ledger_mutants}
    assert ops >= set(OPERATORS) - {"untilde"}


@pytest.mark.slow  # generates every ledger entry's mutants to assess every 60th: CI's second step
@pytest.mark.xdist_group("ledger-mutants")
@pytest.mark.parametrize("level", ["symbolic", "exact", "float"])
def test_ledger_mutants_are_killed(ledger_report, level):
    for family, per in ledger_report.counts.items():
        c = per.get(level)
        if c is None or not c.total:
            continue
        assert c.false_rejections == 0, (family, level)
        floor = 0.99 if level == "float" else 1.0
        assert c.rate >= floor, (family, level, c.survivors)


@pytest.mark.slow  # a mutation sweep (CI's slow step; docs/testing.md)
@pytest.mark.xdist_group("table-mutants")
@pytest.mark.parametrize("level", ["symbolic", "induction", "exact", "float"])
def test_table_mutants_are_killed(table_report, level):
    c = table_report.counts["table"][level]
    assert c.total > 50 and c.false_rejections == 0
    assert c.rate >= (0.99 if level == "float" else 1.0), c.survivors


@pytest.mark.slow  # builds every mutant of the depth-3 table (about 4 s): CI's slow step
@pytest.mark.xdist_group("table-mutants")
def test_equivalent_table_mutants_are_genuine(table_report):
    # replacing a box-1 value (or the new U_i^(i) = W'_{i,3}) by the original parameter changes nothing
    eq = table_report.equivalent["table"]
    assert eq and all(" untilde " in label for label in eq)


@pytest.mark.slow  # 20 seeds of every entry: CI's second step (docs/testing.md)
@pytest.mark.xdist_group("audit")
def test_true_statements_survive_many_seeds(ledger, audited, audit_instances):
    """20 seeds of the randomized levels on the sides the session's audit built (the same claim objects)."""
    runs, failures = true_statement_sweep(range(20), entries=ledger, cache=audit_instances)
    assert runs > 1000 and not failures, failures[:5]


# --- randomized: exact level agrees with the symbolic level on mutated nc expressions ------------------

_SYMS = [layer_symbols(i) for i in (1, 2)]
_ATOMS = [s.W1 for s in _SYMS] + [s.W2 for s in _SYMS] + [s.W3 for s in _SYMS]


@st.composite
def nc_expressions(draw):
    terms = []
    for _ in range(draw(st.integers(1, 3))):
        factors = draw(st.lists(st.sampled_from(_ATOMS), min_size=1, max_size=3))
        tail = draw(st.sampled_from([INPUT, _SYMS[0].b2, sigma(_SYMS[0].W2 * INPUT + _SYMS[0].b2)]))
        terms.append(draw(st.integers(-2, 2).filter(bool)) * sympy.Mul(*factors) * tail)
    return sympy.Add(*terms)


@settings(max_examples=40, deadline=None)
@given(nc_expressions(), st.sampled_from(OPERATORS), st.integers(0, 5))
def test_exact_level_agrees_with_symbolic_on_random_mutants(expr, operator, k):
    sites = expr_sites(expr).get(operator, [])
    if not sites:
        return
    mutant = mutate_expr(expr, operator, sites[k % len(sites)])
    ident = OpaqueIdentity(lambda c: expr, lambda c: mutant, ("generic",), levels=(Level.SYMBOLIC, Level.EXACT))
    verdict = check_identity(ident, seed=k)
    assert verdict.consistent, [ev.detail for ev in verdict.evidence]


# --- numerical robustness of the float level --------------------------------------------------------

def _attention(scale: float, wrong: bool = False, float32: bool = False) -> Identity:
    def rhs(e, d):
        H = softmax(scale * (e["x"] * e["WQ"]) * (e["x"] * e["WK"]).T)
        return (H.T if wrong else H) * (e["x"] * e["WV"])

    def ref(a, d):
        out = attention_weights(a["x"], a["WQ"], a["WK"], scale=scale) @ (a["x"] @ a["WV"])
        return out.astype(np.float32) if float32 else out

    m = 2
    return Identity(shapes=lambda d: {"x": (d["N"], m), "WQ": (m, m), "WK": (m, m), "WV": (m, m)}, lhs=rhs,
                    rhs=rhs, dims=dims_grid(N=(3,)), reference=ref, levels=(Level.FLOAT,))


@pytest.mark.parametrize("scale", [1.0, 30.0, 300.0, 1e4])
@pytest.mark.parametrize("float32", [False, True])
def test_float_level_saturated_softmax(scale, float32):
    for seed in range(3):
        assert check_identity(_attention(scale, float32=float32), seed=seed).holds
        assert not check_identity(_attention(scale, wrong=True, float32=float32), seed=seed).holds


@pytest.mark.parametrize("w", [1e-150, 1e-8, 1.0, 1e8, 1e100])
def test_float_level_large_and_small_weight_scales(w):
    def rhs(e, d):
        return (w * e["A"]) * (w * e["B"])

    def ref(a, d):
        return (w * a["A"]) @ (w * a["B"])

    good = Identity(shapes=lambda d: {"A": (3, 3), "B": (3, 3)}, lhs=rhs, rhs=rhs, dims=({},), reference=ref,
                    levels=(Level.FLOAT,))
    bad = Identity(shapes=good.shapes, lhs=rhs, rhs=lambda e, d: rhs(e, d) + 1e-6 * w * w * e["A"], dims=({},),
                   reference=ref, levels=(Level.FLOAT,))
    for seed in range(3):
        assert check_identity(good, seed=seed).holds
        assert not check_identity(bad, seed=seed).holds


def test_float_level_overflow_is_a_clear_verdict_not_a_crash():
    w = 1e160  # w**2 is beyond float64 at every input scale
    ident = Identity(shapes=lambda d: {"A": (2, 2)}, lhs=lambda e, d: w * w * e["A"], rhs=lambda e, d: w * w * e["A"],
                     dims=({},), reference=lambda a, d: w * w * a["A"], levels=(Level.FLOAT,))
    (ev,) = check_identity(ident).evidence  # w * w is a Python float: inf, which no level evaluates
    assert ev.holds is None and ev.detail.startswith("undecided: float64 overflows") and "Infinity" in ev.detail
    exact = sympy.Integer(10) ** 320  # an exact constant: mpmath intervals decide where float64 overflows
    for factor, holds in ((1, True), (2, False)):
        ident = Identity(shapes=lambda d: {"A": (2, 2)}, lhs=lambda e, d: exact * e["A"],
                         rhs=lambda e, d, f=factor: f * exact * e["A"], dims=({},), levels=(Level.FLOAT,))
        (ev,) = check_identity(ident).evidence
        assert ev.holds is holds and "float64 overflows" in ev.detail and (ev.witness is None) is holds
