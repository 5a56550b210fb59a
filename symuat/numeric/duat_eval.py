r"""Streaming evaluation of a derived substitution table with structured operators (Eq. 11 / 33 and extensions).

The rows of the derived table (:func:`~symuat.expansion.extended.derive_table`) are interpreted box by box:
a vector-valued expression is evaluated once and memoised by its SymPy expression, a matrix-valued table
name is unfolded one level and applied right to left, and a layer symbol :math:`\mathbf W'_{i,k}` is a
structured operator (never an :math:`NM\times NM` matrix).  Two exact rewrites keep the cost near the
floor of :math:`L(L-1)/2` applications of the :math:`\mathbf W'_{k,1}`:

* *linearity* — terms with the same leading operator are summed before the operator's outer factor is
  applied (so :math:`\tilde V_i\mathbf x'_0 + \tilde\beta_i` costs one application of :math:`\mathbf W'_{i,2}`);
* *shared factors* — when :math:`\mathbf W'_{i,1} = Y_i\circ P_i` and :math:`\mathbf W'_{i,2} = G_i\circ P_i`
  (``ResidualParams.factors``), :math:`P_i v` is memoised per vector, so :math:`\mathbf W'_{i,2}` reuses what
  :math:`\mathbf W'_{i,1}` computed (the Eq. 30→31 merge read backwards).

A box's parameters are bound when the box is reached, at the layer input the table itself produced,
:math:`\mathbf x'_{i-1} = \tilde A_{i-1}\mathbf x'_0 + \tilde c_{i-1} + R_{i-1}`; memo entries of earlier boxes
are then dropped, so memory stays :math:`O(L)` vectors.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Optional

import numpy as np
import sympy

from ..errors import InvalidValueError
from ..expansion import INPUT
from ..expansion.extended import ExtendedTable, is_application
from ..expansion.table import A_name, U_name, c_name
from .backend import stack, zeros_like_backend
from .operators import LinearOperator

__all__ = ["BoxOperator", "StreamingEvaluator", "BATCH", "BATCH_BYTES", "batch_size"]

#: Vectors per batched operator application: larger batches use fewer, bigger GEMMs but hold ~6 * BATCH vectors of
#: length NM at once (the stacked input, the norm's and the attention's outputs, their sum) ...
BATCH = 4
#: ... so at long N a batch holds at most this many bytes of input (issue 30: at N = 4096, width 2048, 2 vectors).
BATCH_BYTES = 128 * 2 ** 20


def batch_size(length: int) -> int:
    """Vectors per batched application for vectors of ``length`` float64 numbers (:data:`BATCH`, :data:`BATCH_BYTES`).

    >>> batch_size(1000), batch_size(4096 * 2048)
    (4, 2)
    """
    return max(1, min(BATCH, BATCH_BYTES // (8 * length)))


_ARGS: dict = {}


# Symbolic bookkeeping is the same for every call on a table of one shape: cache it.
@lru_cache(maxsize=None)
def _mul_parts(e: sympy.Expr) -> tuple:
    c, nc = e.args_cnc()
    return (float(sympy.Mul(*c)) if c else None), nc[0], sympy.Mul(*nc[1:])


@lru_cache(maxsize=None)
def _expand_product(d: sympy.Expr, rest: sympy.Expr) -> sympy.Expr:
    return sympy.expand_mul(d * rest, deep=False)


@lru_cache(maxsize=None)
def _sum_parts(args: tuple) -> tuple:
    out = []
    for t in args:
        if t.is_Mul and not t.args_cnc()[0]:
            out.append((t.args[0], sympy.Mul(*t.args[1:]), t))
        else:
            out.append((None, None, t))
    return tuple(out)


class BoxOperator:
    r"""A layer symbol's operator as ``outer ∘ core`` (either may be ``None`` = identity)."""

    __slots__ = ("core", "outer")

    def __init__(self, core: Optional[LinearOperator], outer: Optional[LinearOperator]):
        self.core, self.outer = core, outer


class StreamingEvaluator:
    r"""Evaluate ``ext`` box by box; ``bind(i, ops, vectors, activation)`` before evaluating box ``i``."""

    def __init__(self, ext: ExtendedTable, x0: np.ndarray):
        self.ext, self.table = ext, ext.table
        self.ops: dict[sympy.Symbol, BoxOperator] = {}
        self.vecs: dict[sympy.Symbol, np.ndarray] = {INPUT: x0}
        self.memo: dict[sympy.Expr, np.ndarray] = {}
        self.core_memo: dict[tuple, np.ndarray] = {}
        self.activation: dict[int, Callable] = {}
        self._names = set(self.table.names)
        #: operator applications performed, by kind: "core" (shared factor), "W'_{·,k}" outer factors
        self.applications: dict[str, int] = {}
        self._apps = {ext.application(j): j for j in ext.nonlinear}

    def bind(self, i: int, ops: dict[str, BoxOperator], vectors: dict[str, np.ndarray],
             activation: Optional[Callable] = None) -> None:
        """Bind the parameters of box ``i`` (names as in the table, e.g. ``W'_{2,1}``)."""
        self.ops.update({sympy.Symbol(k, commutative=False): v for k, v in ops.items()})
        self.vecs.update({sympy.Symbol(k, commutative=False): v for k, v in vectors.items()})
        if activation is not None:
            self.activation[i] = activation

    def release(self, i: int) -> None:
        """Forget the operators and bias vectors of box ``i`` once it is evaluated: later boxes only apply their own
        operators to memoised vectors, so at most one layer's operators (its attention matrices) are held at a time."""
        tag = f"'_{{{i},"
        self.ops = {k: v for k, v in self.ops.items() if tag not in k.name}
        self.vecs = {k: v for k, v in self.vecs.items() if tag not in getattr(k, "name", "")}

    def input_core(self, i: int, core: LinearOperator) -> np.ndarray:
        r""":math:`P\,\mathbf x'_{i-1}` as the sum of :math:`P` applied to the pieces
        :math:`\tilde A_{i-1}\mathbf x'_0`, :math:`\tilde c_{i-1}`, :math:`\tilde U^{(i-1)}_j\mathrm{app}_j`
        (memoised, so box ``i`` reuses them)."""
        t = self.table
        keys = [t.ref(A_name(i - 1)) * INPUT, t.ref(c_name(i - 1))]
        keys += [sympy.Symbol(U_name(j, i - 1), commutative=False) * self.ext.application(j)
                 for j in self.ext.nonlinear if j <= i - 1]
        keys = [k for k in keys if k != 0]
        todo = [k for k in keys if (id(core), k) not in self.core_memo]
        step = batch_size(int(np.prod(self.vecs[INPUT].shape)))  # .shape: a torch tensor's .size is a method
        if len(todo) > 1 and step > 1:  # batched applications, `step` pieces at a time (bounded temporaries)
            for start in range(0, len(todo), step):
                chunk = todo[start:start + step]
                if len(chunk) == 1:
                    continue  # applied singly below
                for k, v in zip(chunk, core._matvecs(stack([self.vec(k) for k in chunk]))):
                    self.core_memo[(id(core), k)] = v
                self._count("core (batched vectors)", len(chunk))
        parts = [self._core(core, k) for k in keys]
        out = parts[0]
        for q in parts[1:]:
            out = out + q
        return out

    def box_values(self, i: int) -> tuple[np.ndarray, np.ndarray, list]:
        r"""Evaluate box ``i``: :math:`\tilde A_i\mathbf x'_0`, :math:`\tilde c_i` and the terms
        :math:`\tilde U^{(i)}_j\,\mathrm{app}_j` (carried terms first, so their core products are memoised
        before the new application's argument needs them)."""
        t = self.table
        lin = self.vec(t.ref(A_name(i)) * INPUT)
        bias = self.vec(t.ref(c_name(i)))
        terms = [self.vec(sympy.Symbol(U_name(j, i), commutative=False) * self.ext.application(j))
                 for j in self.ext.nonlinear if j <= i]
        keep = {t.ref(A_name(i)) * INPUT, t.ref(c_name(i))}
        keep.update(sympy.Symbol(U_name(j, i), commutative=False) * self.ext.application(j)
                    for j in self.ext.nonlinear if j <= i)
        self.memo = {k: v for k, v in self.memo.items() if k in keep}
        self.core_memo.clear()
        return lin, bias, terms

    # ---- interpreter ---------------------------------------------------------------------------------
    def vec(self, e: sympy.Expr) -> np.ndarray:
        hit = self.memo.get(e)
        if hit is not None:
            return hit
        if e.is_Number:
            if e != 0:
                raise InvalidValueError(f"a bare number {e} is not a vector")
            value = zeros_like_backend(self.vecs[INPUT], self.vecs[INPUT].shape[0])
        elif e.is_Add:
            value = self._sum(e.args)
        elif e.is_Mul:
            scale, head, rest = _mul_parts(e)
            value = self._apply(head, rest)
            if scale is not None:
                value = scale * value
        elif is_application(e):
            value = self._application(e)
        elif e in self.vecs:
            value = self.vecs[e]
        elif e.name in self._names:
            value = self.vec(self.table.definition(e.name))
        else:
            raise InvalidValueError(f"cannot evaluate {e} as a vector (unbound symbol?)")
        self.memo[e] = value
        return value

    def _sum(self, args) -> np.ndarray:
        groups: dict[sympy.Symbol, list] = {}
        out = None
        for head, rest, t in _sum_parts(tuple(args)):
            if head is not None and head in self.ops:
                groups.setdefault(head, []).append(rest)
                continue
            v = self.vec(t)
            out = v if out is None else out + v
        for op_sym, keys in groups.items():
            op = self.ops[op_sym]
            v = self._core(op.core, keys[0])
            for k in keys[1:]:
                v = v + self._core(op.core, k)
            v = v if op.outer is None else self._outer(op_sym, op, v)
            out = v if out is None else out + v
        return out

    def _count(self, what: str, n: int = 1) -> None:
        self.applications[what] = self.applications.get(what, 0) + n

    def _outer(self, sym: sympy.Symbol, op: BoxOperator, v: np.ndarray) -> np.ndarray:
        self._count("W'_{·," + sym.name.split(",")[-1])
        return op.outer._matvec(v)

    def _core(self, core: Optional[LinearOperator], key: sympy.Expr) -> np.ndarray:
        if core is None:
            return self.vec(key)
        mk = (id(core), key)
        hit = self.core_memo.get(mk)
        if hit is not None:
            return hit
        if isinstance(key, sympy.Symbol) and key.name in self._names and key not in self.memo:
            d = self.table.definition(key.name)  # linearity: P(sum of terms) = sum of P(term)
            parts = [self._core(core, k) for k in sympy.Add.make_args(d)]
            value = parts[0]
            for q in parts[1:]:
                value = value + q
        else:
            value = core._matvec(self.vec(key))
            self._count("core")
        self.core_memo[mk] = value
        return value

    def _apply(self, head: sympy.Expr, rest: sympy.Expr) -> np.ndarray:
        if head in self.ops:
            op = self.ops[head]
            v = self._core(op.core, rest)
            return v if op.outer is None else self._outer(head, op, v)
        if isinstance(head, sympy.Symbol) and head.name in self._names:
            d = self.table.definition(head.name)
            if d.is_Number:
                return float(d) * self.vec(rest)
            return self.vec(_expand_product(d, rest))
        raise InvalidValueError(f"cannot apply {head}: not a bound operator or table name")

    def _application(self, e: sympy.Expr) -> np.ndarray:
        j = self._apps.get(e)
        if j is None:
            raise InvalidValueError(f"{e} is not an application of this table")
        cache = _ARGS.setdefault(id(self.table), (self.table, {}))[1]
        exprs = cache.get(e)
        if exprs is None:  # unfold V~_j, beta~_j (P~_j, gamma~_j) one level so _sum can group by operator
            unfold = {s: self.table.definition(s.name) for s in e.free_symbols if s.name in self._names}
            exprs = cache[e] = tuple(sympy.expand_mul(a.xreplace(unfold), deep=False) for a in e.args)
        act = self.activation[j]
        # the arguments (NF numbers each) are used once: dropped from the memo as soon as they are read, and the
        # product is taken in place, so at most the argument, the activation and one temporary are held at a time
        a = self.vec(exprs[0])
        self.memo.pop(exprs[0], None)
        g = act(a)
        del a
        if len(exprs) == 1:
            return g
        b = self.vec(exprs[1])
        self.memo.pop(exprs[1], None)
        if not isinstance(g, np.ndarray) or np.may_share_memory(g, b) or not g.flags.writeable:
            return g * b  # (another backend: out of place)
        g *= b
        return g
