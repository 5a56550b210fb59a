r"""Index-form rules of symuat's matrix functions on :class:`~symuat.allsizes.tracer.Tracer` matrices.

:func:`dispatch` is the ``__symuat_function__`` hook of tracers and symbolic sizes: the
functions of :mod:`symuat.algebra` decorated with ``traceable`` hand their arguments to it
(:func:`~symuat.algebra.matrices.vec_r`, ``unvec_r``, ``kron``, ``identity_matrix``,
``ones``, ``elementwise``, LayerNorm's ``centring_matrix``, :func:`~symuat.algebra.diamond.diamond`, Eq. 4, and
the combinators of :mod:`symuat.algebra.families`, :mod:`.families`, ``halves``/``but_last``, :mod:`.splits`, and
``pair_matrix``, :mod:`.entrywise`; rotary embeddings, :mod:`.rotary`; grouped-query attention, :mod:`.groups`;
top-k routing, :mod:`.routing`).
:func:`tracing` lets ``ImmutableMatrix(t)`` copy a tracer while a builder runs.
"""

from __future__ import annotations

import contextlib
import functools
from fractions import Fraction

import sympy
from sympy.matrices.expressions.blockmatrix import BlockMatrix
from sympy.matrices.expressions.kronecker import KroneckerProduct

from . import entrywise, families, groups, masks, rotary, routing, splits
from .index_types import UNIT, IndexType, Prod, as_type, cases, same
from .outside import OutsideFragment
from .terms import multiply
from .tracer import Tracer, _vars

__all__ = ["dispatch", "tracing"]


def _kron(A: Tracer, B: Tracer) -> Tracer:
    r""":math:`(A\otimes B)_{(i,k),(j,l)} = A_{ij}B_{kl}` on product types."""
    nbr, nbc = len(cases(B._r)), len(cases(B._c))
    blocks = {}
    for (i, j) in A.blocks:
        for (k, m) in B.blocks:
            rv1, cv1, rv2, cv2 = (_vars(c) for c in (cases(A._r)[i], cases(A._c)[j], cases(B._r)[k], cases(B._c)[m]))
            terms = tuple(multiply(a, b) for a in A.terms((i, j), rv1, cv1) for b in B.terms((k, m), rv2, cv2))
            blocks[i * nbr + k, j * nbc + m] = (rv1 + rv2, cv1 + cv2, terms)
    return Tracer(Prod((A._r, B._r)), Prod((A._c, B._c)), blocks)


def _vec_r(X: Tracer) -> Tracer:
    nc = len(cases(X._c))
    return Tracer(Prod((X._r, X._c)), UNIT, {(i * nc + j, 0): (rv + cv, (), ts) for (i, j), (rv, cv, ts) in
                                              X.blocks.items()})


def _unvec_r(v: Tracer, rows, cols) -> Tracer:
    rows, cols = as_type(rows), as_type(cols)
    if not (same(v._c, UNIT) and same(v._r, Prod((rows, cols)))):
        raise OutsideFragment(f"unvec_r of a {v.shape} vector to {rows} x {cols}")
    nc, rc = len(cases(cols)), cases(rows)
    return Tracer(rows, cols, {divmod(i, nc): (rv[:len(rc[i // nc])], rv[len(rc[i // nc]):], ts)
                               for (i, _), (rv, _, ts) in v.blocks.items()})


def _diamond(W: Tracer, x: Tracer) -> Tracer:
    r""":math:`(W\diamond x)_i = \sum_k w_{k,i}x_k` (Eq. 4); a column-vector first operand plays ``x``."""
    if same(W._c, UNIT) and not same(x._c, UNIT):
        W, x = x, W
    if not same(x._c, UNIT):
        raise OutsideFragment(f"diamond of {W.shape} and {x.shape}: no column-vector operand")
    return W.T.matmul(x)


def _centring(M) -> Tracer:
    r""":math:`C_M = I_M - \tfrac1M\mathbf 1\mathbf 1^{\mathsf T}` (LayerNorm), :math:`1/M` a size scalar."""
    return Tracer.identity(M) - Tracer.ones(M) * Tracer.ones(M).T / M


def _elementwise(f, X: Tracer) -> Tracer:
    return X.applyfunc(f)


def _softmax(S: Tracer) -> Tracer:
    r"""Row-wise :math:`e^{S_{rc}}/\sum_k e^{S_{rk}}` (Eq. 8, 35): ``exp`` and the reciprocal as opaque functions."""
    rc, cc = cases(S._r), cases(S._c)
    blocks = {}
    for i in range(len(rc)):
        for j in range(len(cc)):
            rv, cv = _vars(rc[i]), _vars(cc[j])
            denominator = []
            for k in range(len(cc)):
                kv = _vars(cc[k])
                exp_k = ("s", "softmax:exp", tuple(S.terms((i, k), rv, kv)))
                denominator.append((Fraction(1), (exp_k,), tuple(zip(kv, cc[k]))))
            exp_j = ("s", "softmax:exp", tuple(S.terms((i, j), rv, cv)))
            blocks[i, j] = (rv, cv, ((Fraction(1), (exp_j, ("s", "softmax:inv", tuple(denominator))), ()),))
    return Tracer(S._r, S._c, blocks)


_HANDLERS = {
    "vec_r": _vec_r,
    "unvec_r": _unvec_r,
    "kron": _kron,
    "identity_matrix": Tracer.identity,
    "ones": Tracer.ones,
    "elementwise": _elementwise,
    "centring_matrix": _centring,
    "diamond": _diamond,
    "softmax": _softmax,
    "family_sum": families.family_sum,
    "row_block": families.row_block,
    "col_block": families.col_block,
    "diag_vector": families.diag_vector,
    "family_hstack": families.family_hstack,
    "family_shapes": families.family_shapes,
    "family_member": families.family_member,
    "family_of": families.family_of,
    "family_from": families.family_from,
    "sliding_window_mask": masks.sliding_window_mask,
    "symmetric_window_mask": masks.symmetric_window_mask,
    "masked_weights": masks.masked_weights,
    "causal_padding_mask": masks.causal_padding_mask,
    "row_stochastic_family": masks.row_stochastic_family,
    "softcap": masks.softcap,
    "as_family": families.as_family,
    "family_size": families.family_size,
    "member_shape": families.member_shape,
    "family_block_diagonal": families.family_block_diagonal,
    "block_size": families.block_size,
    "basis_vector": families.basis_vector,
    "halves": splits.halves,
    "but_last": splits.but_last,
    "partition_indicator": splits.partition_indicator,
    "rotary_pairs": splits.rotary_pairs,
    "heads_per_group": splits.heads_per_group,
    "repeat_kv": groups.repeat_kv,
    "grouped_closed_form": groups.grouped_closed_form,
    "fixed_choice": routing.fixed_choice,
    "choice_weights": routing.choice_weights,
    "renormalise_rows": routing.renormalise_rows,
    "routing_gates": routing.routing_gates,
    "dispatch": routing.dispatch,
    "expert_family": routing.expert_family,
    "rotate_half_apply": rotary.rotate_half_apply,
    "rotate_every_two_apply": rotary.rotate_every_two_apply,
    "rotary_operator": rotary.rotary_operator,
    "interleaved_rotary_operator": rotary.interleaved_rotary_operator,
    "pair_matrix": entrywise.pair_matrix,
    "kronecker_delta": entrywise.kronecker_delta,
}


def dispatch(name: str, args: tuple, kwargs: dict):
    """Run symuat's matrix function ``name`` on tracers or symbolic sizes."""
    if name not in _HANDLERS:
        raise OutsideFragment(f"{name} has no index-form rule")
    args = tuple(as_type(a) if isinstance(a, int) and not isinstance(a, bool) else a for a in args)
    return _HANDLERS[name](*args, **kwargs)


# The hook ``symuat.algebra.matrices.traceable`` looks for on arguments (set here: rules sit above both classes).
Tracer.__symuat_function__ = IndexType.__symuat_function__ = staticmethod(dispatch)
families.FamilyIndex.__symuat_function__ = families.TracedFamily.__symuat_function__ = staticmethod(dispatch)
families.PairIndex.__symuat_function__ = staticmethod(dispatch)
Tracer._entry = staticmethod(entrywise.entry)  # X[i, k] at pair_matrix index variables


def _symbolic(*args) -> bool:
    """Whether a size is symbolic or a matrix is a tracer, looking inside lists of blocks."""
    return any(isinstance(a, (IndexType, Tracer)) or (isinstance(a, (list, tuple)) and _symbolic(*a)) for a in args)


def _sized(n, m=None) -> tuple[IndexType, IndexType]:
    return as_type(n), as_type(n if m is None else m)


def _zeros(rows, cols=None, **_kw) -> Tracer:
    """``zeros(n, m)``: no block has a term."""
    return Tracer(*_sized(rows, cols), {})


def _ones(rows, cols=None, **_kw) -> Tracer:
    r""":math:`\mathbf 1_n \mathbf 1_m^{\mathsf T}`."""
    n, m = _sized(rows, cols)
    return Tracer.ones(n) * Tracer.ones(m).T


def _eye(rows, cols=None, **_kw) -> Tracer:
    n, m = _sized(rows, cols)
    if not same(n, m):
        raise OutsideFragment(f"eye({n}, {m}) of two sizes that are not the same")
    return Tracer.identity(n)


def _kronecker(*matrices) -> Tracer:
    out = matrices[0]
    for m in matrices[1:]:
        out = _kron(out, m)
    return out


def _block(rows) -> Tracer:
    """``BlockMatrix([[A, B], [C, D]])``: the rows joined, then stacked."""
    if isinstance(rows, Tracer) or not all(isinstance(r, (list, tuple)) and r for r in rows):
        raise OutsideFragment("BlockMatrix of tracers needs a list of rows of blocks")
    joined = [functools.reduce(Tracer.row_join, r) for r in rows]
    return functools.reduce(Tracer.col_join, joined)


#: SymPy constructors that build a tracer when a size is symbolic (class attributes, so ``from sympy import zeros``
#: is covered too): (owner, attribute, tracer version, kind of attribute).
_CONSTRUCTORS = (
    (sympy.MatrixBase, "zeros", _zeros, classmethod),
    (sympy.MatrixBase, "ones", _ones, classmethod),
    (sympy.MatrixBase, "eye", _eye, classmethod),
    (KroneckerProduct, "__new__", lambda *args, **kw: _kronecker(*args), staticmethod),
    (BlockMatrix, "__new__", lambda rows, **kw: _block(rows), staticmethod),
)


def _override(owner, name: str, traced, kind):
    original = owner.__dict__[name]
    plain = original.__func__ if isinstance(original, (classmethod, staticmethod)) else original

    def call(first, *args, **kwargs):  # first: the class (classmethod, __new__)
        if _symbolic(*args, *kwargs.values()):
            return traced(*args, **kwargs)
        return plain(first, *args, **kwargs)

    return original, kind(call)


@contextlib.contextmanager
def tracing():
    """While tracing, ``ImmutableMatrix(t)`` and ``Matrix(t)`` of a tracer ``t`` return ``t`` (an exact copy), and
    SymPy's ``zeros``/``ones``/``eye`` on symbolic sizes, ``kronecker_product``, ``Matrix.hstack``/``vstack`` and
    ``BlockMatrix`` of tracers build tracers."""
    classes = (sympy.ImmutableDenseMatrix, sympy.MutableDenseMatrix)
    saved = [(cls, cls.__dict__.get("_new"), cls._new) for cls in classes]

    def passthrough(bound):
        def _new(cls, *args, **kwargs):
            if len(args) == 1 and isinstance(args[0], Tracer):
                return args[0]
            return bound(*args, **kwargs)
        return classmethod(_new)

    replaced = []
    try:
        for cls, _, bound in saved:
            cls._new = passthrough(bound)
        for owner, name, traced, kind in _CONSTRUCTORS:
            original, patched = _override(owner, name, traced, kind)
            replaced.append((owner, name, original))
            setattr(owner, name, patched)
        yield
    finally:
        for owner, name, original in reversed(replaced):
            setattr(owner, name, original)
        for cls, own, _ in saved:
            if own is None:
                del cls._new
            else:
                cls._new = own
