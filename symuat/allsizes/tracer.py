r"""Tracer matrices: a builder re-run on index-form tensors of symbolic size.

A :class:`Tracer` has a row and a column :class:`~symuat.allsizes.index_types.IndexType`
and, for each pair of cases (blocks), the entry as a sum of terms over free row and
column indices (:mod:`symuat.allsizes.terms`).  It supports ``+ - *`` by rationals,
matrix products, ``.T``, head slices of concatenations and ``hstack``/``vstack``;
:mod:`symuat.allsizes.rules` adds symuat's matrix functions (``vec_r``, ``kron``, ◇, …).
Anything else raises :class:`~symuat.allsizes.outside.OutsideFragment`.
"""

from __future__ import annotations

from fractions import Fraction

import sympy

from .index_types import (
    UNIT,
    Atom,
    IndexType,
    Prod,
    Sum,
    as_type,
    canonical,
    cases,
    from_int,
    is_size_scalar,
    may_be_empty,
    same,
)
from .outside import OutsideFragment
from .terms import eliminate_deltas, first, fresh, instantiate, multiply

__all__ = ["Tracer", "MAX_TERMS", "entry_map"]

#: Terms per block beyond which a statement is declared too large for the normal form.
MAX_TERMS = 20000


#: The symbols of the traced identity's scalar variables (shape ``()``), set while it is traced: coefficients, the
#: same at every entry, like the sizes (:func:`~symuat.allsizes.decide.traced_sides`).
SCALAR_SYMBOLS: set = set()


def _of_scalars(x) -> bool:
    """A SymPy expression of the scalar variables and sizes only (no function), nonzero: a coefficient."""
    return (isinstance(x, sympy.Expr) and bool(x.free_symbols) and not x.atoms(sympy.Function)
            and all(s in SCALAR_SYMBOLS or (s.is_positive and s.is_integer) for s in x.free_symbols)
            and any(s in SCALAR_SYMBOLS for s in x.free_symbols) and x.is_finite is not False and x != 0)


def _scalar(x) -> Fraction:
    if isinstance(x, IndexType):
        x = sympy.sympify(x)  # a size as a scalar, e.g. the M of 1/M (a part that may be 0 is no size scalar)
    if isinstance(x, bool):
        raise OutsideFragment(f"boolean {x!r} used as a scalar")
    if isinstance(x, (int, Fraction)):
        return Fraction(x)
    if isinstance(x, sympy.Basic) and x.is_Rational:
        return Fraction(int(x.p), int(x.q))
    if is_size_scalar(x) and x != 0:
        return x  # a scalar of the sizes, e.g. 1/sqrt(h*m): a coefficient, the same at every entry
    if _of_scalars(x):
        return x  # a scalar variable of the identity, e.g. the c of c X: a coefficient too
    raise OutsideFragment(f"the scalar {x!r} is not rational (only rational coefficients are in the fragment)")


class Tracer:
    r"""A matrix whose sizes are index types and whose entries are index-form sums.

    >>> from symuat.allsizes.index_types import Atom
    >>> A = Tracer.input("A", Atom("N"), Atom("N"))
    >>> (A * A).T.shape
    (N, N)
    """

    __slots__ = ("_r", "_c", "blocks")
    is_Matrix = True

    def __init__(self, rows: IndexType, cols: IndexType, blocks: dict):
        self._r, self._c, self.blocks = canonical(rows), canonical(cols), blocks
        for _, _, terms in blocks.values():
            if len(terms) > MAX_TERMS:
                raise OutsideFragment(f"more than {MAX_TERMS} terms in one block of the index normal form")

    # --- construction -------------------------------------------------------------------------------
    @classmethod
    def input(cls, name: str, rows, cols) -> Tracer:
        """The declared matrix ``name``: entry :math:`X_{ij}` in every block."""
        rows, cols = as_type(rows), as_type(cols)
        blocks = {}
        for ri, rc in enumerate(cases(rows)):
            for ci, cc in enumerate(cases(cols)):
                rv, cv = _vars(rc), _vars(cc)
                blocks[ri, ci] = (rv, cv, ((Fraction(1), (("e", name, ri, ci, rv + cv),), ()),))
        return cls(rows, cols, blocks)

    @classmethod
    def constant(cls, M) -> Tracer:
        r"""An explicit matrix of rationals and scalars of the sizes (e.g. ``[[n]]``: a statement about a size)."""
        rows, cols = from_int(M.rows), from_int(M.cols)
        return cls(rows, cols, {(i, j): ((), (), ((_scalar(M[i, j]), (), ()),))
                                for i in range(M.rows) for j in range(M.cols) if M[i, j] != 0})

    @classmethod
    def identity(cls, n) -> Tracer:
        r""":math:`I_n` as Kronecker deltas."""
        t = as_type(n)
        blocks = {}
        for i, c in enumerate(cases(t)):
            rv, cv = _vars(c), _vars(c)
            blocks[i, i] = (rv, cv, ((Fraction(1), tuple(("d", a, b) for a, b in zip(rv, cv)), ()),))
        return cls(t, t, blocks)

    @classmethod
    def ones(cls, n) -> Tracer:
        r""":math:`\mathbf 1_n`."""
        t = as_type(n)
        return cls(t, UNIT, {(i, 0): (_vars(c), (), ((Fraction(1), (), ()),)) for i, c in enumerate(cases(t))})

    # --- inspection ---------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[IndexType, IndexType]:
        return (self._r, self._c)

    rows = property(lambda self: self._r)
    cols = property(lambda self: self._c)

    def terms(self, key, rvars, cvars) -> list:
        """The block ``key`` with its free indices renamed to ``rvars``, ``cvars`` (dummies fresh)."""
        if key not in self.blocks:
            return []
        rv, cv, terms = self.blocks[key]
        mapping = dict(zip(rv + cv, rvars + cvars))
        return [instantiate(t, mapping) for t in terms]

    def keys(self):
        return [(i, j) for i in range(len(cases(self._r))) for j in range(len(cases(self._c)))]

    # --- arithmetic ---------------------------------------------------------------------------------
    def _same_shape(self, other, op: str) -> None:
        if not (same(self._r, other._r) and same(self._c, other._c)):
            raise OutsideFragment(f"{op} of matrices of index types {self.shape} and {other.shape}")

    def _combine(self, other: Tracer, sign: int) -> Tracer:
        self._same_shape(other, "sum")
        rc, cc = cases(self._r), cases(self._c)
        blocks = {}
        for key in sorted(set(self.blocks) | set(other.blocks)):
            rv, cv = _vars(rc[key[0]]), _vars(cc[key[1]])
            theirs = [(c * sign, f, d) for c, f, d in other.terms(key, rv, cv)]
            blocks[key] = (rv, cv, tuple(self.terms(key, rv, cv) + theirs))
        return Tracer(self._r, self._c, blocks)

    def __add__(self, other):
        if isinstance(other, Tracer):
            return self._combine(other, 1)
        if isinstance(other, int) and other == 0:
            return self
        raise OutsideFragment(f"adding {type(other).__name__} to a matrix")

    __radd__ = __add__

    def __sub__(self, other):
        if not isinstance(other, Tracer):
            raise OutsideFragment(f"subtracting {type(other).__name__} from a matrix")
        return self._combine(other, -1)

    def __neg__(self):
        return self.scale(-1)

    def scale(self, c) -> Tracer:
        c = _scalar(c)
        if c == 0:
            return Tracer(self._r, self._c, {})  # no term (a zero coefficient would only widen the witness search)
        return Tracer(self._r, self._c, {k: (rv, cv, tuple((c * a, f, d) for a, f, d in ts))
                                         for k, (rv, cv, ts) in self.blocks.items()})

    def __mul__(self, other):
        return self.matmul(other) if isinstance(other, Tracer) else self.scale(other)

    def __rmul__(self, other):
        return self.scale(other)

    def __matmul__(self, other):
        return _matmul(self, other)

    matmul = __matmul__

    @property
    def T(self) -> Tracer:
        return Tracer(self._c, self._r, {(j, i): (cv, rv, ts) for (i, j), (rv, cv, ts) in self.blocks.items()})

    def doit(self, **_hints) -> Tracer:
        """A tracer is already evaluated (``kronecker_product`` calls ``doit``)."""
        return self

    def transpose(self) -> Tracer:
        return self.T

    # --- blocks -------------------------------------------------------------------------------------
    def row_join(self, other: Tracer) -> Tracer:
        """``hstack``: the column type becomes a sum type."""
        if not same(self._r, other._r):
            raise OutsideFragment(f"hstack of matrices with row types {self._r} and {other._r}")
        off = len(cases(self._c))
        blocks = dict(self.blocks)
        blocks.update({(i, j + off): b for (i, j), b in other.blocks.items()})
        return Tracer(self._r, Sum((self._c, other._c)), blocks)

    def col_join(self, other: Tracer) -> Tracer:
        """``vstack``: the row type becomes a sum type."""
        return self.T.row_join(other.T).T

    def __getitem__(self, key):
        if not (isinstance(key, tuple) and len(key) == 2):
            raise OutsideFragment("indexing a matrix by a single (flat) index")
        if not all(isinstance(k, (slice, int)) for k in key):
            return self._entry(self, key)
        if _is_first_member(self._r, key[0]):
            return _first_member(self, key[1])
        if _is_first_member(self._c, key[1]):
            return _first_member(self.T, key[0]).T
        rows, rmap = _slice(self._r, key[0])
        cols, cmap = _slice(self._c, key[1])
        blocks = {(rmap.index(i), cmap.index(j)): b for (i, j), b in self.blocks.items() if i in rmap and j in cmap}
        return Tracer(rows, cols, blocks)

    def multiply_elementwise(self, other: Tracer) -> Tracer:
        r"""Hadamard product :math:`(A\odot B)_{rc} = A_{rc}B_{rc}` (e.g. a gated FFN's :math:`\sigma(z)\odot u`)."""
        if not isinstance(other, Tracer):
            raise OutsideFragment(f"elementwise product with {type(other).__name__}")
        self._same_shape(other, "elementwise product")
        rc, cc = cases(self._r), cases(self._c)
        blocks = {}
        for key in sorted(set(self.blocks) & set(other.blocks)):
            rv, cv = _vars(rc[key[0]]), _vars(cc[key[1]])
            mine, theirs = self.terms(key, rv, cv), other.terms(key, rv, cv)
            terms = (eliminate_deltas(multiply(a, b)) for a in mine for b in theirs)
            blocks[key] = (rv, cv, tuple(t for t in terms if t is not None))
        return Tracer(self._r, self._c, blocks)

    def applyfunc(self, f) -> Tracer:
        r"""Elementwise map ``f``: a SymPy expression of the entry built from rationals, scalar variables, ``+``,
        ``*``, positive integer powers and opaque functions (σ) of such expressions, e.g. soft-capping's
        :math:`c\,(2\sigma(2y/c) - 1)`.  Each σ becomes an atom applied to its normalised argument."""
        probe = sympy.Dummy("entry")
        out = sympy.sympify(f(probe))
        if sympy.sympify(f(sympy.S.Zero)) != out.xreplace({probe: sympy.S.Zero}):  # the same map on every entry
            raise OutsideFragment(f"elementwise map {out} is not one expression of the entry (0 maps elsewhere)")
        rc, cc = cases(self._r), cases(self._c)
        blocks = {}
        for key in self.keys():
            rv, cv = _vars(rc[key[0]]), _vars(cc[key[1]])
            terms = tuple(entry_map(out, probe, self.terms(key, rv, cv)))
            if terms:
                blocks[key] = (rv, cv, terms)
        return Tracer(self._r, self._c, blocks)

    def __repr__(self) -> str:
        return f"Tracer({self._r} x {self._c}, {sum(len(b[2]) for b in self.blocks.values())} terms)"

    def _refuse(self, *_args, **_kw):
        raise OutsideFragment("the builder uses a matrix operation the tracer does not model")

    @staticmethod
    def _entry(_X, key):
        raise OutsideFragment(f"an entry of a matrix at {key!r}")

    def __truediv__(self, other):
        c = _scalar(other)
        return self.scale(1 / c if isinstance(c, sympy.Basic) else Fraction(1) / c)

    __iter__ = __len__ = __pow__ = _refuse


def entry_map(expr, probe, entry: list) -> list:
    r"""The terms of ``expr`` with ``probe`` standing for the entry ``entry`` (a list of terms; fresh dummies at each
    occurrence).

    >>> y = sympy.Symbol("y")
    >>> entry_map(2 * y + 1, y, [(Fraction(1), (("e", "A", 0, 0, ("i", "j")),), ())])[1][0]
    Fraction(2, 1)
    """
    if expr == probe:
        return [instantiate(t, {}) for t in entry]
    if not expr.has(probe):
        return [] if expr == 0 else [(_scalar(expr), (), ())]
    if isinstance(expr, sympy.Add):
        return [t for a in expr.args for t in entry_map(a, probe, entry)]
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and expr.exp > 0:
        expr = sympy.Mul(*([expr.base] * int(expr.exp)), evaluate=False)
    if isinstance(expr, sympy.Mul):
        out = [(Fraction(1), (), ())]
        for a in expr.args:
            factor = entry_map(a, probe, entry)
            out = [t for t in (eliminate_deltas(multiply(x, y)) for x in out for y in factor) if t is not None]
        return out
    if isinstance(expr, sympy.core.function.AppliedUndef) and len(expr.args) == 1:
        return [(Fraction(1), (("s", str(expr.func), tuple(entry_map(expr.args[0], probe, entry))),), ())]
    raise OutsideFragment(f"the elementwise map uses {type(expr).__name__} ({expr}): only +, *, positive integer "
                          "powers, scalars and opaque functions of the entry are in the fragment")


def _vars(case) -> tuple:
    return tuple(fresh() for _ in case)


def _is_first_member(t: IndexType, s) -> bool:
    """``s`` is ``[:size]`` (or ``[0:size]``) of ``t = a*size`` with ``a`` an atom: the first of ``a`` blocks."""
    if not (isinstance(s, slice) and s.step is None and isinstance(s.stop, (IndexType, int))
            and (s.start is None or isinstance(s.start, int) and s.start == 0)):
        return False
    return (isinstance(t, Prod) and isinstance(t.factors[0], Atom) and not may_be_empty(t.factors[0])
            and same(canonical(Prod(t.factors[1:])), s.stop))


def _first_member(X: Tracer, cols_key) -> Tracer:
    """Rows ``[:size]`` of ``X`` (row type ``a*size``): the outer row index is the constant first index of ``a``."""
    t = X.rows
    head, rows = t.factors[0], canonical(Prod(t.factors[1:]))
    rc, cc = cases(rows), cases(X.cols)
    blocks = {}
    for (i, k) in X.blocks:
        rv, cv = _vars(rc[i]), _vars(cc[k])
        blocks[i, k] = (rv, cv, tuple(X.terms((i, k), (first(head.name),) + rv, cv)))
    return Tracer(rows, X.cols, blocks)[:, cols_key]


def _slice(t: IndexType, s) -> tuple[IndexType, list[int]]:
    """The type of ``t[s]`` for a full slice or a head slice of a concatenation, and the kept cases."""
    n = len(cases(t))
    if not isinstance(s, slice):
        raise OutsideFragment(f"indexing by the concrete position {s!r}")
    if s.step is not None:
        raise OutsideFragment("a strided slice")
    if (s.start is None or isinstance(s.start, int) and s.start == 0) and s.stop is None:
        return t, list(range(n))
    parts = t.parts if isinstance(t, Sum) else (t,)
    bounds = {0: 0}
    for k in range(1, len(parts) + 1):
        bounds[canonical(Sum(parts[:k])).key()] = k
    def position(x):
        if x is None:
            return None
        if isinstance(x, int) and x == 0:
            return 0
        if isinstance(x, (IndexType, int)) and as_type(x).key() in bounds:
            return bounds[as_type(x).key()]
        raise OutsideFragment(f"slice bound {x!r} of {t} is not a boundary between concatenated blocks")
    a, b = position(s.start) or 0, position(s.stop)
    b = len(parts) if b is None else b
    if not 0 <= a < b:
        raise OutsideFragment(f"empty slice of {t}")
    offs = [0]
    for p in parts:
        offs.append(offs[-1] + len(cases(p)))
    return canonical(Sum(parts[a:b])), list(range(offs[a], offs[b]))


def _matmul(A: Tracer, B: Tracer) -> Tracer:
    if not isinstance(B, Tracer):
        raise OutsideFragment(f"matrix product with {type(B).__name__}")
    if not same(A._c, B._r):
        raise OutsideFragment(f"product of index types {A.shape} and {B.shape}")
    rc, mc, cc = cases(A._r), cases(A._c), cases(B._c)
    blocks = {}
    for i in range(len(rc)):
        for j in range(len(cc)):
            rv, cv = _vars(rc[i]), _vars(cc[j])
            out = []
            for k in range(len(mc)):
                if (i, k) not in A.blocks or (k, j) not in B.blocks:
                    continue
                kv = _vars(mc[k])
                for a in A.terms((i, k), rv, kv):
                    for b in B.terms((k, j), kv, cv):
                        t = eliminate_deltas(multiply(a, b, zip(kv, mc[k])))
                        if t is not None:
                            out.append(t)
            if out:
                blocks[i, j] = (rv, cv, tuple(out))
    return Tracer(A._r, B._c, blocks)
