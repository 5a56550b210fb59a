r"""What a claim assumes of its variables, and how every level honours it (``docs/evidence.md``).

A claim states its hypotheses as short sentences over its variable names, each about every entry of the
variable (a scalar, or a matrix entrywise)::

    Identity(..., assume=("a > 0", "x != 0", "m <= s", "k integer"))

* signs: ``v > 0``, ``v >= 0``, ``v < 0``, ``v <= 0``, ``v != 0``; a type: ``v integer``;
* an order between two variables of the same shape: ``u < v``, ``u <= v`` (``>``, ``>=`` read backwards).

Every level honours them: the symbols carry SymPy's assumptions (``positive``, ``nonzero``, ``integer``, …)
and every variable is real; the symbolic level rewrites an order ``u <= v`` as ``v = u + d`` with ``d >= 0``;
random points (exact :math:`\mathbb Q`, float64, mpmath) are drawn inside them.  Points of :math:`\mathbb F_p`
have no order: a rational function that vanishes on the (open, or integer) set of the hypotheses vanishes
everywhere, so the :math:`\mathbb F_p` check stays sound.

>>> h = Hypotheses.parse(("a > 0", "b >= a", "k integer"), ("a", "b", "k"))
>>> h.text
'$a > 0$, $a \\le b$, $k \\in \\mathbb{Z}$'
>>> h.flags("a"), h.flags("k")
({'real': True, 'positive': True}, {'real': True, 'integer': True})
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import sympy

from ..errors import ArgumentTypeError, InvalidValueError, UnsupportedError

__all__ = ["Hypotheses", "Order", "SIGNS"]

#: sign name -> (SymPy assumption, LaTeX of the statement about v, lower bound kind)
SIGNS = {"positive": (">", "> 0"), "nonnegative": (">=", r"\ge 0"), "negative": ("<", "< 0"),
         "nonpositive": ("<=", r"\le 0"), "nonzero": ("!=", r"\ne 0")}
_SIGN_OF = {">": "positive", ">=": "nonnegative", "<": "negative", "<=": "nonpositive", "!=": "nonzero"}
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_SIGN_RE = re.compile(rf"^\s*({_NAME})\s*(>=|<=|!=|>|<)\s*0\s*$")
_ZERO_FIRST_RE = re.compile(rf"^\s*0\s*(>=|<=|!=|>|<)\s*({_NAME})\s*$")
_ORDER_RE = re.compile(rf"^\s*({_NAME})\s*(>=|<=|>|<)\s*({_NAME})\s*$")
_TYPE_RE = re.compile(rf"^\s*({_NAME})\s+integer\s*$")
_FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "!=": "!="}


@dataclass(frozen=True)
class Order:
    """``small < large`` (``strict``) or ``small <= large``, entrywise."""

    small: str
    large: str
    strict: bool

    @property
    def text(self) -> str:
        return f"${self.small} {'<' if self.strict else chr(92) + 'le'} {self.large}$"


@dataclass(frozen=True)
class Hypotheses:
    """The parsed hypotheses of a claim: a sign per variable, the integer variables, the orders."""

    statements: tuple[str, ...] = ()
    signs: Mapping[str, str] = field(default_factory=dict)
    integers: frozenset[str] = frozenset()
    orders: tuple[Order, ...] = ()

    @classmethod
    def parse(cls, statements: object, variables: Sequence[str]) -> Hypotheses:
        if isinstance(statements, str) or not isinstance(statements, (tuple, list)):
            raise ArgumentTypeError(f"assume must be a tuple of statements such as ('a > 0', 'u <= v'), "
                                    f"got {type(statements).__name__} {statements!r}")
        signs: dict[str, str] = {}
        integers: set[str] = set()
        orders: list[Order] = []
        for text in statements:
            if not isinstance(text, str):
                raise ArgumentTypeError(f"assume: each statement must be a string, got {text!r}")
            m, z, o, t = (r.match(text) for r in (_SIGN_RE, _ZERO_FIRST_RE, _ORDER_RE, _TYPE_RE))
            if m or z:
                name, op = (m.group(1), m.group(2)) if m else (z.group(2), _FLIP[z.group(1)])
                _known(name, variables, text)
                sign = _SIGN_OF[op]
                if signs.get(name, sign) != sign:
                    raise InvalidValueError(f"assume: {name} is both {signs[name]} and {sign} ({text!r}); state one "
                                            "sign per variable")
                signs[name] = sign
            elif o:
                left, op, right = o.groups()
                for name in (left, right):
                    _known(name, variables, text)
                if left == right:
                    raise InvalidValueError(f"assume: {text!r} relates {left} to itself")
                small, large = (left, right) if op in ("<", "<=") else (right, left)
                orders.append(Order(small, large, op in ("<", ">")))
            elif t:
                _known(t.group(1), variables, text)
                integers.add(t.group(1))
            else:
                raise InvalidValueError(f"assume: cannot read {text!r}; write 'v > 0', 'v >= 0', 'v < 0', 'v <= 0', "
                                        "'v != 0', 'v integer' or 'u < v', 'u <= v' with declared variables")
        out = cls(tuple(statements), signs, frozenset(integers), tuple(orders))
        out._anchors()  # refuses orders it cannot draw
        return out

    @property
    def empty(self) -> bool:
        return not self.statements

    @property
    def text(self) -> str:
        """The hypotheses as LaTeX text, for the printed scope."""
        parts = [f"${n} {SIGNS[s][1]}$" for n, s in self.signs.items()]
        parts += [o.text for o in self.orders]
        parts += [f"${n} \\in \\mathbb{{Z}}$" for n in sorted(self.integers)]
        return ", ".join(parts)

    def flags(self, name: str) -> dict[str, bool]:
        """SymPy assumptions of the entries of variable ``name`` (every hypothesised variable is real)."""
        out = {"real": True}
        if name in self.signs:
            out[self.signs[name]] = True
        if name in self.integers:
            out["integer"] = True
        return out

    def concerns(self, name: str) -> bool:
        return name in self.signs or name in self.integers or any(name in (o.small, o.large) for o in self.orders)

    def _anchors(self) -> list[tuple[Order, str]]:
        """Each order with the variable that is drawn from the other one (``large`` = small + d, or small =
        large - d), in an order that draws every anchor first."""
        derived: dict[str, Order] = {}
        plan = []
        for o in self.orders:
            up = self.signs.get(o.large)
            low = self.signs.get(o.small)
            if up in (None, "nonzero") or (up in ("positive", "nonnegative") and low in ("positive", "nonnegative")
                                           and not (up == "positive" and low == "nonnegative" and not o.strict)):
                target = o.large
            elif low in (None,) or (low in ("negative", "nonpositive") and up in ("negative", "nonpositive")):
                target = o.small
            else:
                raise UnsupportedError(f"assume: cannot draw points with {o.text.strip('$')} and the signs of "
                                       f"{o.small}, {o.large}; state the order with fewer sign hypotheses")
            if (target in self.integers) and (o.small if target == o.large else o.large) not in self.integers:
                raise UnsupportedError(f"assume: {target} is an integer bounded by {o.text.strip('$')} with a variable "
                                       "that is not declared integer; declare both integer or neither")
            if target in derived or self.signs.get(target) == "nonzero":
                raise UnsupportedError(f"assume: {target} is bounded by two orders (or is also nonzero); at most one "
                                       "order per variable is supported")
            derived[target] = o
            plan.append((o, target))
        done, ordered = set(), []
        while plan:
            ready = [(o, t) for o, t in plan if (o.small if t == o.large else o.large) not in
                     {t2 for o2, t2 in plan if (o2, t2) != (o, t)}]
            if not ready:
                raise InvalidValueError(f"assume: the orders {[o.text for o, _ in plan]} form a cycle")
            ordered.extend(ready)
            plan = [p for p in plan if p not in ready]
            done.update(t for _, t in ready)
        return ordered

    # drawing points inside the hypotheses

    def apply(self, values: dict, entries: Mapping[str, Sequence[sympy.Symbol]], kind: str) -> dict:
        """``values`` (one random value per symbol) moved inside the hypotheses, in place; ``kind`` is ``"real"``
        (floats) or ``"rational"`` (Fractions).  Draws nothing new: a claim without hypotheses keeps its points."""
        if self.empty:
            return values
        for name in self.integers:
            for s in entries[name]:
                values[s] = _integer(values[s], kind)
        for name, sign in self.signs.items():
            for s in entries[name]:
                values[s] = _signed(values[s], sign, name in self.integers, kind)
        for o, target in self._anchors():
            other = o.small if target == o.large else o.large
            step = 1 if target == o.large else -1
            for t, a in zip(entries[target], entries[other]):
                d = abs(values[t])
                if o.strict and d == 0:
                    d = _one(kind)
                if target in self.integers and o.strict:
                    d = max(d, _one(kind))
                values[t] = values[a] + step * d
        return values

    def substitution(self, symbols: Mapping[str, Sequence[sympy.Symbol]]) -> dict:
        r"""The orders as a substitution for the symbolic level: ``large -> small + d`` (``d > 0`` or ``>= 0``)."""
        out: dict = {}
        for o, target in self._anchors():
            other = o.small if target == o.large else o.large
            step = 1 if target == o.large else -1
            for t, a in zip(symbols[target], symbols[other]):
                d = sympy.Dummy(f"d_{t.name}", positive=o.strict or None, nonnegative=True,
                                integer=(target in self.integers) or None)
                out[t] = a + step * d
        changed = True
        while changed:  # chains u <= v <= w: w -> v + d2 -> u + d1 + d2
            new = {k: v.xreplace(out) for k, v in out.items()}
            changed = new != out
            out = new
        return out


def _known(name: str, variables: Iterable[str], text: str) -> None:
    if name not in variables:
        raise InvalidValueError(f"assume: {name!r} in {text!r} is not a declared variable "
                                f"({', '.join(sorted(variables)) or 'none'})")


def _one(kind: str):
    return Fraction(1) if kind == "rational" else 1.0


def _integer(v, kind: str):
    n = round(v * 3)
    return Fraction(n) if kind == "rational" else float(n)


def _signed(v, sign: str, integer: bool, kind: str):
    if sign == "nonzero":
        return v if v != 0 else _one(kind)
    a = abs(v)
    if sign in ("positive", "negative") and a == 0:
        a = _one(kind)
    return a if sign in ("positive", "nonnegative") else -a
