r"""Index types of symbolic size: the sizes the all-sizes level runs a builder at.

A dimension ``N`` becomes the atom type :math:`[N]`; ``h*m`` is the product type
:math:`[h]\times[m]` (pairs, row-major: the first factor is the outer one, as in
:math:`\operatorname{vec}_r` and :math:`\otimes`), a concatenation is a sum type and a
concrete integer :math:`k` is the sum of :math:`k` one-element types.  There is no
division or remainder: a builder that needs one (``M % h``, ``range(N)``) leaves the
fragment.

Each type has an ordered list of *cases* (:func:`cases`): the atom sequences of its
blocks.  The canonical form (:func:`canonical`) flattens products and sums, drops
one-element factors and distributes a leading sum, :math:`(A+B)\times R = A\times R +
B\times R`; each of these rewrites keeps both the memory layout and the case list,
so two types with equal canonical forms index the same positions at every size.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import sympy

from .outside import OutsideFragment

__all__ = ["size_symbol", "is_size_scalar",
           "IndexType", "Atom", "Prod", "Sum", "UNIT", "canonical", "cases", "from_int", "as_type", "parse_size",
           "size_of", "same", "Part", "may_be_empty", "SizeDifference",
           "DIFFERENCES"]


class IndexType:
    r"""Base of :class:`Atom`, :class:`Prod` and :class:`Sum`: a size a builder can multiply and add.

    >>> N, m = Atom("N"), Atom("m")
    >>> (N * m) * 1 == Prod((N, m))
    True
    >>> N == m
    Traceback (most recent call last):
    ...
    symuat.allsizes.outside.OutsideFragment: the builder compares the sizes N and m, equal at some sizes only
    """

    __slots__ = ()

    def __mul__(self, other):
        return canonical(Prod((self, as_type(other))))

    def __rmul__(self, other):
        return canonical(Prod((as_type(other), self)))

    def __add__(self, other):
        return canonical(Sum((self, as_type(other))))

    def __radd__(self, other):
        return canonical(Sum((as_type(other), self)))

    def __eq__(self, other):
        """True for the same layout; sizes that may or may not coincide (``N == M``, ``n == 1``) leave the fragment."""
        if not isinstance(other, (IndexType, int)) or isinstance(other, bool):
            return NotImplemented
        if isinstance(other, int) and other <= 0:
            if may_be_empty(self):
                raise OutsideFragment(f"the builder compares the size {self}, which may be 0, with {other}")
            return False  # every other size is positive
        if same(self, other):
            return True
        raise OutsideFragment(f"the builder compares the sizes {self} and {other!r}, equal at some sizes only")

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash(canonical(self).key())

    def _refuse(self, *_args):
        raise OutsideFragment(f"arithmetic or comparison on the symbolic size {self} (only + and * are sizes)")

    def __sub__(self, other):
        """``N - r`` of two dimensions: a :class:`SizeDifference`, a count of padded tokens for a mask, no size."""
        a, b = canonical(self), as_type(other) if isinstance(other, (IndexType, int)) else other
        if isinstance(a, Atom) and isinstance(b, Atom) and not isinstance(a, Part) and not isinstance(b, Part) \
                and a.name != b.name:
            return SizeDifference(a.name, b.name)
        return self._refuse()

    __rsub__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _refuse
    __truediv__ = __rtruediv__ = __lt__ = __le__ = __gt__ = __ge__ = __neg__ = __pow__ = _refuse

    def __index__(self):
        raise OutsideFragment(f"the builder needs the concrete value of the size {self} (a loop or an index)")

    __int__ = __index__

    def key(self) -> tuple:
        raise NotImplementedError

    def _sympy_(self):
        """The size as a SymPy expression in positive integer symbols (for scalars such as :math:`1/\\sqrt{hm}`)."""
        t = canonical(self)
        if isinstance(t, Atom):
            return size_symbol(t.name)
        if isinstance(t, Sum):
            return sympy.Add(*(p._sympy_() for p in t.parts))
        return sympy.Mul(*(f._sympy_() for f in t.factors))


def size_symbol(name: str) -> sympy.Symbol:
    """The dimension ``name`` as a positive integer SymPy symbol."""
    return sympy.Symbol(name, positive=True, integer=True)


def is_size_scalar(x) -> bool:
    """A SymPy expression whose only symbols are sizes (a nonzero-safe coefficient such as ``1/sqrt(h*m)``).

    >>> is_size_scalar(1 / sympy.sqrt(size_symbol("h"))), is_size_scalar(sympy.Symbol("w"))
    (True, False)
    """
    return (isinstance(x, sympy.Expr) and bool(x.free_symbols)
            and all(s.is_positive and s.is_integer for s in x.free_symbols)
            and not x.atoms(sympy.Function) and x.is_finite is not False)


#: The differences of sizes a traced builder formed (cleared before each identity is traced).
DIFFERENCES: set = set()


@dataclass(frozen=True)
class SizeDifference:
    r""":math:`N - r` of two dimensions (:math:`r \le N` where the builders are defined): only a mask's count of padded
    tokens (:mod:`symuat.allsizes.masks` names the mask by it); any other use leaves the fragment."""

    minuend: str
    subtrahend: str

    def __post_init__(self) -> None:
        DIFFERENCES.add(self)  # the identity is then stated where minuend >= subtrahend

    def __repr__(self) -> str:
        return f"{self.minuend}-{self.subtrahend}"

    def _refuse(self, *_args):
        raise OutsideFragment(f"the difference of sizes {self!r} used as a size or in arithmetic (only as a mask's "
                              "count of padded tokens)")

    __add__ = __radd__ = __mul__ = __rmul__ = __sub__ = __rsub__ = __index__ = __int__ = __lt__ = __le__ = _refuse
    __gt__ = __ge__ = __bool__ = __neg__ = _refuse


@dataclass(frozen=True, eq=False)
class Atom(IndexType):
    """A dimension of symbolic size, named as in the identity's ``dims``."""

    name: str

    def key(self) -> tuple:
        return ("a", self.name)

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False, repr=False)
class Part(Atom):
    r"""A part of a split dimension: :math:`\lceil N/2\rceil`, :math:`\lfloor N/2\rfloor` (``"halves"``) or :math:`N-1`.

    ``kind`` is ``"halves"`` (parts 1 and 2), ``"last"`` (part 1, :math:`N-1`, followed by one index),
    ``"pairs"`` (part 1, :math:`r/2` rotary planes of an even width :math:`r`), ``"beyond r"`` (part 1, the
    :math:`d - r` features of a head of width :math:`d` that a rotary width :math:`r \le d` leaves alone) or
    ``"per G"`` (part 1, the :math:`H/G` query heads of each of :math:`G` key/value groups).
    :math:`\lfloor N/2\rfloor`, :math:`N-1` and :math:`d - r` are 0 for some sizes: such a part may be empty, so it
    has no constant first index, no scalar of its size and no comparison with 0 (:func:`may_be_empty`).

    >>> Part.of("N", "halves", 1), Part.of("N", "halves", 2), Part.of("N", "last", 1), Part.of("r", "pairs", 1)
    (⌈N/2⌉, ⌊N/2⌋, (N-1), r/2)
    >>> Part.of("d", "beyond r", 1), Part.of("H", "per G", 1)
    ((d-r), H/G)
    """

    parent: str = ""
    kind: str = "halves"
    part: int = 1

    @classmethod
    def of(cls, parent: str, kind: str, part: int) -> Part:
        names = {("halves", 1): f"⌈{parent}/2⌉", ("halves", 2): f"⌊{parent}/2⌋", ("last", 1): f"{parent}-1",
                 ("pairs", 1): f"{parent}/2"}
        if kind.startswith("beyond ") and part == 1:
            return cls(f"{parent}-{kind[len('beyond '):]}", parent, kind, part)
        if kind.startswith("per ") and part == 1:
            return cls(f"{parent}/{kind[len('per '):]}", parent, kind, part)
        return cls(names[kind, part], parent, kind, part)

    def __repr__(self) -> str:
        empty = self.kind == "last" or self.kind.startswith("beyond ")
        return f"({self.name})" if empty else self.name  # "(N-1)*M" reads as a declared size

    @property
    def empty_at_one(self) -> bool:
        """Whether the part is 0 for some sizes (the name is kept from the halves and "all but the last")."""
        return self.kind == "last" or self.kind.startswith("beyond ") or (self.kind, self.part) == ("halves", 2)

    def _sympy_(self):
        if not self.empty_at_one:
            return size_symbol(self.name)
        return sympy.Symbol(self.name, nonnegative=True, integer=True)  # not a size scalar: may be 0


@dataclass(frozen=True, eq=False)
class Prod(IndexType):
    """Row-major pairs (tuples) of indices of the factors."""

    factors: tuple

    def key(self) -> tuple:
        return ("p",) + tuple(f.key() for f in self.factors)

    def __repr__(self) -> str:
        return "*".join(f"({f!r})" if isinstance(f, Sum) else repr(f) for f in self.factors) or "1"


@dataclass(frozen=True, eq=False)
class Sum(IndexType):
    """Concatenation: an index of the first part, then of the second, ..."""

    parts: tuple

    def key(self) -> tuple:
        return ("s",) + tuple(p.key() for p in self.parts)

    def __repr__(self) -> str:
        return "+".join(repr(p) for p in self.parts)


#: The one-element type (an empty product): the column type of a vector.
UNIT = Prod(())


def may_be_empty(t: IndexType) -> bool:
    r"""Whether ``t`` has size 0 for some value of the dimensions (:math:`\lfloor N/2\rfloor`, :math:`N-1`).

    >>> may_be_empty(Part.of("N", "halves", 2) * Atom("n")), may_be_empty(Part.of("N", "last", 1) + 1)
    (True, False)
    """
    t = canonical(t)
    if isinstance(t, Part):
        return t.empty_at_one
    if isinstance(t, Atom):
        return False
    if isinstance(t, Sum):
        return all(may_be_empty(p) for p in t.parts)
    return any(may_be_empty(f) for f in t.factors)


def same(a, b) -> bool:
    """Whether two sizes (types or positive ints) have the same canonical layout.

    >>> same(Atom("N") * 1, Atom("N")), same(Atom("N"), Atom("M"))
    (True, False)
    """
    return as_type(a).key() == as_type(b).key()


def from_int(n: int) -> IndexType:
    """A concrete size ``n`` as the sum of ``n`` one-element types.

    >>> same(from_int(1), UNIT), from_int(2)
    (True, 1+1)
    """
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise OutsideFragment(f"size {n!r} is not a positive integer")
    return UNIT if n == 1 else Sum((UNIT,) * n)


def as_type(x) -> IndexType:
    """An :class:`IndexType` or a positive ``int``, as a canonical type."""
    if isinstance(x, IndexType):
        return canonical(x)
    if isinstance(x, int):
        return from_int(x)
    raise OutsideFragment(f"size {x!r} of type {type(x).__name__} is neither symbolic nor an integer")


def canonical(t: IndexType) -> IndexType:
    """Flatten, drop one-element factors, distribute a leading sum (layout-preserving).

    >>> N, h, m = Atom("N"), Atom("h"), Atom("m")
    >>> canonical(Prod((Sum((h, m)), N)))
    h*N+m*N
    """
    if isinstance(t, Atom):
        return t
    if isinstance(t, Sum):
        parts = []
        for p in (canonical(p) for p in t.parts):
            parts.extend(p.parts if isinstance(p, Sum) else (p,))
        if not parts:
            raise OutsideFragment("an empty concatenation")
        return parts[0] if len(parts) == 1 else Sum(tuple(parts))
    factors = []
    for f in (canonical(f) for f in t.factors):
        if isinstance(f, Prod):
            factors.extend(f.factors)
        else:
            factors.append(f)
    if not factors:
        return UNIT
    if isinstance(factors[0], Sum):
        return canonical(Sum(tuple(Prod((p, *factors[1:])) for p in factors[0].parts)))
    return factors[0] if len(factors) == 1 else Prod(tuple(factors))


def cases(t: IndexType) -> list[tuple[str, ...]]:
    """Ordered atom sequences of the blocks of ``t`` (unchanged by :func:`canonical`).

    >>> cases(Prod((Atom("N"), Sum((Atom("a"), Atom("b"))))))
    [('N', 'a'), ('N', 'b')]
    """
    if isinstance(t, Atom):
        return [(t.name,)]
    if isinstance(t, Sum):
        return [c for p in t.parts for c in cases(p)]
    return [sum(combo, ()) for combo in itertools.product(*(cases(f) for f in t.factors))]


def size_of(t: IndexType, dims) -> int:
    """The concrete size of ``t`` at ``dims`` (dimension name -> int; a part from its dimension).

    >>> size_of(Part.of("N", "halves", 2) * Atom("M") + Atom("M"), {"N": 5, "M": 3})
    9
    """
    t = canonical(t)
    if isinstance(t, Part):
        n = dims[t.parent]
        if t.kind.startswith("beyond "):
            return n - int(dims[t.kind[len("beyond "):]])
        if t.kind.startswith("per "):
            return n // int(dims[t.kind[len("per "):]])
        return {("halves", 1): (n + 1) // 2, ("halves", 2): n // 2, ("last", 1): n - 1,
                ("pairs", 1): n // 2}[t.kind, t.part]
    if isinstance(t, Atom):
        return int(dims[t.name])
    if isinstance(t, Sum):
        return sum(size_of(p, dims) for p in t.parts)
    return int(_prod(size_of(f, dims) for f in t.factors))


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def parse_size(text: str, dims) -> IndexType:
    """A declared size such as ``"h*m"`` or ``"N+1"`` over the symbolic ``dims``.

    >>> parse_size("h*m+1", {"h": Atom("h"), "m": Atom("m")})
    h*m+1
    """
    out = None
    for summand in str(text).replace(" ", "").split("+"):
        term = None
        for factor in summand.split("*"):
            if factor.isdigit():
                f = from_int(int(factor))
            elif factor in dims:
                f = as_type(dims[factor])
            else:
                raise OutsideFragment(f"declared size {text!r}: {factor!r} is not a dimension")
            term = f if term is None else term * f
        out = term if out is None else out + term
    return canonical(out)
