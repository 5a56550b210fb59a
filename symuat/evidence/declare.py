r"""Declared shapes and keyword builders: how a claim names its variables and dimensions.

A claim (:class:`~symuat.evidence.identity.Identity`) may state its shapes as data,

>>> shapes = DeclaredShapes({"X": ("N", "M"), "WO": ("h*d", "h*m")}, ("N", "M", "h", "d", "m"))
>>> shapes({"N": 2, "M": 3, "h": 2, "d": 1, "m": 4})
{'X': (2, 3), 'WO': (2, 8)}

and its builders (``lhs``, ``rhs``, ``reference``) as functions of the variables
and dimensions they use, by name.  The calling rule:

* the **positional form** ``f(env, dims)`` (``reference``: ``f(arrays, dims)``) when the builder
  has exactly two required parameters and the first names neither a variable nor a dimension
  (``lambda e, d``, ``lambda env, dims`` — whatever ``d`` names), or the first names a variable
  and the second names nothing (``lambda a, d`` with a variable ``a``);
* otherwise the **keyword form**: every required parameter names a declared variable or a
  dimension and receives it by keyword (``lambda X, W: X * W``, ``lambda W, X, N: ...``; a
  variable is its symbol matrix, or its NumPy array for ``reference``, a dimension its integer);
* anything else fails at construction, naming the parameter that is neither a variable nor a
  dimension (``lambda X, Wt, N`` when ``Wt`` is not declared).

Parameters with a default value are never supplied (they may capture loop variables).
"""

from __future__ import annotations

import ast
import inspect
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ArgumentTypeError, InvalidValueError, ShapeError
from ..validation import check_callable, check_positive_int

__all__ = ["DimensionExpr", "DeclaredShapes", "KeywordBuilder", "as_builder", "check_dims"]

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


@dataclass(frozen=True)
class DimensionExpr:
    r"""An integer arithmetic expression over dimension names (``+``, ``-``, ``*``, integers, parentheses).

    Parsed with :mod:`ast` and evaluated by walking the tree (no ``eval``).

    >>> DimensionExpr.parse("h*(d+1)", ("h", "d")).value({"h": 2, "d": 3})
    8
    """

    text: str
    tree: ast.expr
    names: frozenset[str]

    @classmethod
    def parse(cls, text: object, dimensions: Iterable[str], where: str = "shape") -> DimensionExpr:
        if isinstance(text, bool) or not isinstance(text, (int, str)):
            raise ArgumentTypeError(f"{where}: a dimension must be an int or a string such as 'h*d', "
                                    f"got {type(text).__name__} {text!r}")
        source = str(text)
        try:
            tree = ast.parse(source, mode="eval").body
        except SyntaxError:
            raise InvalidValueError(f"{where}: cannot parse the dimension {source!r}") from None
        names = frozenset(_names(tree, source, where))
        unknown = sorted(names - set(dimensions))
        if unknown:
            raise InvalidValueError(f"{where}: {', '.join(unknown)} in {source!r} is not a dimension "
                                    f"(dimensions: {', '.join(sorted(dimensions)) or 'none'})")
        return cls(source, tree, names)

    def value(self, dims: Mapping[str, int]) -> int:
        return _value(self.tree, dims)


def _names(node: ast.expr, source: str, where: str) -> Iterable[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        yield from _names(node.left, source, where)
        yield from _names(node.right, source, where)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        yield from _names(node.operand, source, where)
    else:
        raise InvalidValueError(f"{where}: {source!r} uses {ast.unparse(node)!r}; a dimension may only use "
                                f"dimension names, integers, +, -, * and parentheses")


def _value(node: ast.expr, dims: Mapping[str, int]) -> int:
    if isinstance(node, ast.Name):
        return dims[node.id]
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp):
        return -_value(node.operand, dims)
    return _BINARY[type(node.op)](_value(node.left, dims), _value(node.right, dims))


@dataclass(frozen=True)
class DeclaredShapes:
    """``{variable: (rows, cols)}`` declared as data (``()`` for a scalar); calling it at ``dims`` gives integer
    shapes."""

    declared: Mapping[str, tuple[int | str, int | str]]
    dimensions: tuple[str, ...]

    def __post_init__(self) -> None:
        parsed = {}
        for name, shape in self.declared.items():
            if not isinstance(name, str) or not name:
                raise ArgumentTypeError(f"shapes: variable names must be non-empty strings, got {name!r}")
            if not isinstance(shape, (tuple, list)) or len(shape) not in (0, 2):
                raise ArgumentTypeError(f"shapes[{name!r}] must be a pair (rows, cols), or () for a scalar, "
                                        f"got {shape!r}")
            parsed[name] = tuple(DimensionExpr.parse(s, self.dimensions, f"shapes[{name!r}]") for s in shape)
        object.__setattr__(self, "_parsed", parsed)

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(self.declared)

    def __call__(self, dims: Mapping[str, int]) -> dict[str, tuple[int, int]]:
        out = {}
        for name, shape in self._parsed.items():
            if not shape:  # a scalar
                out[name] = ()
                continue
            rows, cols = shape
            r, c = rows.value(dims), cols.value(dims)
            for label, expr, v in (("rows", rows, r), ("cols", cols, c)):
                if v <= 0:
                    raise ShapeError(f"shapes[{name!r}] {label}={expr.text} = {v} at dims {dict(dims)}: "
                                     f"must be a positive integer")
            out[name] = (r, c)
        return out


@dataclass(frozen=True)
class KeywordBuilder:
    """A builder in keyword form, called as ``(env, dims)`` by the evidence levels."""

    func: Callable
    params: tuple[str, ...]

    def __call__(self, env: Mapping[str, Any], dims: Mapping[str, int]) -> Any:
        return self.func(**{p: env[p] if p in env else dims[p] for p in self.params})


def as_builder(name: str, func: object, variables: Iterable[str], dimensions: Iterable[str]) -> Callable:
    """Return ``func`` as an ``(env, dims)`` callable, applying the calling rule of this module.

    >>> b = as_builder("lhs", lambda X, N: (X, N), ["X"], ["N"])
    >>> b({"X": "x"}, {"N": 2})
    ('x', 2)
    >>> as_builder("lhs", lambda X, Y, N: X, ["X"], ["N"])
    Traceback (most recent call last):
    ...
    symuat.errors.InvalidValueError: lhs: parameter 'Y' is neither a declared variable (X) nor a dimension (N)
    """
    check_callable(name, func)
    if isinstance(func, KeywordBuilder):
        return func
    variables, dimensions = set(variables), set(dimensions)
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # builtins without a signature: the positional form
        return func
    kinds = {p.kind for p in signature.parameters.values()}
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return func
    required = [p.name for p in signature.parameters.values()
                if p.default is inspect.Parameter.empty and p.kind is not inspect.Parameter.VAR_KEYWORD]
    names = variables | dimensions
    if len(required) == 2 and (required[0] not in names or (required[0] in variables and required[1] not in names)):
        return func
    unknown = [p for p in required if p not in names]
    if not unknown:
        return KeywordBuilder(func, tuple(required))
    raise InvalidValueError(f"{name}: parameter {unknown[0]!r} is neither a declared variable "
                            f"({', '.join(sorted(variables)) or 'none'}) nor a dimension "
                            f"({', '.join(sorted(dimensions)) or 'none'})")


def check_dims(name: str, dims: object, keys: tuple[str, ...] | None = None) -> dict[str, int]:
    """Validate one dimension tuple: a dict of positive ints (with exactly ``keys`` if given).

    >>> check_dims("dims[0]", {"N": 2})
    {'N': 2}
    """
    if not isinstance(dims, Mapping):
        raise ArgumentTypeError(f"{name} must be a dict of dimensions such as {{'N': 2, 'M': 3}}, "
                                f"got {type(dims).__name__} {dims!r}")
    out = {}
    for k, v in dims.items():
        if not isinstance(k, str) or not k.isidentifier():
            raise ArgumentTypeError(f"{name}: dimension names must be identifiers, got {k!r}")
        out[k] = check_positive_int(f"{name}[{k!r}]", v)
    if keys is not None and tuple(sorted(out)) != tuple(sorted(keys)):
        raise InvalidValueError(f"{name} has dimensions {sorted(out)}, but dims[0] has {sorted(keys)}: "
                                f"every dimension tuple must name the same dimensions")
    return out
