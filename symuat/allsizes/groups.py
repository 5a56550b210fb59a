r"""Index-form rules of grouped-query attention (:mod:`symuat.layers.grouped_attention`): heads as (group, place).

A builder that calls ``heads_per_group(H, G)`` or ``repeat_kv`` on the atoms :math:`[H]`, :math:`[G]` makes the
level trace :math:`H` as the product :math:`[G]\times[H/G]` (:mod:`.splits`): query head
:math:`h = g\,(H/G) + q` is the pair :math:`(g, q)`, row-major, so a family of heads (``family_shapes("H", H, …)``,
``family_hstack``, ``family_sum``) is indexed by a :class:`~.families.PairIndex` whose outer index is the head's
key/value group.

* ``repeat_kv(V, H, G, d)`` — the family :math:`h = (g, q) \mapsto V_g` (columns :math:`gd, \dots, (g+1)d - 1`):
  the concrete function repeats each group's block :math:`H/G` times consecutively, so block
  :math:`g\,(H/G) + q` is :math:`V_g`;
* ``grouped_closed_form(H, W_V, W_O, G)`` — :math:`\sum_{(g,q)} H_{(g,q)}\otimes(W_{V,g}W_{O,(g,q)})^T`: the concrete
  function reads group :math:`\lfloor hG/H\rfloor` for head :math:`h`, and
  :math:`\lfloor (g\,(H/G) + q)\,G/H\rfloor = g` for :math:`0 \le q < H/G`.

Soundness.  Both rules are the concrete definitions at the pair :math:`(g, q)`, for every :math:`G` and every
:math:`H/G` (the divisibility :math:`G \mid H` is the builders' domain: the witness search skips other sizes).  A
grouping that is not "consecutive heads share a group" (e.g. head :math:`h` reading group :math:`h \bmod G`) has no
rule and leaves the fragment.
"""

from __future__ import annotations

from ..algebra.matrices import kron
from .families import (
    PairIndex,
    TracedFamily,
    as_family,
    block_size,
    col_block,
    family_from,
    family_size,
    family_sum,
    row_block,
)
from .index_types import Atom, Prod, as_type, same
from .outside import OutsideFragment
from .splits import heads_per_group
from .tracer import Tracer

__all__ = ["repeat_kv", "grouped_closed_form"]


def _group_of(h) -> object:
    if not isinstance(h, PairIndex):
        raise OutsideFragment(f"the key/value group of the head {h!r} (only of a head indexed as (group, place))")
    return h.outer


def _groups(n_heads, n_groups) -> tuple[Prod, Atom]:
    heads_per_group(n_heads, n_groups)  # H traced as G*(H/G)
    return as_type(n_heads), as_type(n_groups)


def repeat_kv(V, n_heads, n_groups, d) -> TracedFamily:
    r"""The family of the heads' value blocks, :math:`(g, q)\mapsto V_g`."""
    heads, groups = _groups(n_heads, n_groups)
    if not (isinstance(V, Tracer) and same(V.cols, Prod((groups, as_type(d))))):
        raise OutsideFragment(f"repeat_kv of a {getattr(V, 'shape', V)} matrix: not {groups} groups of width {d}")

    def value(h):
        return col_block(V, _group_of(h), d)
    return family_from(value, heads)


def grouped_closed_form(H, W_V, W_O, n_groups) -> Tracer:
    r""":math:`\sum_{(g,q)} H_{(g,q)}\otimes(W_{V,g}W_{O,(g,q)})^T`."""
    heads = family_size(H)
    if not isinstance(heads, Prod) or len(heads.factors) != 2:
        raise OutsideFragment(f"grouped attention over {heads} heads (only heads traced as groups x places)")
    n, groups = _groups(heads, n_groups)
    d = block_size(W_O.rows, n)
    if not same(W_V.cols, Prod((groups, d))):
        raise OutsideFragment(f"W_V with columns {W_V.cols}: not {groups} groups of width {d}")
    members = as_family(H)
    return family_sum(lambda h: kron(members[h], (col_block(W_V, _group_of(h), d) * row_block(W_O, h, d)).T), n)
