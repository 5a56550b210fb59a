r"""Index-form rules of sizes split in two: :func:`symuat.algebra.halves.halves` and partition indicators.

A builder that calls ``halves(N)`` on the atom :math:`[N]` raises :class:`SplitRequest`; the
level then traces the identity again with :math:`[N]` replaced everywhere by the concatenation
:math:`[\lceil N/2\rceil] + [\lfloor N/2\rfloor]` of two atoms (:class:`~.index_types.Half`),
and ``halves`` returns those two atoms, so ``X[:n1, :]`` and ``X[n1:, :]`` are head and tail
blocks of the concatenation.

Soundness.  The normal form treats the two halves as *independent* sizes, the second possibly
0 (:math:`N = 1`): every rewrite of the normal form holds for empty ranges too (a sum over
an empty range is 0, a block with an empty free range has no entries), and a half that may
be empty gets no constant index, no size scalar and no comparison with 0.  So equal normal
forms prove the identity for every pair of sizes, in particular for every split
:math:`(\lceil N/2\rceil, \lfloor N/2\rfloor)` that occurs.  Different normal forms differ
once each half is at least its witness bound :math:`b`; both halves of :math:`N = 2b` are, so
the witness search runs the explicit level up to that :math:`N` (:func:`witness_bounds`).
"""

from __future__ import annotations

from .index_types import UNIT, Atom, Half, IndexType, Sum, as_type, canonical
from .outside import OutsideFragment
from .tracer import Tracer

__all__ = ["SplitRequest", "split_dims", "halves", "witness_bounds", "partition_indicator", "partition_bounds"]


class SplitRequest(OutsideFragment):
    """The builder split the dimension ``name``: trace it again as two halves."""

    def __init__(self, name: str):
        super().__init__(f"the builder splits the size {name} into halves")
        self.name = name


def split_dims(dims: dict, names) -> dict:
    """``dims`` with each dimension of ``names`` replaced by :math:`[\\lceil N/2\\rceil] + [\\lfloor N/2\\rfloor]`."""
    return {k: Sum((Half.of(k, 1), Half.of(k, 2))) if k in names else v for k, v in dims.items()}


def halves(n: IndexType) -> tuple[Half, Half]:
    r"""The traced sizes of :math:`\Lambda_1, \Lambda_2`: the two halves of a split dimension."""
    n = canonical(n)
    if isinstance(n, Atom) and not isinstance(n, Half):
        raise SplitRequest(n.name)
    if (isinstance(n, Sum) and len(n.parts) == 2 and all(isinstance(p, Half) for p in n.parts)
            and n.parts[0].parent == n.parts[1].parent and (n.parts[0].part, n.parts[1].part) == (1, 2)):
        return n.parts
    raise OutsideFragment(f"halves of the compound size {n} (only of a dimension of the identity)")


def witness_bounds(bounds: dict, names) -> dict:
    """Raise the bound of each split dimension :math:`N` to :math:`2b`, :math:`b` the larger bound of its halves."""
    out = dict(bounds)
    for k in names:
        b = max(bounds.get(Half.of(k, 1).name, 1), bounds.get(Half.of(k, 2).name, 1))
        out[k] = max(out.get(k, 1), 2 * b)
    return out


#: Name prefix of the traced indicator of :math:`\Lambda_1` (not a declared matrix: it starts with a space).
_INDICATOR = " 1[Λ1"


def partition_indicator(n, p) -> Tracer:
    r"""The indicator of :math:`\Lambda_1` in partition ``p`` of ``n``, traced as an *arbitrary* vector over ``n``.

    An identity whose normal form holds for every vector holds for every 0/1 vector, i.e. for
    every partition.  The witness search covers every partition number up to :math:`2^b`
    (:func:`partition_bounds`), :math:`b` the bound of ``n``.
    """
    n, p = as_type(n), as_type(p)
    if not (isinstance(n, Atom) and isinstance(p, Atom)) or isinstance(n, Half) or isinstance(p, Half):
        raise OutsideFragment(f"a partition of {n} numbered by {p} (only two dimensions of the identity)")
    return Tracer.input(f"{_INDICATOR} of {n.name} numbered by {p.name}]", n, UNIT)


def partition_bounds(terms, bounds: dict) -> dict:
    """``bounds`` with each partition number raised to :math:`2^b` for the indicators ``terms`` use."""
    out = dict(bounds)

    def walk(term):
        for f in term[1]:
            if f[0] == "e" and f[1].startswith(_INDICATOR):
                n, p = f[1][len(_INDICATOR) + 4:-1].split(" numbered by ")
                out[p] = max(out.get(p, 1), 2 ** bounds.get(n, 1))
            elif f[0] == "s":
                for inner in f[2]:
                    walk(inner)
    for t in terms:
        walk(t)
    return out
