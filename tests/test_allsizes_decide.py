"""The all-sizes level: decisions for every size, smallest witnesses, and agreement with explicit expansion."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symuat import Identity, dims_grid
from symuat.algebra.diamond import diamond
from symuat.algebra.matrices import elementwise, identity_matrix, kron, vec_r
from symuat.allsizes import decide, normal_form
from symuat.allsizes.size_mutants import standard_polynomial, wedge
from symuat.evidence.fields import SIGMA
from symuat.evidence.identity import check_identity
from symuat.evidence.verdict import Level

COQ = Path(__file__).resolve().parent.parent / "coq"


def _s4(grid) -> Identity:
    names = ("A", "B", "C", "D")
    return Identity(shapes=lambda d: {k: (d["n"], d["n"]) for k in names},
                    lhs=lambda e, d: standard_polynomial([e[k] for k in names]),
                    rhs=lambda e, d: 0 * e["A"], dims=dims_grid(n=grid), levels=(Level.SYMBOLIC,))


def test_s4_fools_the_grid_but_not_all_sizes():
    ident = _s4((1, 2))
    grid = check_identity(ident, levels=[Level.SYMBOLIC])
    assert grid.holds  # S_4 vanishes on 1x1 and 2x2 matrices
    ev = decide(ident).evidence
    assert ev is not None and not ev.holds
    assert ev.counterexample["dims"] == {"n": 3}
    assert "smallest witness" in ev.detail
    assert not check_identity(ident).holds  # the hook adds the level to the verdict


def _wedge4() -> Identity:
    r"""Antisymmetrised :math:`v_1\otimes v_2\otimes v_3\otimes v_4`: zero exactly when :math:`n \le 3`."""
    names = ("u1", "u2", "u3", "u4")

    return Identity(shapes=lambda d: {k: (d["n"], 1) for k in names}, lhs=lambda e, d: wedge([e[k] for k in names]),
                    rhs=lambda e, d: 0 * kron(kron(e["u1"], e["u1"]), kron(e["u1"], e["u1"])),
                    dims=dims_grid(n=(1, 2, 3)), levels=(Level.SYMBOLIC,))


def test_identity_failing_only_from_size_4_is_rejected():
    ident = _wedge4()
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds  # true on the whole grid n <= 3
    ev = decide(ident).evidence
    assert not ev.holds and ev.counterexample["dims"] == {"n": 4}


def test_true_kronecker_rules_hold_for_every_size():
    shapes = lambda d: {"A": (d["N"], d["p"]), "X": (d["p"], d["q"]), "B": (d["q"], d["M"]),  # noqa: E731
                        "C": (d["p"], d["N"]), "D": (d["M"], d["q"]), "v": (d["p"], 1)}
    grid = dims_grid(N=(1, 2), M=(1, 2), p=(1, 2), q=(1, 2))
    rules = [
        (lambda e, d: vec_r(e["A"] * e["X"] * e["B"]), lambda e, d: kron(e["A"], e["B"].T) * vec_r(e["X"])),
        (lambda e, d: kron(e["A"], e["D"]).T, lambda e, d: kron(e["A"].T, e["D"].T)),
        (lambda e, d: kron(e["A"], e["B"]) * kron(e["C"], e["D"]), lambda e, d: kron(e["A"] * e["C"], e["B"] * e["D"])),
        (lambda e, d: diamond(e["v"], e["X"]), lambda e, d: e["X"].T * e["v"]),
        (lambda e, d: e["X"] * identity_matrix(d["q"]), lambda e, d: identity_matrix(d["p"]) * e["X"]),
        (lambda e, d: elementwise(SIGMA, e["A"] * e["C"]).T, lambda e, d: elementwise(SIGMA, e["C"].T * e["A"].T)),
    ]
    for lhs, rhs in rules:
        ident = Identity(shapes=shapes, lhs=lhs, rhs=rhs, dims=grid, levels=(Level.SYMBOLIC,))
        decision = decide(ident)
        assert decision.inside and decision.evidence.holds, decision


def test_sigma_arguments_are_compared_as_normal_forms():
    shapes = lambda d: {"A": (d["n"], d["n"]), "B": (d["n"], d["n"])}  # noqa: E731
    wrong = Identity(shapes=shapes, lhs=lambda e, d: elementwise(SIGMA, e["A"] * e["B"]),
                     rhs=lambda e, d: elementwise(SIGMA, e["B"] * e["A"]), dims=dims_grid(n=(1,)))
    ev = decide(wrong).evidence
    assert not ev.holds and ev.counterexample["dims"] == {"n": 2}


def test_outside_the_fragment_keeps_the_grid_proof():
    ident = Identity(shapes=lambda d: {"A": (d["n"], d["n"])},
                     lhs=lambda e, d: sympy.ImmutableMatrix(d["n"], d["n"], lambda i, j: e["A"][i, j]),
                     rhs=lambda e, d: e["A"], dims=dims_grid(n=(1, 2)))
    decision = decide(ident)
    assert not decision.inside
    assert "concrete value of the size n" in decision.reason
    undecided = check_identity(ident).evidence[0]  # shown, never silently absent
    assert undecided.level is Level.ALL_SIZES and undecided.holds is None
    assert undecided.detail.startswith("undecided: ") and "concrete value of the size n" in undecided.detail


@pytest.mark.parametrize("builder, reason", [
    (lambda e, d: sympy.sqrt(2) * e["A"], "not rational"),
    (lambda e, d: e["A"][0, 0] * e["A"], "concrete position"),
    (lambda e, d: e["A"] ** 2, "does not model"),
])
def test_unsupported_operations_are_reported_with_a_reason(builder, reason):
    ident = Identity(shapes=lambda d: {"A": (d["n"], d["n"])}, lhs=builder, rhs=lambda e, d: e["A"],
                     dims=dims_grid(n=(1, 2)))
    decision = decide(ident)
    assert not decision.inside and reason in decision.reason


def test_decisions_are_cached_per_identity():
    ident = _s4((1,))
    assert decide(ident) is decide(ident)


def test_every_proved_ledger_identity_is_decided_for_every_size(ledger):
    """A true ledger identity inside the fragment is accepted; one outside it belongs to an entry whose Coq theorem
    (a link that is not a negation, to a theorem of coq/ that tests/test_coq.py compiles and closes) states it for
    every size: every proved explicit identity of the shipped ledger is decided for every size (docs/all-sizes.md)."""
    from symuat.ledger.entry import Readings, Status
    inside, by_coq = 0, {}
    for entry in ledger:
        if entry.status is not Status.PROVED:
            continue
        claim = entry.claim
        idents = [claim] if isinstance(claim, Identity) else (
            list(claim.readings.values()) if isinstance(claim, Readings) else [])
        for ident in idents:
            if isinstance(ident, Identity):
                decision = decide(ident)
                if decision.inside:
                    inside += 1
                    assert decision.evidence.holds, (entry.id, decision.evidence.detail)
                else:
                    by_coq[entry.id] = entry
    assert inside >= 70
    for entry in by_coq.values():
        assert entry.coq is not None and not entry.coq.negation, (entry.id, "outside the fragment, no Coq theorem")
        file, name = entry.coq.theorem.split(".")
        assert re.search(rf"\b(Theorem|Lemma)\s+{re.escape(name)}\b", (COQ / f"{file}.v").read_text()), entry.id
    assert {"ext:alibi.closed-form", "ext:moe.unselected-experts", "ext:relative-bias.buckets"} <= set(by_coq)


# --- property test: random expressions against explicit expansion ---------------------------------

_LEAVES = ("A", "B", "C", "I")


def _expr(draw_depth):
    leaf = st.sampled_from(_LEAVES).map(lambda n: ("leaf", n))
    return st.recursive(leaf, lambda sub: st.one_of(
        st.tuples(st.just("T"), sub), st.tuples(st.just("neg"), sub), st.tuples(st.just("sigma"), sub),
        st.tuples(st.just("scale"), st.integers(-2, 3), sub),
        st.tuples(st.just("+"), sub, sub), st.tuples(st.just("*"), sub, sub)), max_leaves=draw_depth)


def _build(tree, e, d):
    op = tree[0]
    if op == "leaf":
        return identity_matrix(d["n"]) if tree[1] == "I" else e[tree[1]]
    if op == "T":
        return _build(tree[1], e, d).T
    if op == "neg":
        return -_build(tree[1], e, d)
    if op == "sigma":
        return elementwise(SIGMA, _build(tree[1], e, d))
    if op == "scale":
        return tree[1] * _build(tree[2], e, d)
    a, b = _build(tree[1], e, d), _build(tree[2], e, d)
    return a + b if op == "+" else a * b


def _push_transposes(tree, flip=False):
    """A value-preserving rewrite: transposes pushed to the leaves (the EQ direction of the test)."""
    op = tree[0]
    if op == "leaf":
        return ("T", tree) if flip and tree[1] != "I" else tree
    if op == "T":
        return _push_transposes(tree[1], not flip)
    if op in ("neg", "scale", "sigma"):
        return tree[:-1] + (_push_transposes(tree[-1], flip),)
    a, b = _push_transposes(tree[1], flip), _push_transposes(tree[2], flip)
    if op == "*" and flip:
        a, b = b, a
    return (op, a, b)


def _square(lhs_tree, rhs_tree) -> Identity:
    return Identity(shapes=lambda d: {k: (d["n"], d["n"]) for k in "ABC"},
                    lhs=lambda e, d: _build(lhs_tree, e, d), rhs=lambda e, d: _build(rhs_tree, e, d),
                    dims=dims_grid(n=(1,)), levels=(Level.SYMBOLIC,))


def _explicit_holds(ident, n) -> bool:
    inst = ident.instantiate({"n": n})
    return all(sympy.expand(inst.lhs[i] - inst.rhs[i]) == 0 for i in range(len(inst.lhs)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_expr(5), _expr(5), st.booleans(), st.integers(1, 4))
def test_procedure_agrees_with_explicit_expansion(t1, t2, rewrite, n):
    ident = _square(t1, _push_transposes(t1) if rewrite else t2)
    ev = decide(ident).evidence
    assert ev is not None
    if ev.holds:
        assert _explicit_holds(ident, n)
    else:
        witness = ev.counterexample["dims"]["n"]
        assert not _explicit_holds(ident, witness)
        assert all(_explicit_holds(ident, m) for m in range(1, witness))
        assert not rewrite


def test_normal_form_of_a_true_identity_is_empty():
    ident = _square(("T", ("*", ("leaf", "A"), ("leaf", "B"))), ("*", ("T", ("leaf", "B")), ("T", ("leaf", "A"))))
    forms, bounds, _, _ = normal_form(ident)
    assert forms == {} and bounds == {"n": 1}
    assert dataclasses.is_dataclass(decide(ident))


def test_declared_shapes_and_keyword_builders_are_traced():
    ident = Identity(shapes={"A": ("N", "h*m"), "B": ("h*m", "N"), "x": ("N", 1)},
                     lhs=lambda A, B, x: vec_r((A * B).T * x), rhs=lambda A, B, x: B.T * (A.T * x),
                     dims=dims_grid(N=(1, 2), h=(1, 2), m=(1, 2)))
    ev = decide(ident).evidence
    assert ev.holds and "every N, h, m" in ev.detail


def test_declared_difference_of_sizes_is_outside():
    ident = Identity(shapes={"A": ("N-1", "N")}, lhs=lambda A: A, rhs=lambda A: A, dims=dims_grid(N=(2, 3)))
    decision = decide(ident)
    assert not decision.inside and "only + and * are sizes" in decision.reason


def test_sides_of_different_layouts_get_a_shape_witness():
    ident = Identity(shapes={"v": ("n", 1)}, lhs=lambda v: v, rhs=lambda v: v.T, dims=dims_grid(n=(1,)))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds  # a 1x1 grid cannot see it
    ev = decide(ident).evidence
    assert not ev.holds and ev.counterexample["dims"] == {"n": 2} and "shapes (2, 1) and (1, 2)" in ev.detail


def test_scalar_variables_are_coefficients_for_every_size():
    true = Identity({"X": ("N", "M"), "W": ("M", "N"), "a": (), "b": ()}, lambda X, W, a, b: (a * X) * (b * W),
                     lambda X, W, a, b: (a * b) * (X * W), dims_grid(N=(1, 2), M=(1, 2)))
    ev = decide(true).evidence
    assert ev.holds is True and "equal for every N, M >= 1" in ev.detail
    false = Identity({"X": ("N", "N"), "a": ()}, lambda X, a: a * X, lambda X, a: 2 * a * X, dims_grid(N=(1, 2)))
    ev = decide(false).evidence
    assert ev.holds is False and ev.witness is not None and "'a'" not in ev.detail
    scalar_sides = Identity({"a": (), "b": ()}, lambda a, b: (a + b) ** 2, lambda a, b: a ** 2 + 2 * a * b + b ** 2,
                             ({"d": 1},))
    assert decide(scalar_sides).evidence.holds is True
    assert decide(Identity({"a": ()}, lambda a: sympy.exp(a), lambda a: sympy.exp(a), ({"d": 1},))).evidence is None
