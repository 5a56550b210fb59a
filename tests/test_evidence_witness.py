"""Witnesses, canonical forms, interval enclosures and hypotheses (symuat.evidence.witness, canonical, interval,
hypotheses): properties over random inputs, each checked against a computation that does not share their code."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from symuat.errors import UnsupportedError
from symuat.evidence.canonical import reduces_to_zero
from symuat.evidence.fields import RationalField, RealField
from symuat.evidence.hypotheses import Hypotheses
from symuat.evidence.interval import disjoint, enclose
from symuat.evidence.witness import find_witness

x, y, z = sympy.symbols("x y z")
_LEAVES = [x, y, z, sympy.Integer(2), sympy.Rational(-1, 3)]
_UNARY = [sympy.exp, sympy.tanh, sympy.erf, sympy.sin, sympy.cos, sympy.Abs, lambda a: sympy.Max(a, y),
          lambda a: sympy.Min(a, 1), lambda a: a ** 2, lambda a: -a]


@st.composite
def _expressions(draw):
    nodes = list(_LEAVES)
    for _ in range(draw(st.integers(1, 8))):
        a, b = draw(st.sampled_from(nodes)), draw(st.sampled_from(nodes))
        op = draw(st.sampled_from(["add", "mul", "unary"]))
        nodes.append(a + b if op == "add" else a * b if op == "mul" else draw(st.sampled_from(_UNARY))(a))
    return nodes[-1]


@settings(max_examples=60, deadline=None)
@given(_expressions(), st.floats(-3, 3), st.floats(-3, 3), st.floats(-3, 3))
def test_an_enclosure_contains_the_value_at_sixty_digits(expr, a, b, c):
    point = {x: a, y: b, z: c}
    try:
        box = enclose(expr, point, 128)
    except UnsupportedError:
        return
    with mpmath.workdps(60):
        value = expr.evalf(60, subs={s: sympy.Float(v, 60) for s, v in point.items()})
        if value.is_real:
            assert mpmath.mpf(box.a) - mpmath.mpf("1e-45") <= mpmath.mpf(str(value)) <= mpmath.mpf(box.b) \
                + mpmath.mpf("1e-45")


def _integer_digits(expr: sympy.Expr, point: dict) -> int:
    """How many decimal digits |expr| has before the point at ``point`` (0 below 1)."""
    value = abs(expr.evalf(15, subs=point))
    return 0 if value < 1 else int(sympy.log(value, 10).evalf(15)) + 1


@settings(max_examples=40, deadline=None)
@given(_expressions())
def test_a_canonical_form_never_proves_a_difference_that_is_not_zero(expr):
    """Whatever ``reduces_to_zero`` proves vanishes at random points (mpmath, 50 digits after the point: a term of
    ``exp(exp(2x + y))`` has 500 digits before it at some points, and 50 significant digits would leave its
    difference undecided, ``0.e+375``)."""
    other = sympy.expand(expr) + sympy.Max(x, y) - sympy.Max(y, x)
    for diff in (expr - other, expr - other + x * 10 ** -3):
        if reduces_to_zero(diff) is None:
            continue
        rng = np.random.default_rng(0)
        for _ in range(5):
            point = {s: sympy.Float(float(rng.uniform(-3, 3)), 50) for s in (x, y, z)}
            digits = max(_integer_digits(expr, point), _integer_digits(other, point))
            assume(digits <= 2000)  # beyond: more digits than a test should compute
            assert abs(diff.evalf(50 + digits, subs=point)) < 1e-30


def test_canonical_forms_prove_equal_fractions_exponentials_and_cases():
    a, b, c = sympy.symbols("a b c")
    assert reduces_to_zero(a / (a + b) + b / (a + b) - 1) == "common denominator"
    assert reduces_to_zero(sympy.cos(a) ** 2 + sympy.sin(a) ** 2 - 1) == "exp/log normal form"
    assert reduces_to_zero(sympy.Abs(a - b) - sympy.Max(a - b, b - a)) == "case split"
    assert reduces_to_zero(sympy.Max(a, b) - a) is None  # false for b > a
    assert reduces_to_zero(sympy.Max(a, b) - b, {a: b - sympy.Dummy("d", nonnegative=True)}) == "order hypotheses"


def _draw(hyp, entries):
    def draw(fld, t):
        rng = np.random.default_rng([5, t])
        values = {s: fld.random(rng) for name in entries for s in entries[name]}
        kind = {RealField: "real", RationalField: "rational"}.get(type(fld))
        return values if kind is None else hyp.apply(values, entries, kind)
    return draw


@settings(max_examples=50, deadline=None)
@given(st.sampled_from([("a > 0",), ("a >= 0", "b > a"), ("a < 0", "b <= a"), ("a != 0",), ("a integer", "a > 0"),
                        ("b < 0", "a < b"), ("a > 0", "b >= a", "b integer", "a integer")]),
       st.integers(0, 10_000), st.sampled_from(["real", "rational"]))
def test_random_points_lie_inside_the_hypotheses(statements, seed, kind):
    hyp = Hypotheses.parse(statements, ("a", "b"))
    a, b = sympy.symbols("a b")
    fld = RealField() if kind == "real" else RationalField(0)
    rng = np.random.default_rng(seed)
    values = hyp.apply({a: fld.random(rng), b: fld.random(rng)}, {"a": (a,), "b": (b,)}, kind)
    va, vb = values[a], values[b]
    for text in statements:
        holds = {"a > 0": va > 0, "a >= 0": va >= 0, "a < 0": va < 0, "a != 0": va != 0, "b > a": vb > va,
                 "b <= a": vb <= va, "b < 0": vb < 0, "a < b": va < vb, "b >= a": vb >= va,
                 "a integer": va == int(va), "b integer": vb == int(vb)}[text]
        assert holds, (text, va, vb)


def test_a_witness_is_found_in_the_field_the_sides_need_and_rechecked():
    hyp = Hypotheses.parse((), ("x", "y"))
    draw = _draw(hyp, {"x": (x,), "y": (y,)})
    w, _ = find_witness(x * y + 1, x * y, draw)
    assert w.field.startswith("F_p") and "mod p" in w.checked_by
    w, _ = find_witness(sympy.Abs(x), x, draw)
    assert w.field == "Q" and Fraction(w.point["x"]) < 0
    w, _ = find_witness(sympy.exp(x + y), sympy.exp(x) + sympy.exp(y), draw)
    assert w.field.startswith("R") and disjoint(*(enclose(e, {x: float(w.point["x"]), y: float(w.point["y"])}, 128)
                                                  for e in (sympy.exp(x + y), sympy.exp(x) + sympy.exp(y))))
    assert find_witness(sympy.exp(x) * sympy.exp(y), sympy.exp(x + y), draw)[0] is None  # true: no witness


def test_a_side_no_evaluator_knows_has_no_witness_and_says_why():
    w, why = find_witness(sympy.Function("g")(x), x, _draw(Hypotheses.parse((), ("x",)), {"x": (x,)}))
    assert w is None and why == "no level evaluates g (g(x))"


@pytest.mark.parametrize("statements,match", [
    (("u < v", "w < v"), "at most one order per variable"),
    (("u < v", "v < u"), "at most one order|cycle"),
    (("u < v", "v integer"), "declare both integer or neither"),
])
def test_orders_that_cannot_be_drawn_are_refused(statements, match):
    with pytest.raises(Exception, match=match):
        Hypotheses.parse(statements, ("u", "v", "w"))
