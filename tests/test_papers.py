"""The soundness corpus (tests/papers/): other papers' derivations get sound verdicts at every level.

True entries are proved or honestly undecided at each level, never refuted; errata and mutants are refuted with a
checked witness.  The exhaustive checks (every entry audited, every mutant, 10 000 seeds) are marked slow.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path

import mpmath
import pytest
import sympy

from symuat import Identity, InstanceCache, Level, Status, audit_entry, load_entries
from symuat.evidence.functions import Kind, expression_kind
from symuat.evidence.pipeline import check_identity
from symuat.soundness.mutants import identity_mutants

PAPERS = Path(__file__).resolve().parent / "papers"
RANDOMIZED = (Level.EXACT, Level.FLOAT)


@pytest.fixture(scope="module")
def corpus():
    return load_entries(directory=PAPERS)


def _true_claims(corpus) -> list[tuple[str, Identity]]:
    out = [(e.id, e.claim) for e in corpus if e.status is Status.PROVED]
    out += [(f"{e.id} (correction)", e.correction.identity) for e in corpus if e.correction is not None]
    return out


def test_the_corpus_spans_papers_and_what_attention_papers_write(corpus):
    papers = {e.id.split(":")[0] for e in corpus}
    assert len(papers) >= 3 and len(corpus) >= 40, (papers, len(corpus))
    claims = [c for _, c in _true_claims(corpus)]
    assert sum(1 for c in claims if c.assume) >= 8  # hypotheses
    kinds = set()
    for c in claims:
        inst = c.instantiate(c.check_point)
        kinds.add(expression_kind(tuple(inst.lhs) + tuple(inst.rhs)))
    assert {Kind.RATIONAL, Kind.PIECEWISE, Kind.TRANSCENDENTAL} <= kinds


@pytest.mark.parametrize("seed", [1, 2])
def test_true_entries_are_never_refuted_by_the_randomized_levels(corpus, seed):
    cache = InstanceCache()
    for name, claim in _true_claims(corpus):
        for ev in check_identity(claim, seed=seed, levels=RANDOMIZED, cache=cache).evidence:
            assert ev.holds is not False, (name, ev.detail)
            assert ev.holds is True or ev.detail.startswith("undecided: "), (name, ev.detail)


def _independent_difference(witness, lhs, rhs) -> bool:
    """The witness re-evaluated with plain SymPy ``subs`` (Q) or mpmath at 60 digits (R): do the sides differ?"""
    point = {s: s for s in lhs.free_symbols | rhs.free_symbols}
    values = {s: sympy.Rational(Fraction(witness.point[s.name])) if witness.field == "Q" else sympy.Float(
        witness.point[s.name], 60) for s in point}
    if witness.field == "Q":
        return sympy.nsimplify(lhs.subs(values) - rhs.subs(values)) != 0
    with mpmath.workdps(60):
        diff = (lhs - rhs).subs(values).evalf(60)
        return abs(diff) > sympy.Float("1e-40")


@pytest.mark.parametrize("entry_id", ["linattn:eq9.part2", "online-softmax:eq3.part3", "flash-attention:eq5.part2"])
def test_errata_are_refuted_with_checked_witnesses(corpus, entry_id):
    entry = next(e for e in corpus if e.id == entry_id)
    record = audit_entry(entry)
    assert record.computed is Status.ERRATUM, record.reason
    refuted = [ev for ev in record.evidence if ev.holds is False]
    assert refuted and all(ev.witness is not None for ev in refuted), [(ev.level, ev.detail) for ev in refuted]
    for ev in refuted:
        w = ev.witness
        assert w.lhs != w.rhs and w.point
        if ev.level is Level.SYMBOLIC and w.field in ("Q", "R (float64 inputs, exact)"):
            inst = entry.claim.instantiate(ev.counterexample["dims"])
            r, c = ev.counterexample["entry"]
            assert _independent_difference(dataclasses.replace(w, field=w.field[:1]), inst.lhs[r - 1, c - 1],
                                           inst.rhs[r - 1, c - 1])


@pytest.mark.slow  # a mutation sweep (CI's slow step; docs/testing.md)
def test_a_negated_side_is_refuted_with_a_witness_by_the_randomized_levels(corpus):
    for e in corpus:
        if e.status is not Status.PROVED:
            continue
        (mutant,) = [m for m in identity_mutants(e.id, e.claim) if m.site == "result:negate"]
        refuted = [ev for ev in check_identity(mutant.claim, levels=RANDOMIZED).evidence if ev.holds is False]
        assert refuted and all(ev.witness is not None for ev in refuted), e.id


# --------------------------------------------------------------------------------------------------------------
# exhaustive: every entry audited, every mutant, 10 000 seeds (CI's second step)
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_entry_audits_as_recorded_and_no_true_entry_is_refuted(corpus):
    for e in corpus:
        record = audit_entry(e)
        assert record.computed is e.status, (e.id, record.reason)
        if e.status is Status.PROVED:
            assert all(ev.holds is not False for ev in record.evidence), e.id


def _extra_mutants(e):
    """Corruptions the generic operators miss on fractions: one entry doubled, every Max turned into a Min."""
    def scaled(env, dims, f=e.claim.rhs):
        m = f(env, dims)
        m = sympy.Matrix(m) if isinstance(m, sympy.MatrixBase) else sympy.Matrix([[m]])
        m[0, 0] = 2 * m[0, 0]
        return m

    def minimum(env, dims, f=e.claim.rhs):
        m = f(env, dims)
        return m.replace(sympy.Max, sympy.Min)

    out = [("scale-entry", dataclasses.replace(e.claim, rhs=scaled))]
    inst = e.claim.instantiate(e.claim.check_point)
    if any(x.has(sympy.Max) for x in inst.rhs):
        out.append(("max-to-min", dataclasses.replace(e.claim, rhs=minimum)))
    return out


@pytest.mark.slow
def test_every_mutant_is_refuted_with_a_witness_unless_it_is_proved_equivalent(corpus):
    survivors = []
    for e in corpus:
        if e.status is not Status.PROVED:
            continue
        mutants = [(m.site, m.claim) for m in identity_mutants(e.id, e.claim)] + _extra_mutants(e)
        for site, claim in mutants:
            evidence = check_identity(claim, levels=(Level.SYMBOLIC, Level.EXACT, Level.FLOAT)).evidence
            refuted = [ev for ev in evidence if ev.holds is False]
            symbolic = next(ev for ev in evidence if ev.level is Level.SYMBOLIC)
            assert all(ev.witness is not None or "reason" in (ev.counterexample or {}) for ev in refuted), (e.id, site)
            if not refuted and symbolic.holds is not True:
                survivors.append((e.id, site))
    assert not survivors


@pytest.mark.slow
def test_ten_thousand_seeds_give_no_false_refutation(corpus):
    cache = InstanceCache()
    claims = _true_claims(corpus)
    for seed in range(10_000):
        for name, claim in claims:
            for ev in check_identity(claim, seed=seed, levels=RANDOMIZED, cache=cache).evidence:
                assert ev.holds is not False, (name, seed, ev.detail)
