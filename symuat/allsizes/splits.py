r"""Index-form rules of split sizes: :func:`~symuat.algebra.splits.halves`, ``but_last`` and partition indicators.

A builder that calls ``halves(N)`` (or ``but_last(N)``) on the atom :math:`[N]` raises
:class:`SplitRequest`; the level then traces the identity again with :math:`[N]` replaced
everywhere by the concatenation :math:`[\lceil N/2\rceil] + [\lfloor N/2\rfloor]` (or
:math:`[N-1] + 1`) of :class:`~.index_types.Part` atoms, and the call returns the parts, so
``X[:n1, :]`` and ``X[n1:, :]`` are head and tail blocks of the concatenation.

Soundness.  The normal form treats the parts as *independent* sizes, :math:`\lfloor N/2\rfloor`
and :math:`N-1` possibly 0 (:math:`N = 1`): every rewrite of the normal form holds for empty
ranges too (a sum over an empty range is 0, a block with an empty free range has no entries),
and a part that may be empty gets no constant index, no size scalar and no comparison with 0.
So equal normal forms prove the identity for every size of the parts, in particular for the
sizes that occur.  Different normal forms differ once each part is at least its witness bound
:math:`b`; both halves of :math:`N = 2b` are, and :math:`N-1` is at :math:`N = b+1`, so the
witness search runs the explicit level up to that :math:`N` (:func:`witness_bounds`).
"""

from __future__ import annotations

from .index_types import UNIT, Atom, IndexType, Part, Prod, Sum, as_type, canonical, from_int, same
from .outside import OutsideFragment
from .tracer import Tracer

__all__ = ["SplitRequest", "split_dims", "in_domain", "rotary_pairs", "heads_per_group", "halves", "but_last",
           "witness_bounds", "partition_indicator", "partition_bounds", "unsplit"]


class SplitRequest(OutsideFragment):
    """The builder split the dimension ``name`` (``kind``: ``"halves"``, ``"last"``, ``"pairs"`` or ``"adjacent
    pairs"``; ``also``: further dimensions split with it, name -> kind): trace it again split."""

    def __init__(self, name: str, kind: str, also: dict | None = None):
        super().__init__(f"the builder splits the size {name} ({kind})")
        self.name, self.kind, self.also = name, kind, dict(also or {})


def _split(name: str, kind: str, splits: dict | None = None) -> IndexType:
    if kind == "halves":
        return Sum((Part.of(name, kind, 1), Part.of(name, kind, 2)))
    if kind == "pairs":  # rotate-half planes (i, i + r/2): the width is two blocks of r/2
        k = Part.of(name, "pairs", 1)
        return Sum((k, k))
    if kind == "adjacent pairs":  # interleaved planes (2i, 2i + 1): r/2 pairs, row-major
        return Prod((Part.of(name, "pairs", 1), from_int(2)))
    if kind.startswith("per "):  # H query heads as G groups of H/G, row-major: head h = g*(H/G) + q
        return Prod((Atom(kind[len("per "):]), Part.of(name, kind, 1)))
    if kind.startswith("beyond "):  # a head of width d: the rotary width r, then the d - r features left alone
        r = kind[len("beyond "):]
        return canonical(Sum((_split(r, (splits or {})[r], splits), Part.of(name, kind, 1))))
    return Sum((Part.of(name, kind, 1), UNIT))


def split_dims(dims: dict, splits: dict) -> dict:
    """``dims`` with each dimension ``k`` of ``splits`` (name -> kind) replaced by its parts."""
    return {k: canonical(_split(k, splits[k], splits)) if k in splits else v for k, v in dims.items()}


def in_domain(dims: dict, splits: dict) -> bool:
    """Whether concrete ``dims`` are sizes the split builders are defined at: an even rotary width ``r``, at most
    the head width ``d`` it is split from (the other splits are defined at every size).

    >>> in_domain({"r": 2, "d": 3}, {"r": "pairs", "d": "beyond r"}), in_domain({"r": 3, "d": 3}, {"r": "pairs"})
    (True, False)
    """
    for k, kind in splits.items():
        if kind in ("pairs", "adjacent pairs") and dims[k] % 2:
            return False
        if kind.startswith("beyond ") and dims[k] < dims[kind[len("beyond "):]]:
            return False
        if kind.startswith("per ") and dims[k] % dims[kind[len("per "):]]:
            return False
    return True


def heads_per_group(n_heads, n_groups) -> Part:
    r"""The traced number :math:`H/G` of query heads per key/value group: on the atoms :math:`[H]`, :math:`[G]` it asks
    for the split :math:`H = G\cdot(H/G)` (head :math:`h = g\,(H/G) + q` reads group :math:`g`); on the split size it
    returns the part :math:`H/G`."""
    h, g = canonical(as_type(n_heads)), canonical(as_type(n_groups))
    if all(isinstance(t, Atom) and not isinstance(t, Part) for t in (h, g)) and h.name != g.name:
        raise SplitRequest(h.name, f"per {g.name}")
    if isinstance(h, Prod) and len(h.factors) == 2 and isinstance(h.factors[1], Part) and isinstance(g, Atom):
        per = h.factors[1]
        if per.kind == f"per {g.name}" and same(h, _split(per.parent, per.kind)):
            return per
    raise OutsideFragment(f"{n_heads} query heads in {n_groups} groups (only two dimensions of the identity)")


def rotary_pairs(r, d, layout: str = "half") -> Part:
    r"""The traced number :math:`r/2` of rotary planes of width ``r`` inside a head of width ``d``.

    On the atoms :math:`[r]`, :math:`[d]` it asks for the split :math:`r = r/2 + r/2` (``layout="half"``: planes
    :math:`(i, i + r/2)`) or :math:`r = (r/2)\cdot 2` (``"adjacent"``: planes :math:`(2i, 2i+1)`), with
    :math:`d = r + (d - r)`; on the split sizes it returns the part :math:`r/2`.
    """
    kind = {"half": "pairs", "adjacent": "adjacent pairs"}.get(layout)
    if kind is None:
        raise OutsideFragment(f"rotary planes of layout {layout!r} (only 'half' or 'adjacent')")
    rt, dt = canonical(as_type(r)), canonical(as_type(d))
    plain = [isinstance(t, Atom) and not isinstance(t, Part) for t in (rt, dt)]
    if all(plain) and rt.name != dt.name:
        raise SplitRequest(rt.name, kind, {dt.name: f"beyond {rt.name}"})
    head = rt.parts[0] if isinstance(rt, Sum) else rt.factors[0] if isinstance(rt, Prod) else None
    if isinstance(head, Part) and head.kind == "pairs":
        splits = {head.parent: kind}
        rest = dt.parts[-1] if isinstance(dt, Sum) else None
        if same(rt, _split(head.parent, kind)) and isinstance(rest, Part) and rest.kind == f"beyond {head.parent}":
            splits[rest.parent] = rest.kind
            if same(dt, _split(rest.parent, rest.kind, splits)):
                return head
    raise OutsideFragment(f"rotary planes ({layout}) of a width {rt} inside a head of width {dt} (only of two "
                          "dimensions of the identity, r <= d)")


def _parts(n, kind: str) -> tuple:
    n = canonical(as_type(n))
    if isinstance(n, Atom) and not isinstance(n, Part):
        raise SplitRequest(n.name, kind)
    if isinstance(n, Sum) and isinstance(n.parts[0], Part) and same(n, _split(n.parts[0].parent, kind)):
        return n.parts
    raise OutsideFragment(f"{'halves' if kind == 'halves' else 'all but the last'} of the compound size {n} "
                          "(only of a dimension of the identity)")


def halves(n: IndexType) -> tuple[Part, Part]:
    r"""The traced sizes of :math:`\Lambda_1, \Lambda_2`: the two halves of a split dimension."""
    return _parts(n, "halves")


def but_last(n: IndexType) -> Part:
    r"""The traced size :math:`N-1` of all indices but the last."""
    return _parts(n, "last")[0]


def witness_bounds(bounds: dict, splits: dict) -> dict:
    """Raise the bound of each split dimension to the smallest size whose parts reach their bounds."""
    out = dict(bounds)
    for k, kind in sorted(splits.items(), key=lambda x: x[1].startswith("beyond ")):  # a width before its head
        if kind in ("pairs", "adjacent pairs"):
            out[k] = max(out.get(k, 1), 2 * bounds.get(Part.of(k, "pairs", 1).name, 1))
        elif kind.startswith("beyond "):
            r = kind[len("beyond "):]
            out[k] = max(out.get(k, 1), out.get(r, 1) + bounds.get(Part.of(k, kind, 1).name, 1))
        elif kind.startswith("per "):
            g = kind[len("per "):]
            out[k] = max(out.get(k, 1), out.get(g, 1) * bounds.get(Part.of(k, kind, 1).name, 1))
        elif kind == "halves":
            b = max(bounds.get(Part.of(k, kind, 1).name, 1), bounds.get(Part.of(k, kind, 2).name, 1))
            out[k] = max(out.get(k, 1), 2 * b)
        else:
            out[k] = max(out.get(k, 1), bounds.get(Part.of(k, kind, 1).name, 1) + 1)
    return out


#: Traced indicators: input name -> (dimension, partition number).  Names start with a space: never declared.
_INDICATORS: dict[str, tuple[str, str]] = {}


def partition_indicator(n, p) -> Tracer:
    r"""The indicator of :math:`\Lambda_1` in partition ``p`` of ``n``, traced as an *arbitrary* vector over ``n``.

    An identity whose normal form holds for every vector holds for every 0/1 vector, i.e. for
    every partition.  The witness search covers every partition number up to :math:`2^b`
    (:func:`partition_bounds`), :math:`b` the bound of ``n``.
    """
    n, p = as_type(n), as_type(p)
    if not (isinstance(n, Atom) and isinstance(p, Atom)) or isinstance(n, Part) or isinstance(p, Part):
        raise OutsideFragment(f"a partition of {n} numbered by {p} (only two dimensions of the identity)")
    name = f" 1[Λ1 of {n.name} numbered by {p.name}]"
    _INDICATORS[name] = (n.name, p.name)
    return Tracer.input(name, n, UNIT)


def partition_bounds(terms, bounds: dict) -> dict:
    """``bounds`` with each partition number raised to :math:`2^b` for the indicators ``terms`` use."""
    out = dict(bounds)

    def walk(term):
        for f in term[1]:
            if f[0] == "e" and f[1] in _INDICATORS:
                n, p = _INDICATORS[f[1]]
                out[p] = max(out.get(p, 1), 2 ** bounds.get(n, 1))
            elif f[0] == "s":
                for inner in f[2]:
                    walk(inner)
    for t in terms:
        walk(t)
    return out


def unsplit(t: IndexType) -> str:
    r"""``t`` as a declared size over the dimensions: the parts of a split dimension joined again.

    >>> N1, N2 = Part.of("N", "halves", 1), Part.of("N", "halves", 2)
    >>> unsplit((N1 + N2) * Atom("M") + 1), unsplit(Atom("M") * (Part.of("N", "last", 1) + 1))
    ('N*M+1', 'M*(N)')
    """
    t = canonical(t)
    if isinstance(t, Part):
        raise OutsideFragment(f"the part {t} of {t.parent} alone is not a declared size")
    if isinstance(t, Atom):
        return t.name
    if isinstance(t, Prod):
        return "*".join(f"({unsplit(f)})" if isinstance(f, Sum) else unsplit(f) for f in t.factors) or "1"
    parts, out = list(t.parts), []
    while parts:
        p = parts.pop(0)
        head, rest = (p.factors[0], canonical(Prod(p.factors[1:]))) if isinstance(p, Prod) and p.factors else (p, UNIT)
        if isinstance(head, Part) and head.part == 1 and parts:
            second = Part.of(head.parent, head.kind, 2) if head.kind == "halves" else UNIT
            if same(parts[0], canonical(Prod((second, rest)))):
                parts.pop(0)
                out.append(head.parent if same(rest, UNIT) else f"{head.parent}*{unsplit(rest)}")
                continue
        out.append(unsplit(p))
    return "+".join(out)
