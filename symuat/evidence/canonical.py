r"""Canonical forms that prove :math:`\mathrm{lhs} - \mathrm{rhs} = 0` beyond term-by-term expansion.

The symbolic level first expands (``expand_shared``); a difference that does not expand to 0 may still be 0:
two equal fractions with different denominators, :math:`e^{a}e^{b} = e^{a+b}`, :math:`\max(a, b) - a = (b-a)^+`.
:func:`reduces_to_zero` tries, in order (each step on the result of the previous ones):

1. ``common denominator`` — :func:`sympy.cancel` of :func:`sympy.together` (complete for rational functions);
2. ``exp/log normal form`` — hyperbolic and trigonometric functions rewritten with ``exp``; ``expand_log``
   (with the symbols'
   assumptions), ``expand_power_exp`` and ``powsimp`` to one exponential per product, then a common denominator;
3. ``case split`` — ``Max``, ``Min``, ``Abs``, ``sign``, ``Heaviside`` rewritten as ``Piecewise`` and folded
   (``piecewise_fold``) into one ``Piecewise``; every case must reduce to 0 by steps 1–2 (at most
   :data:`MAX_CASES` cases);
4. ``simplify`` — :func:`sympy.simplify`, on differences of at most :data:`MAX_SIMPLIFY_OPS` operations.

Every symbol is a real number (with the claim's assumptions); an order hypothesis enters as a substitution
(:meth:`~symuat.evidence.hypotheses.Hypotheses.substitution`).  A ``None`` result proves nothing: the level then
looks for a witness, and without one says ``undecided``.

>>> a, b = sympy.symbols("a b")
>>> reduces_to_zero(a / (a * b + a) - 1 / (b + 1))
'common denominator'
>>> reduces_to_zero(sympy.tanh(a) - (sympy.exp(2 * a) - 1) / (sympy.exp(2 * a) + 1))
'exp/log normal form'
>>> reduces_to_zero(sympy.Max(a, b) + sympy.Min(a, b) - a - b)
'case split'
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy
from sympy.core.function import AppliedUndef

__all__ = ["reduces_to_zero", "real_symbols", "MAX_CASES", "MAX_SIMPLIFY_OPS"]

#: Largest number of cases a case split folds into.
MAX_CASES = 64
#: Largest difference (in operations) handed to ``sympy.simplify``.
MAX_SIMPLIFY_OPS = 400
#: Largest difference (in operations) any canonical form is tried on.
MAX_OPS = 20000

_PIECEWISE = (sympy.Max, sympy.Min, sympy.Abs, sympy.sign, sympy.Heaviside)


def real_symbols(expr: sympy.Basic) -> dict:
    """A real counterpart (same name and assumptions, ``real=True``) of every symbol of ``expr`` not known real."""
    out = {}
    for s in expr.free_symbols:
        if s.is_real is not True and isinstance(s, sympy.Symbol) and s.is_commutative:
            flags = {k: v for k, v in s.assumptions0.items() if v is True and k in ("positive", "nonnegative",
                                                                                    "negative", "nonpositive",
                                                                                    "nonzero", "integer")}
            out[s] = sympy.Dummy(s.name, real=True, **flags)
    return out


def _rational(e):
    return sympy.cancel(sympy.together(e))


def _exp_log(e):
    for f in (sympy.tanh, sympy.sinh, sympy.cosh, sympy.sin, sympy.cos):  # trigonometric: exponentials of i*x
        e = e.rewrite(f, sympy.exp)
    e = sympy.expand_log(e, deep=True, force=False)
    e = sympy.expand(sympy.expand_power_exp(e))
    e = sympy.powsimp(e, combine="exp", deep=True)
    e = e.replace(lambda n: isinstance(n, sympy.exp), lambda n: sympy.exp(sympy.expand(n.args[0])))
    return _rational(e)


def _comparison(d) -> tuple[sympy.Expr, int]:
    """``d`` as ``(key, orientation)`` with ``d = orientation * key``: ``d`` and ``-d`` share one key."""
    d = sympy.expand(d)
    content, primitive = d.as_content_primitive()
    if content.is_positive:  # 2(a - b) and a - b have one sign
        d = primitive
    return (-d, -1) if d.could_extract_minus_sign() else (d, 1)


def _sign_options(key) -> tuple[int, ...]:
    """The signs ``key`` may take, pruned by the symbols' assumptions."""
    if key.is_positive:
        return (1,)
    if key.is_negative:
        return (-1,)
    if key.is_zero:
        return (0,)
    if key.is_nonnegative:
        return (1, 0)
    if key.is_nonpositive:
        return (0, -1)
    return (1, 0, -1)


class _Unknown(Exception):
    """A comparison whose sign the current case does not fix yet."""

    def __init__(self, key):
        self.key = key


def _sign(d, signs) -> int:
    if d == 0:
        return 0
    key, orient = _comparison(d)
    if key.is_number:
        return int(sympy.sign(key)) * orient
    if key not in signs:
        raise _Unknown(key)
    return signs[key] * orient


_TRUTH = {sympy.StrictLessThan: lambda s: s < 0, sympy.LessThan: lambda s: s <= 0,
          sympy.StrictGreaterThan: lambda s: s > 0, sympy.GreaterThan: lambda s: s >= 0,
          sympy.Equality: lambda s: s == 0, sympy.Unequality: lambda s: s != 0}


def _truth(cond, signs) -> bool:
    if cond in (sympy.true, sympy.false):
        return bool(cond)
    if cond.func in _TRUTH:
        return _TRUTH[cond.func](_sign(cond.lhs - cond.rhs, signs))
    if isinstance(cond, sympy.And):
        return all(_truth(c, signs) for c in cond.args)
    if isinstance(cond, sympy.Or):
        return any(_truth(c, signs) for c in cond.args)
    if isinstance(cond, sympy.Not):
        return not _truth(cond.args[0], signs)
    raise TypeError(f"cannot split on {cond}")


class _Infeasible(Exception):
    """The signs of this case contradict each other (no argument of a Max is the largest)."""


def _resolve(node, signs):
    """A piecewise node with plain arguments, resolved under ``signs``."""
    f, args = node.func, node.args
    if f in (sympy.Max, sympy.Min):
        want = 1 if f is sympy.Max else -1
        for a in args:
            if all(_sign(a - b, signs) * want >= 0 for b in args if b is not a):
                return a
        raise _Infeasible
    if f is sympy.Abs:
        return args[0] if _sign(args[0], signs) >= 0 else -args[0]
    if f is sympy.sign:
        return sympy.Integer(_sign(args[0], signs))
    if f is sympy.Heaviside:
        s = _sign(args[0], signs)
        return sympy.Integer(1 if s > 0 else 0) if s else (args[1] if len(args) > 1 else sympy.Rational(1, 2))
    for expr, cond in args:  # Piecewise
        if _truth(cond, signs):
            return expr
    raise _Infeasible


def _innermost(e):
    """A piecewise node of ``e`` none of whose arguments holds another one, else ``None``."""
    for node in sympy.preorder_traversal(e):
        if isinstance(node, _PIECEWISE + (sympy.Piecewise,)) and not any(
                a.has(*_PIECEWISE, sympy.Piecewise) for a in node.args):
            return node
    return None


def _split(e, signs, budget: list[int]) -> bool:
    """Every case of ``e`` reduces to 0 (depth-first over the signs of the comparisons it needs)."""
    node = _innermost(e)
    if node is None:
        budget[0] -= 1
        return budget[0] >= 0 and _reduce(e, cases=False) is not None
    try:
        value = _resolve(node, signs)
    except _Infeasible:
        return True
    except _Unknown as need:
        for s in _sign_options(need.key):
            case, sub = {**signs, need.key: s}, e
            if s == 0:
                solvable = [v for v in sorted(need.key.free_symbols, key=str)
                            if sympy.degree(need.key, v) == 1 and need.key.is_polynomial(v)]
                if solvable:
                    v = solvable[0]
                    sub = e.xreplace({v: sympy.solve(need.key, v)[0]})
            if not _split(sub, case, budget):
                return False
        return True
    return _split(e.xreplace({node: value}), signs, budget)


def _cases(e):
    if not e.has(*_PIECEWISE, sympy.Piecewise):
        return None
    return sympy.Integer(0) if _split(e, {}, [MAX_CASES]) else None


def _reduce(e, cases: bool = True) -> str | None:
    if e == 0:
        return "expansion"
    if sympy.count_ops(e) > MAX_OPS:
        return None
    steps = [("common denominator", _rational), ("exp/log normal form", _exp_log)]
    if cases:
        steps.append(("case split", _cases))
    for name, step in steps:
        try:
            out = step(e)
        except (sympy.PolynomialError, TypeError, ValueError, NotImplementedError, RecursionError):
            continue
        if out is not None and out == 0:
            return name
        if out is not None and name != "case split":
            e = out
    if sympy.count_ops(e) <= MAX_SIMPLIFY_OPS and not e.has(AppliedUndef):
        try:
            if sympy.simplify(e) == 0:
                return "simplify"
        except (TypeError, ValueError, NotImplementedError, RecursionError):
            return None
    return None


def reduces_to_zero(expr: sympy.Basic, substitution: Mapping | None = None) -> str | None:
    """The name of the first canonical form in which ``expr`` is 0, else ``None`` (nothing proved)."""
    e = sympy.sympify(expr)
    substitution = dict(substitution or {})
    real = real_symbols(sympy.Tuple(e, *substitution.keys(), *substitution.values()))  # one real symbol per name
    e = e.xreplace(real)
    if substitution:
        e = e.xreplace({k.xreplace(real): v.xreplace(real) for k, v in substitution.items()})
        if sympy.expand(e) == 0:
            return "order hypotheses"
    return _reduce(e)
