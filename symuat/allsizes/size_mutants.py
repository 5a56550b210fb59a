r"""Size-only mutants: corruptions of a true identity that hold on its grid and fail above it.

For a dimension :math:`a` whose grid goes up to :math:`g`, the mutant adds :math:`s\,E` (``kron(s, E)``,
:math:`E` a fresh matrix of the right-hand side's shape, :math:`s` a :math:`1\times1` matrix) to the
right-hand side, where :math:`s` vanishes exactly when :math:`a\le g`:

* ``wedge``: :math:`s = c^{\mathsf T}\sum_{\pi\in S_{g+1}}\operatorname{sgn}(\pi)\,
  v_{\pi 1}\otimes\cdots\otimes v_{\pi(g+1)}` for fresh vectors :math:`v_i\in\mathbb R^a` and
  :math:`c\in\mathbb R^{a^{g+1}}` — :math:`g+1` vectors in dimension :math:`a\le g` are dependent;
* ``standard``: :math:`s = u^{\mathsf T} S_4(P_1,\dots,P_4)\, w` for fresh :math:`a\times a` matrices, when
  :math:`g\le 2` — the standard polynomial :math:`S_4` vanishes on :math:`2\times2` matrices
  (Amitsur–Levitzki) but not on :math:`3\times3` ones.

A grid-only prover accepts every such mutant; the all-sizes level must reject each one.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from ..algebra.matrices import kron
from ..evidence.declare import DeclaredShapes
from ..evidence.identity import Identity
from .decide import traced_sides
from .index_types import IndexType, size_of
from .splits import unsplit
from .tracer import Tracer

__all__ = ["size_only_mutants", "standard_polynomial", "wedge"]

_PREFIX = "zeta"


def _sign(perm) -> int:
    return -1 if sum(1 for a, b in itertools.combinations(perm, 2) if a > b) % 2 else 1


def standard_polynomial(mats):
    r""":math:`S_k(A_1,\dots,A_k) = \sum_\pi \operatorname{sgn}(\pi) A_{\pi 1}\cdots A_{\pi k}` (works on tracers too).

    >>> import sympy
    >>> A, B = sympy.Matrix([[0, 1], [0, 0]]), sympy.Matrix([[0, 0], [1, 0]])
    >>> standard_polynomial([A, B])
    Matrix([
    [1,  0],
    [0, -1]])
    """
    total = None
    for perm in itertools.permutations(range(len(mats))):
        prod = mats[perm[0]]
        for p in perm[1:]:
            prod = prod * mats[p]
        term = prod if _sign(perm) > 0 else -prod
        total = term if total is None else total + term
    return total


def wedge(vectors):
    r""":math:`\sum_\pi \operatorname{sgn}(\pi)\, v_{\pi 1}\otimes\cdots\otimes v_{\pi k}`: zero iff they are dependent.

    >>> import sympy
    >>> wedge([sympy.Matrix([1, 2]), sympy.Matrix([2, 4])]).T
    Matrix([[0, 0, 0, 0]])
    """
    total = None
    for perm in itertools.permutations(range(len(vectors))):
        term = vectors[perm[0]]
        for p in perm[1:]:
            term = kron(term, vectors[p])
        term = term if _sign(perm) > 0 else -term
        total = term if total is None else total + term
    return total


def _scalar_factory(kind: str, a: str, k: int):
    """(extra shapes as dimension strings, builder of the 1x1 factor s from the environment)."""
    if kind == "wedge":
        names = [f"{_PREFIX}_v{i}" for i in range(k)]
        shapes = {n: (a, 1) for n in names}
        shapes[f"{_PREFIX}_c"] = ("*".join([a] * k), 1)
        return shapes, lambda env: env[f"{_PREFIX}_c"].T * wedge([env[n] for n in names])
    names = [f"{_PREFIX}_P{i}" for i in range(4)]
    shapes = {n: (a, a) for n in names}
    shapes.update({f"{_PREFIX}_u": (a, 1), f"{_PREFIX}_w": (a, 1)})
    u, w = f"{_PREFIX}_u", f"{_PREFIX}_w"
    return shapes, lambda env: env[u].T * standard_polynomial([env[n] for n in names]) * env[w]


def _with_shapes(base, extra: Mapping[str, tuple]):
    """``base`` plus ``extra``, whose sizes are dimension strings (``"m*m*m"``) or index types."""
    if isinstance(base, DeclaredShapes):
        return {**dict(base.declared), **{n: tuple(unsplit(x) if isinstance(x, IndexType) else x for x in shape)
                                          for n, shape in extra.items()}}

    def shapes(dims):
        out = dict(base(dims))
        for name, (r, c) in extra.items():
            out[name] = tuple(_size(x, dims) for x in (r, c))
        return out
    return shapes


def _size(size, dims):
    symbolic = any(isinstance(v, IndexType) for v in dims.values())
    if isinstance(size, IndexType):
        return size if symbolic else size_of(size, dims)
    if isinstance(size, int):
        return size
    value = None
    for name in str(size).split("*"):
        value = dims[name] if value is None else value * dims[name]
    return value


def _output_types(identity: Identity):
    """The right-hand side's row and column index types (the identity must be in the fragment)."""
    out = traced_sides(identity)[1]
    return out.rows, out.cols


def size_only_mutants(identity: Identity) -> list[tuple[str, Identity]]:
    r"""One ``wedge`` mutant per dimension (and a ``standard`` one where the grid stops at 2), named ``kind:dim``.

    The mutants keep ``dims`` (the grid) and the symbolic level only.
    """
    out = []
    rows, cols = _output_types(identity)
    for a in identity.dims[0]:
        g = max(d[a] for d in identity.dims)
        kinds = ["wedge"] + (["standard"] if g <= 2 else [])
        for kind in kinds:
            extra, scalar = _scalar_factory(kind, a, g + 1)
            extra[f"{_PREFIX}_E"] = (rows, cols)
            rhs = identity.rhs

            def mutated(env, dims, rhs=rhs, scalar=scalar):
                base, extra = rhs(env, dims), kron(scalar(env), env[f"{_PREFIX}_E"])
                if isinstance(extra, Tracer) and not isinstance(base, Tracer):
                    base = Tracer.constant(base)  # a side that is a matrix of sizes, e.g. [[n]]
                return base + extra
            out.append((f"{kind}:{a}", Identity(shapes=_with_shapes(identity.shapes, extra), lhs=identity.lhs,
                                                rhs=mutated, dims=identity.dims, levels=identity.levels[:1],
                                                scope=identity.scope)))
    return out
