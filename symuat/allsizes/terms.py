r"""Index (einsum) normal form: terms, Kronecker-delta elimination and canonical labelling.

A *term* is ``(coefficient, factors, dummies)``: a rational coefficient, a product of
factors and the dummy indices summed over (each with its atom type).  Factors are

* ``("e", name, row_case, col_case, indices)`` — an entry of the input matrix ``name``;
* ``("d", i, j)`` — the Kronecker delta :math:`\delta_{ij}`;
* ``("s", f, terms)`` — an opaque elementwise function (σ) of a normalised argument,
  itself a tuple of terms whose free indices belong to the enclosing term.

:func:`canonical_poly` labels every term's contraction graph canonically — free
indices by position, dummies by an invariant refined by backtracking over ties — so
that two terms get the same key exactly when they differ only by renaming dummies
and reordering commuting factors.  Every rewrite (delta elimination, collecting like
terms) is valid for every size.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import sympy

from .outside import OutsideFragment

__all__ = ["fresh", "first", "rename", "instantiate", "multiply", "eliminate_deltas", "canonical_poly", "index_counts",
           "MAX_LABELLINGS", "ROW_STOCHASTIC", "ONE_HOT"]

#: Labellings tried per term before the term is declared too symmetric to canonicalise.
MAX_LABELLINGS = 40320

_counter = itertools.count()


def fresh() -> str:
    """A new index name."""
    return f"v{next(_counter)}"


def _rename_factor(f, mapping):
    if f[0] == "e":
        return ("e", f[1], f[2], f[3], tuple(mapping.get(v, v) for v in f[4]))
    if f[0] == "d":
        return ("d", mapping.get(f[1], f[1]), mapping.get(f[2], f[2]))
    return ("s", f[1], tuple(rename(t, mapping) for t in f[2]))


def rename(term, mapping):
    """Rename indices of ``term`` (free and dummy) by ``mapping``."""
    coef, factors, dummies = term
    return (coef, tuple(_rename_factor(f, mapping) for f in factors),
            tuple((mapping.get(v, v), a) for v, a in dummies))


def _bound(term, out: dict):
    for v, _ in term[2]:
        out[v] = fresh()
    for f in term[1]:
        if f[0] == "s":
            for t in f[2]:
                _bound(t, out)
    return out


def instantiate(term, free_map):
    """``term`` with its free indices renamed by ``free_map`` and every dummy made fresh."""
    return rename(term, {**_bound(term, {}), **free_map})


def multiply(a, b, extra_dummies=()):
    """The product of two terms with disjoint dummies, summed over ``extra_dummies`` as well."""
    return (a[0] * b[0], a[1] + b[1], a[2] + b[2] + tuple(extra_dummies))


#: Inputs whose rows sum to 1 (each member of a traced row-stochastic family): name -> the atom of its columns.
ROW_STOCHASTIC: dict[str, str] = {}


def _row_sums(coef, factors, dummies):
    r""":math:`\sum_m H_{nm} = 1`: a dummy of ``H``'s column atom that occurs once, as the column of a row-stochastic
    input ``H`` (one column block), is summed away with its factor."""
    for v, a in dummies:
        uses = [f for f in factors if v in (f[4] if f[0] == "e" else f[1:] if f[0] == "d" else _indices_of(f))]
        if len(uses) != 1:
            continue
        f = uses[0]
        if (f[0] == "e" and ROW_STOCHASTIC.get(f[1]) == a and f[3] == 0 and f[4].count(v) == 1
                and f[4][-1] == v):
            return coef, tuple(g for g in factors if g is not f), tuple(d for d in dummies if d[0] != v), True
    return coef, factors, dummies, False


#: One-hot inputs (a traced top-k choice: each row one expert): name -> the number of its row indices.
ONE_HOT: dict[str, int] = {}


def _one_hot(coef, factors, dummies):
    r""":math:`C_{re}C_{re'} = \delta_{ee'}C_{re}` for two entries of one row of a one-hot input (a row is 0 but for one
    1): the second entry becomes a delta between the column indices."""
    seen: dict = {}
    for f in factors:
        if f[0] != "e" or f[1] not in ONE_HOT:
            continue
        rows = ONE_HOT[f[1]]
        key = (f[1], f[2], f[3], f[4][:rows])
        if key in seen:
            g = seen[key]
            delta = tuple(("d", a, b) for a, b in zip(g[4][rows:], f[4][rows:]))
            rest = list(factors)
            rest.remove(f)
            return coef, tuple(rest) + delta, dummies, True
        seen[key] = f
    return coef, factors, dummies, False


def _indices_of(f) -> set:
    out: set = set()
    for t in f[2]:
        out |= _indices(t)
    return out


def eliminate_deltas(term):
    r"""Contract every :math:`\delta_{ij}` with a dummy index; ``None`` when the term vanishes.

    >>> eliminate_deltas((Fraction(1), (("d", "k", "i"), ("e", "A", 0, 0, ("k", "j"))), (("k", "N"),)))
    (Fraction(1, 1), (('e', 'A', 0, 0, ('i', 'j')),), ())
    """
    coef, factors, dummies = term
    changed = True
    while changed:
        changed = False
        names = {v for v, _ in dummies}
        for n, f in enumerate(factors):
            if f[0] != "d":
                continue
            i, j = f[1], f[2]
            rest = factors[:n] + factors[n + 1:]
            if i == j:
                factors, changed = rest, True
                break
            if i in names or j in names:
                gone, keep = (i, j) if i in names else (j, i)
                coef, factors, dummies = rename((coef, rest, tuple(d for d in dummies if d[0] != gone)), {gone: keep})
                changed = True
                break
        if not changed and ROW_STOCHASTIC:
            coef, factors, dummies, changed = _row_sums(coef, factors, dummies)
        if not changed and ONE_HOT:
            coef, factors, dummies, changed = _one_hot(coef, factors, dummies)
    return (coef, tuple(sorted(factors, key=repr)), dummies) if coef != 0 else None


def _occurrences(term, dummy):
    """A labelling-invariant description of where ``dummy`` occurs."""
    out = []
    for f in term[1]:
        if f[0] == "e":
            out.extend((f[1], f[2], f[3], p) for p, v in enumerate(f[4]) if v == dummy)
        elif f[0] == "d":
            out.extend(("δ",) for v in f[1:] if v == dummy)
        elif any(dummy in _indices(t) for t in f[2]):
            out.append(("σ", f[1]))
    return tuple(sorted(out, key=repr))


def _indices(term) -> set:
    out = {v for v, _ in term[2]}
    for f in term[1]:
        if f[0] == "e":
            out.update(f[4])
        elif f[0] == "d":
            out.update(f[1:])
        else:
            for t in f[2]:
                out |= _indices(t)
    return out


def first(atom: str) -> str:
    """The constant index 0 of the atom type ``atom`` (the first member of a family, ``X[:, :m]`` of ``h*m``)."""
    return f"#0:{atom}"


def _label(mapping, v):
    return ("c", v) if v.startswith("#") else mapping[v]


def _key(term, mapping):
    """Serialisation of ``term`` under a complete labelling of its indices."""
    parts = []
    for f in term[1]:
        if f[0] == "e":
            parts.append(("e", f[1], f[2], f[3], tuple(_label(mapping, v) for v in f[4])))
        elif f[0] == "d":
            parts.append(("d",) + tuple(sorted((_label(mapping, f[1]), _label(mapping, f[2])))))
        else:
            parts.append(("s", f[1], canonical_poly(f[2], mapping)))
    return (tuple(sorted(parts, key=repr)), tuple(sorted(repr(mapping[v]) + a for v, a in term[2])))


def _term_key(term, outer):
    dummies = list(term[2])
    if not dummies:
        return _key(term, outer)
    groups: dict = {}
    for v, a in dummies:
        groups.setdefault((a, _occurrences(term, v)), []).append(v)
    ordered = sorted(groups.items(), key=lambda kv: repr(kv[0]))
    if math.prod(math.factorial(len(vs)) for _, vs in ordered) > MAX_LABELLINGS:
        raise OutsideFragment(f"a term with {len(dummies)} interchangeable dummy indices is too symmetric to "
                              "canonicalise")
    depth = len(outer)
    best = None
    for perm in itertools.product(*(itertools.permutations(vs) for _, vs in ordered)):
        mapping = dict(outer)
        n = 0
        for (inv, _), vs in zip(ordered, perm):
            for v in vs:
                mapping[v] = ("t", depth, n, inv[0])
                n += 1
        k = _key(term, mapping)
        if best is None or repr(k) < repr(best):
            best = k
    return best


def canonical_poly(terms, outer=None) -> tuple:
    r"""Collected canonical form of a sum of terms; ``outer`` labels its free indices.

    Two sums get equal forms iff they are equal as formal sums of contraction graphs.

    >>> t1 = (Fraction(1), (("e", "A", 0, 0, ("i", "k")), ("e", "B", 0, 0, ("k", "j"))), (("k", "N"),))
    >>> t2 = (Fraction(1), (("e", "B", 0, 0, ("l", "j")), ("e", "A", 0, 0, ("i", "l"))), (("l", "N"),))
    >>> canonical_poly([t1], {"i": 0, "j": 1}) == canonical_poly([t2], {"i": 0, "j": 1})
    True
    """
    outer = outer or {}
    acc: dict = {}
    for t in terms:
        k = _term_key(t, outer)
        acc[k] = acc.get(k, Fraction(0)) + t[0]
    acc = {k: sympy.expand(c) if isinstance(c, sympy.Basic) else c for k, c in acc.items()}
    return tuple(sorted(((k, c) for k, c in acc.items() if c != 0), key=repr))


def index_counts(term, free_atoms) -> dict:
    """Number of distinct indices of each atom type in scope anywhere in ``term`` (the witness bound)."""
    counts: dict = {}
    for a in free_atoms:
        counts[a] = counts.get(a, 0) + 1

    constants = set()

    def walk(t):
        for _, a in t[2]:
            counts[a] = counts.get(a, 0) + 1
        constants.update(v for v in _indices(t) if v.startswith("#"))
        for f in t[1]:
            if f[0] == "s":
                for inner in f[2]:
                    walk(inner)
    walk(term)
    for c in constants:
        a = c.split(":", 1)[1]
        counts[a] = counts.get(a, 0) + 1
    return counts
