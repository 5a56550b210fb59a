r"""Index-form rules of :mod:`symuat.algebra.families`: sums over a family index of symbolic size.

``family_sum(f, N)`` calls ``f`` once with a :class:`FamilyIndex` — a fresh index
variable of atom type ``N`` — and binds that variable as a dummy of every term:
:math:`\sum_{j\in[N]} f(j)_{rc}` is exactly the index-form sum, for every ``N``.
``row_block(X, j, size)`` of a matrix whose row type is :math:`[N]\times size`
substitutes ``j`` for the outer row index (the row-major layout of the product type
is the layout of member blocks); ``col_block`` likewise on columns.
``diag_vector(v)`` is :math:`\delta_{rc}v_r` on the diagonal blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .index_types import UNIT, Atom, IndexType, Prod, as_type, canonical, cases, same
from .outside import OutsideFragment
from .terms import eliminate_deltas, first, fresh
from .tracer import Tracer, _vars

__all__ = ["FamilyIndex", "PairIndex", "first_index", "FamilyShape", "FamilyInput", "family_sum", "family_hstack",
           "family_shapes", "family_member", "row_block", "col_block", "diag_vector", "TracedFamily", "family_of",
           "as_family", "family_size", "member_shape", "family_block_diagonal", "block_size", "basis_vector",
           "ComputedFamily", "family_from"]


class _MemberIndex:
    """What a builder may do with a member index while tracing: name it in ``*_block`` and ``family_sum``, and
    compare it with itself; any arithmetic or other comparison is outside the fragment (it depends on the member)."""

    def _over(self) -> object:
        raise NotImplementedError

    def _refuse(self, *_args):
        raise OutsideFragment(f"arithmetic on the family index over {self._over()} (only *_block and family_sum "
                              "may use it)")

    def __eq__(self, other):
        """Only ``j == j``: whether a member index equals a position (or another index) depends on the member."""
        if other is self:
            return True
        raise OutsideFragment(f"the builder compares the family index over {self._over()} with {other!r}")

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__
    __index__ = __int__ = __add__ = __radd__ = __mul__ = __rmul__ = __sub__ = __rsub__ = _refuse
    __mod__ = __rmod__ = __floordiv__ = __rfloordiv__ = __truediv__ = __rtruediv__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __bool__ = _refuse


@dataclass(frozen=True, eq=False)
class FamilyIndex(_MemberIndex):
    """The index of a family member while tracing: variable ``var`` ranging over the atom ``atom``."""

    var: str
    atom: str

    def _over(self) -> object:
        return self.atom


@dataclass(frozen=True, eq=False)
class PairIndex(_MemberIndex):
    r"""The index of a member of a family over the product :math:`[G]\times[H/G]` (row-major: member
    :math:`g\,(H/G) + q`): the pair of family indices ``(outer, inner)``, e.g. a query head as (its key/value group,
    its place in the group)."""

    outer: FamilyIndex
    inner: FamilyIndex

    @property
    def vars(self) -> tuple:
        return (self.outer.var, self.inner.var)

    @property
    def type(self) -> IndexType:
        return Prod((Atom(self.outer.atom), Atom(self.inner.atom)))

    def _over(self) -> object:
        return self.type


def _index_vars(j) -> tuple:
    """The index variables of a member index: one, or the pair of a :class:`PairIndex`."""
    if isinstance(j, PairIndex):
        return j.vars
    if isinstance(j, FamilyIndex):
        return (j.var,)
    raise OutsideFragment(f"a block of a family at the position {j!r} (not a family index)")


def _index_type(j) -> IndexType:
    return j.type if isinstance(j, PairIndex) else Atom(j.atom)


def _fits(j, n) -> bool:
    """Whether ``j`` indexes the members of a family of size ``n``."""
    return isinstance(j, (FamilyIndex, PairIndex)) and same(_index_type(j), n)


def first_index(n):
    """The member index at the first position of every factor of ``n`` (the member named ``<name>1``)."""
    if isinstance(n, Atom):
        return FamilyIndex(first(n.name), n.name)
    a, b = n.factors
    return PairIndex(FamilyIndex(first(a.name), a.name), FamilyIndex(first(b.name), b.name))


@dataclass(frozen=True)
class FamilyShape:
    """A declared family: ``n`` (an atom) matrices of index types ``rows`` x ``cols``."""

    n: IndexType
    rows: IndexType
    cols: IndexType


@dataclass(frozen=True)
class FamilyInput:
    """The traced family ``name``: entry :math:`X^{(j)}_{rc}` is the input entry with indices ``(j, r, c)``."""

    name: str
    shape: FamilyShape

    def member(self, j) -> Tracer:
        if not _fits(j, self.shape.n):
            raise OutsideFragment(f"member {j!r} of the family {self.name} indexed by {self.shape.n}")
        rc, cc = cases(self.shape.rows), cases(self.shape.cols)
        blocks = {}
        for ri, r in enumerate(rc):
            for ci, c in enumerate(cc):
                rv, cv = _vars(r), _vars(c)
                blocks[ri, ci] = (rv, cv, ((Fraction(1), (("e", self.name, ri, ci, _index_vars(j) + rv + cv),),
                                            ()),))
        return Tracer(self.shape.rows, self.shape.cols, blocks)


def _family_atom(n) -> Atom | Prod:
    r"""The size of a family: a dimension, or the product :math:`G\cdot(H/G)` of two (heads grouped by key/value
    group, :func:`~symuat.allsizes.splits.heads_per_group`)."""
    n = as_type(n)
    if isinstance(n, Atom) and not getattr(n, "empty_at_one", False):
        return n
    if isinstance(n, Prod) and len(n.factors) == 2 and all(isinstance(f, Atom) and not getattr(f, "empty_at_one",
                                                                                               False)
                                                          for f in n.factors):
        return n
    raise OutsideFragment(f"a family indexed by the compound size {n} (only a dimension of the identity, or the "
                          "product of two)")


def _new_index(n):
    n = _family_atom(n)
    if isinstance(n, Atom):
        return FamilyIndex(fresh(), n.name)
    a, b = n.factors
    return PairIndex(FamilyIndex(fresh(), a.name), FamilyIndex(fresh(), b.name))


def family_shapes(name, n, rows, cols) -> dict:
    """``{name: FamilyShape}``: one declared family instead of ``name1 .. name<n>``."""
    if not isinstance(name, str):
        raise OutsideFragment(f"a family named {name!r}")
    return {name: FamilyShape(_family_atom(n), as_type(rows), as_type(cols))}


def family_member(env, name, j) -> Tracer:
    """Member ``j`` of the traced family ``env[name]``."""
    fam = env.get(name) if isinstance(env, dict) else None
    if not isinstance(fam, FamilyInput):
        raise OutsideFragment(f"{name!r} is not a declared family")
    return fam.member(j)


def _member_value(f, n):
    j = _new_index(n)
    out = f(j)
    if not isinstance(out, Tracer):
        raise OutsideFragment(f"a family member is a {type(out).__name__}, not a traced matrix")
    return j, out


def family_hstack(f, n) -> Tracer:
    r""":math:`\mathrm{Concat}_j f(j)`: the family index becomes the outer column index (row-major layout)."""
    j, out = _member_value(f, n)
    blocks = {key: (rv, _index_vars(j) + cv, terms) for key, (rv, cv, terms) in out.blocks.items()}
    return Tracer(out.rows, Prod((_index_type(j), out.cols)), blocks)


def family_sum(f, n) -> Tracer:
    r""":math:`\sum_{j\in[n]} f(j)` with ``j`` a dummy of type ``n`` (an atom: one size of the identity)."""
    j, out = _member_value(f, n)
    bound = tuple(zip(_index_vars(j), cases(_index_type(j))[0]))  # each index variable with its atom
    blocks = {}
    for key, (rv, cv, terms) in out.blocks.items():
        summed = (eliminate_deltas((c, fs, ds + bound)) for c, fs, ds in terms)
        blocks[key] = (rv, cv, tuple(t for t in summed if t is not None))
    return Tracer(out.rows, out.cols, blocks)


def _member(t: IndexType, j, size) -> IndexType:
    _index_vars(j)
    size = as_type(size)
    if not same(t, Prod((_index_type(j), size))):
        raise OutsideFragment(f"blocks of {size} indexed by {_index_type(j)} in a dimension of type {t}")
    return canonical(size)


def row_block(X: Tracer, j, size) -> Tracer:
    """Member ``j`` of ``X`` stacked by rows: the outer row index becomes ``j``."""
    rows = _member(X.rows, j, size)
    rc, cc = cases(rows), cases(X.cols)
    blocks = {}
    for (i, k) in X.blocks:
        rv, cv = _vars(rc[i]), _vars(cc[k])
        blocks[i, k] = (rv, cv, tuple(X.terms((i, k), _index_vars(j) + rv, cv)))
    return Tracer(rows, X.cols, blocks)


def col_block(X: Tracer, j, size) -> Tracer:
    """Member ``j`` of ``X`` stacked by columns."""
    return row_block(X.T, j, size).T


def diag_vector(v: Tracer) -> Tracer:
    r""":math:`\operatorname{diag}(v)_{rc} = \delta_{rc} v_r` (zero between different blocks)."""
    if not same(v.cols, UNIT):
        raise OutsideFragment(f"diag_vector of a {v.shape} matrix")
    rc = cases(v.rows)
    blocks = {}
    for (i, _) in v.blocks:
        rv, cv = _vars(rc[i]), _vars(rc[i])
        deltas = tuple(("d", a, b) for a, b in zip(rv, cv))
        blocks[i, i] = (rv, cv, tuple((c * Fraction(1), fs + deltas, ds) for c, fs, ds in v.terms((i, 0), rv, ())))
    return Tracer(v.rows, v.rows, blocks)


@dataclass(frozen=True)
class TracedFamily:
    """A declared family handed to a builder as a whole (``family_of``): members by family index only."""

    family: FamilyInput | ComputedFamily

    def __getitem__(self, j) -> Tracer:
        return self.family.member(j)

    def _refuse(self, *_args):
        raise OutsideFragment(f"iterating over the family {self.family.name} of symbolic size {self.family.shape.n}")

    __iter__ = __len__ = __bool__ = _refuse


@dataclass(frozen=True, eq=False)
class ComputedFamily:
    r"""A family whose member :math:`j` is computed by the builder, ``f(j)`` (e.g. each head's :math:`H_h` from its
    scores): traced once at a fresh index variable for its shape, then at each index the builder asks for."""

    name: str
    f: object
    shape: FamilyShape

    def member(self, j) -> Tracer:
        if not _fits(j, self.shape.n):
            raise OutsideFragment(f"member {j!r} of the computed family {self.name} indexed by {self.shape.n}")
        out = self.f(j)
        if not (isinstance(out, Tracer) and same(out.rows, self.shape.rows) and same(out.cols, self.shape.cols)):
            raise OutsideFragment(f"a member of the computed family {self.name} is not a {self.shape.rows} x "
                                  f"{self.shape.cols} traced matrix")
        return out


def family_from(f, n) -> TracedFamily:
    r""":math:`(f(0), \dots, f(n-1))` as a family: members by family index only (``TracedFamily``)."""
    j, out = _member_value(f, n)
    return TracedFamily(ComputedFamily(getattr(f, "__name__", "f"), f, FamilyShape(_index_type(j), out.rows,
                                                                                   out.cols)))


def family_of(env, name, n) -> TracedFamily:
    fam = env.get(name) if isinstance(env, dict) else None
    if not isinstance(fam, FamilyInput) or not same(fam.shape.n, n):
        raise OutsideFragment(f"{name!r} is not a declared family of size {n}")
    return TracedFamily(fam)


def as_family(members) -> TracedFamily:
    if not isinstance(members, TracedFamily):
        raise OutsideFragment(f"a family of {type(members).__name__}")
    return members


def family_size(members) -> IndexType:
    return as_family(members).family.shape.n


def member_shape(members) -> tuple:
    s = as_family(members).family.shape
    return (s.rows, s.cols)


def family_block_diagonal(members) -> Tracer:
    r""":math:`\operatorname{diag}(B_j)_{(i,r),(k,c)} = \delta_{ik}(B_i)_{rc}` (a fresh column member index)."""
    fam = as_family(members).family
    if not isinstance(fam.shape.n, Atom):
        raise OutsideFragment(f"the block diagonal of a family over the compound size {fam.shape.n}")
    j = FamilyIndex(fresh(), fam.shape.n.name)
    out = fam.member(j)
    blocks = {}
    for key, (rv, cv, terms) in out.blocks.items():
        k = fresh()
        blocks[key] = ((j.var,) + rv, (k,) + cv, tuple((c, fs + (("d", j.var, k),), ds) for c, fs, ds in terms))
    n = Atom(j.atom)
    return Tracer(Prod((n, out.rows)), Prod((n, out.cols)), blocks)


def block_size(total, n) -> IndexType:
    """The inner factor of ``total = n*size`` (exact: the layout of ``n`` blocks of ``size``)."""
    total, n = as_type(total), as_type(n)
    lead = n.factors if isinstance(n, Prod) else (n,)
    if isinstance(n, (Atom, Prod)) and n is not UNIT and isinstance(total, Prod) \
            and same(Prod(total.factors[:len(lead)]), n):
        return canonical(Prod(total.factors[len(lead):]))
    if same(total, n):
        return UNIT
    raise OutsideFragment(f"{total} is not {n} blocks of one size")


def basis_vector(j, n) -> Tracer:
    r""":math:`(e_j)_r = \delta_{rj}` over the atom ``n``."""
    n = as_type(n)
    if not isinstance(j, FamilyIndex) or not same(n, Atom(j.atom)):
        raise OutsideFragment(f"basis vector {j!r} of {n}")
    r = fresh()
    return Tracer(n, UNIT, {(0, 0): ((r,), (), ((Fraction(1), (("d", r, j.var),), ()),))})
