r"""Index-form rule of :func:`symuat.algebra.entrywise.pair_matrix`: a matrix stated entry by entry.

``pair_matrix(entry, rows, cols)`` calls ``entry`` once with index *variables*
(:class:`~.families.FamilyIndex`, one per factor of ``rows`` and ``cols``, each an atom);
``X[i, k]`` of a traced matrix is then its entry at those variables (:func:`entry`) and
``kronecker_delta(l, j)`` the factor :math:`\delta_{lj}`.  The value, a sum of terms in
those free variables (:class:`TracedEntry`), is the one block of the result, whose row
and column types are the products of the factors: the entry formula holds at every
position of every size, so nothing is lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .families import FamilyIndex
from .index_types import Atom, Prod, as_type, same
from .outside import OutsideFragment
from .terms import eliminate_deltas, fresh, multiply
from .tracer import Tracer, _scalar

__all__ = ["TracedEntry", "entry", "kronecker_delta", "pair_matrix"]


@dataclass(frozen=True)
class TracedEntry:
    """A scalar entry in index form: a sum of terms whose free indices are the ``pair_matrix`` variables."""

    terms: tuple

    @staticmethod
    def of(x) -> TracedEntry:
        if isinstance(x, TracedEntry):
            return x
        return TracedEntry(((_scalar(x), (), ()),))

    def __add__(self, other):
        return TracedEntry(self.terms + TracedEntry.of(other).terms)

    __radd__ = __add__

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-TracedEntry.of(other))

    def __rsub__(self, other):
        return TracedEntry.of(other) - self

    def __mul__(self, other):
        other = TracedEntry.of(other)
        out = (eliminate_deltas(multiply(a, b)) for a in self.terms for b in other.terms)
        return TracedEntry(tuple(t for t in out if t is not None))

    __rmul__ = __mul__


def _index(x) -> FamilyIndex:
    if not isinstance(x, FamilyIndex):
        raise OutsideFragment(f"an entry at the concrete position {x!r} (only pair_matrix index variables)")
    return x


def entry(X: Tracer, key) -> TracedEntry:
    r""":math:`X_{ik}` at two index variables; each dimension of ``X`` must be their atom (one block)."""
    i, k = (_index(x) for x in key)
    if not (same(X.rows, Atom(i.atom)) and same(X.cols, Atom(k.atom))):
        raise OutsideFragment(f"entry ({i.atom}, {k.atom}) of a matrix of index types {X.shape}")
    return TracedEntry(tuple(X.terms((0, 0), (i.var,), (k.var,))))


def kronecker_delta(a, b) -> TracedEntry:
    r""":math:`\delta_{ab}` of two index variables of one atom (of different atoms it depends on the sizes)."""
    a, b = _index(a), _index(b)
    if a.atom != b.atom:
        raise OutsideFragment(f"a Kronecker delta between indices over {a.atom} and {b.atom}")
    return TracedEntry(((Fraction(1), (("d", a.var, b.var),), ()),))


def _atoms(sizes) -> tuple[Atom, ...]:
    out = tuple(as_type(s) for s in sizes)
    for s in out:
        if not isinstance(s, Atom):
            raise OutsideFragment(f"pair_matrix over the compound size {s} (only dimensions of the identity)")
    return out


def pair_matrix(f, rows, cols) -> Tracer:
    """The traced matrix with entry ``f(row, col)``: one block over the products of ``rows`` and ``cols``."""
    r_atoms, c_atoms = _atoms(rows), _atoms(cols)
    rv = tuple(FamilyIndex(fresh(), a.name) for a in r_atoms)
    cv = tuple(FamilyIndex(fresh(), a.name) for a in c_atoms)
    value = TracedEntry.of(f(rv, cv))
    return Tracer(Prod(r_atoms), Prod(c_atoms),
                  {(0, 0): (tuple(v.var for v in rv), tuple(v.var for v in cv), value.terms)})
