r"""Index-form rules of rotary embeddings (:mod:`symuat.layers.rotary`, :mod:`symuat.layers.rotary_interleaved`).

A builder declares the tables :math:`c, s` as :math:`N\times r/2` with
:func:`~symuat.layers.rotary.rotary_pairs`; the level then traces the rotary width :math:`r` as two blocks of
:math:`r/2` (rotate-half: planes :math:`(i, i + r/2)`) or as :math:`r/2` row-major pairs (interleaved: planes
:math:`(2i, 2i+1)`), and the head width :math:`d` as :math:`r` followed by the :math:`d - r` features left alone
(:mod:`.splits`).  In both layouts the first and the second coordinate of plane :math:`i` are the blocks 0 and 1
of the width's cases, so one rule serves both:

* the libraries' formula (``rotate_half_apply`` / ``rotate_every_two_apply``): with :math:`Q_a, Q_b` the first and
  second coordinates of the planes, :math:`(Q_a\odot c - Q_b\odot s,\ Q_b\odot c + Q_a\odot s,\ Q_{\ge r})`;
* the operator :math:`\bigoplus_n R_n^T` on :math:`q'` (``rotary_operator`` / ``interleaved_rotary_operator``):
  entry :math:`((n, a), (n', b))` is :math:`\delta_{nn'}\delta_{ii'}` times :math:`c_{n,i}`, :math:`-s_{n,i}`,
  :math:`s_{n,i}`, :math:`c_{n,i}` for (a, b) = (first, first), (first, second), (second, first), (second, second),
  and :math:`\delta_{nn'}\delta_{jj'}` on the features left alone.

Soundness.  Each rule is the concrete function's definition written per block: the formula, entry by entry, for
every :math:`N`, every number of planes and every number of features left alone (possibly 0: an empty block has no
entries).  The layout of the width is part of its type, so a rotate-half formula applied to an interleaved width
(or the reverse) leaves the fragment instead of being proved.
"""

from __future__ import annotations

from fractions import Fraction

from .index_types import Part, Prod, Sum, as_type, canonical, cases, from_int, same
from .outside import OutsideFragment
from .tracer import Tracer, _vars

__all__ = ["rotate_half_apply", "rotate_every_two_apply", "rotary_operator", "interleaved_rotary_operator"]


def _pairs(cos, sin) -> Part:
    if not (isinstance(cos, Tracer) and isinstance(sin, Tracer) and same(cos.rows, sin.rows)
            and same(cos.cols, sin.cols)):
        raise OutsideFragment(f"rotary tables of shapes {getattr(cos, 'shape', cos)} and {getattr(sin, 'shape', sin)}")
    k = canonical(cos.cols)
    if not (isinstance(k, Part) and k.kind == "pairs"):
        raise OutsideFragment(f"rotary tables with {k} columns (only r/2, declared by rotary_pairs)")
    if len(cases(cos.rows)) != 1:
        raise OutsideFragment(f"rotary tables over the concatenated positions {cos.rows}")
    return k


def _rest(width, k: Part, layout: str) -> int:
    """The number of cases of ``width`` after the rotated ones; ``width`` must start with the planes of ``k``."""
    width = canonical(as_type(width))
    head = Sum((k, k)) if layout == "half" else Prod((k, from_int(2)))
    n_head = 2 if layout == "half" else 1
    parts = width.parts if isinstance(width, Sum) else (width,)
    if not (len(parts) >= n_head and same(canonical(Sum(parts[:n_head])), head)):
        raise OutsideFragment(f"a {layout} rotation of the planes of {k} in a width {width}")
    return len(cases(width)) - 2


def _columns(X: Tracer, c: int, t) -> Tracer:
    """Column case ``c`` of ``X`` as a matrix with columns of type ``t``."""
    return Tracer(X.rows, t, {(i, 0): X.blocks[i, c] for i in range(len(cases(X.rows))) if (i, c) in X.blocks})


def _rotate(Q, cos, sin, layout: str) -> Tracer:
    k = _pairs(cos, sin)
    if not isinstance(Q, Tracer) or not same(Q.rows, cos.rows):
        raise OutsideFragment(f"rotating a {getattr(Q, 'shape', Q)} matrix with tables over {cos.rows}")
    _rest(Q.cols, k, layout)
    a, b = _columns(Q, 0, k), _columns(Q, 1, k)
    first = a.multiply_elementwise(cos) - b.multiply_elementwise(sin)
    second = b.multiply_elementwise(cos) + a.multiply_elementwise(sin)
    blocks = {key: v for key, v in Q.blocks.items() if key[1] >= 2}
    for c, part in ((0, first), (1, second)):
        blocks.update({(i, c): v for (i, _), v in part.blocks.items()})
    return Tracer(Q.rows, Q.cols, blocks)


def rotate_half_apply(Q, cos, sin) -> Tracer:
    r""":math:`q\odot\cos + \mathrm{rotate\_half}(q)\odot\sin` on a width traced as :math:`r/2 + r/2 + (d - r)`."""
    return _rotate(Q, cos, sin, "half")


def rotate_every_two_apply(Q, cos, sin) -> Tracer:
    r"""GPT-J's :math:`q\odot\cos + \mathrm{rotate\_every\_two}(q)\odot\sin` on a width :math:`(r/2)\cdot 2 + (d-r)`."""
    return _rotate(Q, cos, sin, "adjacent")


def _delta(u, v) -> tuple:
    return tuple(("d", x, y) for x, y in zip(u, v))


def _operator(cos, sin, d, layout: str) -> Tracer:
    k = _pairs(cos, sin)
    rest = _rest(d, k, layout)
    width = canonical(as_type(d))
    (pos,), wc = cases(cos.rows), cases(width)
    blocks = {}
    for a, b, table, sign in ((0, 0, cos, 1), (0, 1, sin, -1), (1, 0, sin, 1), (1, 1, cos, 1)):
        n, n2, i, i2 = _vars(pos), _vars(pos), _vars(wc[a]), _vars(wc[b])
        terms = tuple((sign * c, fs + _delta(n, n2) + _delta(i, i2), ds) for c, fs, ds in table.terms((0, 0), n, i))
        blocks[a, b] = (n + i, n2 + i2, terms)
    for c in range(2, 2 + rest):
        n, n2, j, j2 = _vars(pos), _vars(pos), _vars(wc[c]), _vars(wc[c])
        blocks[c, c] = (n + j, n2 + j2, ((Fraction(1), _delta(n, n2) + _delta(j, j2), ()),))
    t = Prod((canonical(cos.rows), width))
    return Tracer(t, t, blocks)


def rotary_operator(cos, sin, d) -> Tracer:
    r""":math:`\bigoplus_n R_n^T` rotating the planes :math:`(i, i + r/2)` of each position (``d``: the head width)."""
    return _operator(cos, sin, d, "half")


def interleaved_rotary_operator(cos, sin, d) -> Tracer:
    r""":math:`\bigoplus_n R_n^T` rotating the planes :math:`(2i, 2i + 1)` of each position."""
    return _operator(cos, sin, d, "adjacent")
