"""Claim construction: declared shapes, keyword builders, validation at construction."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat import (
    ArgumentTypeError,
    Identity,
    InvalidValueError,
    Level,
    OpaqueIdentity,
    ShapeError,
    check_identity,
    dims_grid,
    kron,
    vec_r,
)
from symuat.evidence.declare import DeclaredShapes, DimensionExpr, KeywordBuilder, as_builder

DIMS = dims_grid(N=(1, 2), M=(1, 2))


def test_declared_shapes_evaluate_arithmetic_over_dimensions():
    shapes = DeclaredShapes({"X": ("N", "M"), "WO": ("h*d", "h*(m+1)-1"), "c": (1, "N")}, ("N", "M", "h", "d", "m"))
    assert shapes({"N": 2, "M": 3, "h": 2, "d": 5, "m": 4}) == {"X": (2, 3), "WO": (10, 9), "c": (1, 2)}


@given(st.integers(1, 9), st.integers(1, 9), st.integers(-5, 5))
@settings(max_examples=40, deadline=None)
def test_dimension_expression_agrees_with_python_arithmetic(a, b, k):
    expr = DimensionExpr.parse(f"a*(b+{k})-a", ("a", "b"))
    assert expr.value({"a": a, "b": b}) == a * (b + k) - a


@pytest.mark.parametrize("text,match", [
    ("N/2", "may only use"), ("N**2", "may only use"), ("__import__('os')", "may only use"),
    ("N.real", "may only use"), ("N +", "cannot parse"), ("K*N", "K in 'K\\*N' is not a dimension"),
])
def test_dimension_expressions_are_parsed_safely(text, match):
    with pytest.raises(InvalidValueError, match=match):
        DimensionExpr.parse(text, ("N",))


@pytest.mark.parametrize("shape,error,match", [
    (("N",), ArgumentTypeError, "must be a pair"), (("N", 1.5), ArgumentTypeError, "must be an int or a string"),
])
def test_declared_shapes_reject_malformed_entries(shape, error, match):
    with pytest.raises(error, match=match):
        Identity({"X": shape}, lambda X: X, lambda X: X, DIMS)


def test_declared_shape_that_is_not_positive_fails_the_levels_with_the_reason():
    ident = Identity({"X": ("N-1", "M")}, lambda X: X, lambda X: X, ({"N": 1, "M": 1},))
    verdict = check_identity(ident)
    assert not verdict.holds and verdict.consistent
    assert all("rows=N-1 = 0" in ev.detail for ev in verdict.decided)


def test_keyword_builders_receive_variables_and_dimensions():
    ident = Identity({"A": ("N", "N"), "X": ("N", "M"), "B": ("M", "M")},
                     lhs=lambda A, X, B: vec_r(A * X * B), rhs=lambda A, B, X: kron(A, B.T) * vec_r(X),
                     dims=DIMS, reference=lambda A, X, B, N, M: (A @ X @ B).reshape(N * M))
    assert isinstance(ident.lhs, KeywordBuilder) and ident.lhs.params == ("A", "X", "B")
    assert check_identity(ident).holds
    wrong = Identity(ident.shapes, lhs=lambda A, X, B: vec_r(A * X * B), rhs=lambda A, B, X: kron(A, B) * vec_r(X),
                     dims=DIMS)
    assert not check_identity(wrong).holds


def test_dimension_named_d_does_not_turn_the_positional_form_into_keywords():
    calls = []

    def lhs(e, d):
        calls.append((sorted(e), dict(d)))
        return e["X"]

    ident = Identity({"X": ("d", 1)}, lhs, lambda X, d: X * sympy.Integer(d) / d, dims_grid(d=(1, 2)),
                     levels=(Level.SYMBOLIC,))
    assert ident.lhs is lhs and isinstance(ident.rhs, KeywordBuilder)
    assert check_identity(ident).holds
    assert calls[0] == (["X"], {"d": 1})


def test_positional_builder_whose_second_parameter_is_a_variable():
    ident = Identity({"X": ("N", 1), "d": ("N", 1)}, lambda e, d: e["X"] + e["d"], lambda X, d: d + X, DIMS)
    assert not isinstance(ident.lhs, KeywordBuilder) and ident.rhs.params == ("X", "d")
    assert check_identity(ident).holds


def test_positional_reference_with_a_variable_named_like_the_arrays_argument():
    ident = Identity({"a": ("N", 1)}, lambda a: 2 * a, lambda a: a + a, DIMS,
                     reference=lambda a, d: 2 * a["a"], levels=(Level.FLOAT,))
    assert check_identity(ident).holds


@pytest.mark.parametrize("builder,match", [
    (lambda X, Wt, N: X, "parameter 'Wt' is neither a declared variable \\(X\\) nor a dimension \\(M, N\\)"),
    (lambda e: e["X"], "parameter 'e'"),
    (lambda N, e: e, "parameter 'e'"),
    (lambda X, N, Wt: X, "parameter 'Wt'"),
])
def test_unknown_builder_keyword_fails_at_construction(builder, match):
    with pytest.raises(InvalidValueError, match=match):
        Identity({"X": ("N", "M")}, builder, lambda X: X, DIMS)


def test_tuple_of_ints_as_dims_fails_at_construction_naming_the_parameter():
    with pytest.raises(ArgumentTypeError, match=r"Identity.dims\[0\] must be a dict of dimensions"):
        Identity({"X": ("N", "M")}, lambda X: X, lambda X: X, (2, 3))
    with pytest.raises(ArgumentTypeError, match="Identity.dims must be a tuple of dimension dicts"):
        Identity({"X": ("N", "M")}, lambda X: X, lambda X: X, {"N": 2, "M": 3})


@pytest.mark.parametrize("dims,error,match", [
    (({"N": 0, "M": 1},), ShapeError, r"Identity.dims\[0\]\['N'\]=0 must be a positive integer"),
    (({"N": 1.5, "M": 1},), ArgumentTypeError, r"Identity.dims\[0\]\['N'\] must be an integer, got float"),
    (({"N": True, "M": 1},), ArgumentTypeError, "must be an integer, got bool"),
    (({"N": 1, "M": 1}, {"N": 2}), InvalidValueError, "every dimension tuple must name the same dimensions"),
    ((), InvalidValueError, "at least one dimension tuple"),
])
def test_dims_are_validated_at_construction(dims, error, match):
    with pytest.raises(error, match=match):
        Identity(lambda d: {}, lambda e, d: 0, lambda e, d: 0, dims)


def test_random_dims_must_name_the_same_dimensions():
    with pytest.raises(InvalidValueError, match="random_dims has dimensions"):
        Identity({"X": ("N", "M")}, lambda X: X, lambda X: X, DIMS, random_dims={"N": 3})


@pytest.mark.parametrize("field", ["shapes", "lhs", "rhs", "reference"])
def test_builders_must_be_callable(field):
    kwargs = dict(shapes=lambda d: {"X": (1, 1)}, lhs=lambda e, d: e["X"], rhs=lambda e, d: e["X"], dims=DIMS)
    kwargs[field] = 3
    with pytest.raises(ArgumentTypeError, match=f"Identity.{field} must be callable, got int 3"):
        Identity(**kwargs)


def test_variable_and_dimension_may_not_share_a_name():
    with pytest.raises(InvalidValueError, match="N names both a variable and a dimension"):
        Identity({"N": ("N", 1)}, lambda N: N, lambda N: N, DIMS)


def test_callable_shapes_that_raise_are_reported_at_construction():
    with pytest.raises(InvalidValueError, match="Identity.shapes raised KeyError"):
        Identity(lambda d: {"X": (d["K"], 1)}, lambda e, d: e["X"], lambda e, d: e["X"], DIMS)


def test_levels_are_validated():
    with pytest.raises(ArgumentTypeError, match="levels must be a tuple of Level"):
        Identity({"X": ("N", "M")}, lambda X: X, lambda X: X, DIMS, levels=("symbolic",))


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(cases=()), InvalidValueError, "at least one case"),
    (dict(cases=3), ArgumentTypeError, "must be a tuple of cases"),
    (dict(cases=(1,), width=0), ShapeError, "OpaqueIdentity.width=0 must be a positive integer"),
    (dict(cases=(1,), lhs=None), ArgumentTypeError, "OpaqueIdentity.lhs must be callable"),
    (dict(cases=(1,), reference="ref"), ArgumentTypeError, "OpaqueIdentity.reference must be callable"),
    (dict(cases=(1,), levels=()), InvalidValueError, "at least one level"),
])
def test_opaque_identity_is_validated_at_construction(kwargs, error, match):
    w = sympy.Symbol("W", commutative=False)
    args = dict(lhs=lambda c: w, rhs=lambda c: w) | kwargs
    with pytest.raises(error, match=match):
        OpaqueIdentity(**args)


def test_as_builder_leaves_positional_and_variadic_builders_alone():
    def f(*args):
        return args

    assert as_builder("lhs", f, ["X"], ["N"]) is f
    assert as_builder("lhs", np.add, ["X"], ["N"]) is np.add
