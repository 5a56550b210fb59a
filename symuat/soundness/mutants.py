r"""Systematic corruptions (mutants) of true statements, to measure what the checker rejects.

Three families of mutants are generated, each a *false-in-general* variant of a
statement that symuat proves:

* **explicit identities** (:class:`~symuat.evidence.identity.Identity`): the
  ``rhs`` builder is wrapped so that the ``k``-th matrix operation it performs
  is corrupted — ``A B \to B A``, ``A B \to A^T B``, ``X^T \to X``,
  ``A + B \to A``, ``A + B \to A + 2B``, ``A + B \to A - B``,
  ``A\otimes B \to B\otimes A``, ``A\otimes B^T \to A\otimes B`` — or the
  finished matrix is (sign flipped, a term of an entry dropped / doubled).
  Sympy's matrix operators are intercepted only *during* the wrapped call;
* **opaque identities** (:class:`~symuat.evidence.opaque.OpaqueIdentity`) and
* **substitution-table rows** (:func:`symuat.expansion.substitution_table`):
  the noncommutative expression tree is rewritten — reverse the matrix factors
  of a product, drop / double / negate one term of a sum, shift a layer index
  (:math:`i\to i\pm1`), swap :math:`\mathbf W'_{j,2}\leftrightarrow\mathbf W'_{j,3}`,
  replace an updated (tilde) value by the original layer parameter.

A mutation that never fires at any dimension (e.g. a swap that needs square
factors) is not generated.  Whether a generated mutant is *equivalent* to the
original is decided by the symbolic level (:mod:`symuat.soundness.kill_rate`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

import sympy
from sympy.matrices.matrixbase import MatrixBase

from ..algebra import matrices as _matrices
from ..evidence.identity import Identity
from ..evidence.opaque import OpaqueIdentity, is_vector_symbol
from ..expansion.table import SubstitutionTable, TableRow
from ..names import layer_weight, structure

__all__ = ["Mutant", "OPERATORS", "identity_mutants", "opaque_mutants", "table_mutants", "mutate_expr",
           "expr_sites"]

#: Mutation operators, as reported (each site kind maps to one of them).
OPERATORS = ("swap-product", "transpose-factor", "drop-transpose", "drop-term", "duplicate-term", "flip-sign",
             "kron-orientation", "shift-index", "swap-W2-W3", "untilde")


@dataclass(frozen=True)
class Mutant:
    """One corrupted statement: where it comes from, which operator, which site, the corrupted claim."""

    source: str
    operator: str
    site: str
    claim: Any
    fires_at_check: bool = True


# --------------------------------------------------------------------------------------------
# explicit matrices: intercept sympy's matrix operators during one rhs build
# --------------------------------------------------------------------------------------------

#: (site kind, variant) -> operator name
_EXPLICIT_VARIANTS: tuple[tuple[str, str, str], ...] = (
    ("product", "swap", "swap-product"),
    ("product", "transpose-left", "transpose-factor"),
    ("product", "transpose-right", "transpose-factor"),
    ("transpose", "drop", "drop-transpose"),
    ("sum", "drop-left", "drop-term"),
    ("sum", "drop-right", "drop-term"),
    ("sum", "duplicate", "duplicate-term"),
    ("sum", "flip", "flip-sign"),
    ("kron", "swap", "kron-orientation"),
    ("kron", "transpose-left", "kron-orientation"),
    ("kron", "transpose-right", "kron-orientation"),
)


def _square(m) -> bool:
    return m.shape[0] == m.shape[1] and m.shape[0] > 1


def _applicable(kind: str, variant: str, args: tuple) -> bool:
    if kind == "product":
        a, b = args
        return {"swap": a.shape == b.shape and _square(a), "transpose-left": _square(a),
                "transpose-right": _square(b)}[variant]
    if kind == "transpose":
        return _square(args[0])
    if kind == "kron":
        a, b = args
        return {"swap": a.shape != (1, 1) and b.shape != (1, 1), "transpose-left": _square(a),
                "transpose-right": _square(b)}[variant]
    return True


class _Recorder:
    """Counts the matrix operations of one build and corrupts the target one."""

    def __init__(self, target: tuple[str, int, str] | None = None):
        self.target = target
        self.calls: dict[str, list[tuple]] = {}
        self.fired = False

    def hit(self, kind: str, args: tuple, original: Callable, sign: int = 1):
        k = len(self.calls.setdefault(kind, []))
        self.calls[kind].append(args)
        if self.target is None or self.target[:2] != (kind, k) or not _applicable(kind, self.target[2], args):
            return original(*args)
        self.fired = True
        return _corrupt(kind, self.target[2], args, original, sign)


def _corrupt(kind: str, variant: str, args: tuple, original: Callable, sign: int):
    T = _ORIGINAL["transpose"]
    if kind in ("product", "kron"):
        a, b = args
        return {"swap": lambda: original(b, a), "transpose-left": lambda: original(T(a), b),
                "transpose-right": lambda: original(a, T(b))}[variant]()
    if kind == "transpose":
        return args[0]
    a, b = args  # sum: a + sign*b
    add = _ORIGINAL["__add__"]
    neg = _ORIGINAL["__neg__"]
    signed = b if sign > 0 else neg(b)
    return {"drop-left": lambda: signed, "drop-right": lambda: a,
            "duplicate": lambda: add(a, add(signed, signed)), "flip": lambda: add(a, neg(signed))}[variant]()


_ORIGINAL = {name: MatrixBase.__dict__[name] for name in ("__mul__", "__matmul__", "__add__", "__sub__",
                                                           "__neg__", "transpose")}
_KRON = _matrices.kron


#: The last scan for :func:`_kron_holders`: the module count it saw and the (name, module) pairs it found.
_HOLDERS: tuple[int, list[tuple[str, ModuleType]]] = (-1, [])


def _kron_holders() -> list[ModuleType]:
    """Modules of symuat and of the derivations that imported ``kron`` by name.

    Scanning ``sys.modules`` (thousands of entries once torch is loaded) on every build
    is slow, so the scan is kept while the module count is unchanged and every module
    found is still the one registered under its name.
    """
    global _HOLDERS
    count, found = _HOLDERS
    if count != len(sys.modules) or any(sys.modules.get(name) is not m for name, m in found):
        found = [(name, m) for name, m in list(sys.modules.items())
                 if name.partition(".")[0] in ("symuat", "symuat_paper", "symuat_user_derivations")
                 and getattr(m, "kron", None) is _KRON]
        _HOLDERS = (len(sys.modules), found)
    return [m for _, m in found]


@contextmanager
def _intercept(rec: _Recorder) -> Iterator[None]:
    """Route sympy's top-level matrix ``*``, ``@``, ``+``, ``-``, ``.T`` and symuat's ``kron`` through ``rec``."""
    depth = [0]

    def guarded(kind, original, sign=1):
        def call(*args):
            if depth[0] or not all(isinstance(a, MatrixBase) for a in args):
                return original(*args)
            depth[0] += 1
            try:
                return rec.hit(kind, args, original, sign)
            finally:
                depth[0] -= 1
        return call

    def sub(a, b):
        if depth[0] or not isinstance(b, MatrixBase):
            return _ORIGINAL["__sub__"](a, b)
        depth[0] += 1
        try:
            return rec.hit("sum", (a, b), lambda x, y: _ORIGINAL["__add__"](x, _ORIGINAL["__neg__"](y)), -1)
        finally:
            depth[0] -= 1

    patches = {"__mul__": guarded("product", _ORIGINAL["__mul__"]),
               "__matmul__": guarded("product", _ORIGINAL["__mul__"]),
               "__add__": guarded("sum", _ORIGINAL["__add__"]), "__sub__": sub,
               "transpose": guarded("transpose", _ORIGINAL["transpose"])}
    kron = guarded("kron", _KRON)
    holders = _kron_holders()
    try:
        for name, f in patches.items():
            setattr(MatrixBase, name, f)
        for m in holders:
            m.kron = kron
        yield
    finally:
        for name in patches:
            setattr(MatrixBase, name, _ORIGINAL[name])
        for m in holders:
            m.kron = _KRON


def _record(identity: Identity, dims) -> dict[str, list[tuple]]:
    env = identity.environment(dims)
    rec = _Recorder()
    with _intercept(rec):
        identity.rhs(env, dims)
    return rec.calls


def _site_mutant_rhs(rhs, target):
    def mutated(env, dims):
        rec = _Recorder(target)
        with _intercept(rec):
            return rhs(env, dims)
    return mutated


def _first_add(m: sympy.MatrixBase) -> int | None:
    return next((i for i in range(len(m)) if m[i].is_Add), None)


def _result_mutant_rhs(rhs, variant: str):
    def mutated(env, dims):
        m = rhs(env, dims)
        m = sympy.ImmutableMatrix(m) if isinstance(m, sympy.MatrixBase) else sympy.ImmutableMatrix([[m]])
        if variant == "negate":
            return -m
        i = _first_add(m)
        if i is None:
            return m
        term = m[i].args[0]
        flat = list(m)
        flat[i] = m[i] - term if variant == "drop" else m[i] + term
        return sympy.ImmutableMatrix(m.shape[0], m.shape[1], flat)
    return mutated


_RESULT_VARIANTS = (("negate", "flip-sign"), ("drop", "drop-term"), ("duplicate", "duplicate-term"))


def identity_mutants(source: str, identity: Identity) -> tuple[Mutant, ...]:
    """Every site mutant of an explicit :class:`Identity` that fires at some dimension tuple."""
    grid = list(identity.dims) + [identity.check_dims]
    calls = [_record(identity, d) for d in grid]
    out = []
    for kind, variant, operator in _EXPLICIT_VARIANTS:
        n = max(len(c.get(kind, ())) for c in calls)
        for k in range(n):
            fires = [k < len(c.get(kind, ())) and _applicable(kind, variant, c[kind][k]) for c in calls]
            if any(fires):
                claim = replace(identity, rhs=_site_mutant_rhs(identity.rhs, (kind, k, variant)))
                out.append(Mutant(source, operator, f"{kind}#{k}:{variant}", claim, fires[-1]))
    for variant, operator in _RESULT_VARIANTS:
        out.append(Mutant(source, operator, f"result:{variant}", replace(identity, rhs=_result_mutant_rhs(
            identity.rhs, variant))))
    return tuple(out)


# --------------------------------------------------------------------------------------------
# noncommutative expressions: rewrite the tree
# --------------------------------------------------------------------------------------------

def _matrix_prefix(mul: sympy.Expr) -> list[sympy.Expr]:
    nc = [a for a in mul.args if not a.is_commutative]
    prefix = []
    for a in nc:
        base = a.args[0] if a.is_Pow else a
        if not (base.is_Symbol and not is_vector_symbol(base)):
            break
        prefix.append(a)
    return prefix


def _reverse_matrices(mul: sympy.Expr) -> sympy.Expr:
    comm = [a for a in mul.args if a.is_commutative]
    nc = [a for a in mul.args if not a.is_commutative]
    p = len(_matrix_prefix(mul))
    return sympy.Mul(*comm) * sympy.Mul(*(nc[:p][::-1] + nc[p:]))


def _walk(expr: sympy.Expr, visit: Callable[[sympy.Expr], sympy.Expr | None]) -> sympy.Expr:
    new = visit(expr)
    if new is not None:
        return new
    if not expr.args or expr.is_Symbol:
        return expr
    args = tuple(_walk(a, visit) for a in expr.args)
    return expr if args == expr.args else expr.func(*args)


def _node_ops(expr: sympy.Expr, k: int | None) -> tuple[Callable, dict[str, int], dict]:
    """A visitor for :func:`_walk` applying the ``k``-th node-level site (``None``: only count sites)."""
    counts = {"swap-product": 0, "term": 0}
    out_op = {}

    def visit(e):
        if e.is_Mul and len(_matrix_prefix(e)) >= 2 and len(set(_matrix_prefix(e))) >= 2:
            if k is not None and out_op.get("target") == ("swap-product", counts["swap-product"]):
                counts["swap-product"] += 1
                return _reverse_matrices(e)
            counts["swap-product"] += 1
        if e.is_Add:
            target = out_op.get("target")
            for j, term in enumerate(e.args):
                if k is not None and target is not None and target[0] in ("drop-term", "duplicate-term",
                                                                           "flip-sign") \
                        and target[1] == counts["term"]:
                    counts["term"] += 1
                    rest = e.args[:j] + e.args[j + 1:]
                    new_term = {"drop-term": sympy.S.Zero, "duplicate-term": 2 * term,
                                "flip-sign": -term}[target[0]]
                    return sympy.Add(*rest, new_term)
                counts["term"] += 1
        return None

    return visit, counts, out_op


def _symbol_sites(expr: sympy.Expr) -> dict[str, list]:
    symbols = sorted((s for s in expr.free_symbols if not s.is_commutative), key=lambda s: s.name)
    named = [(s, structure(s)) for s in symbols]
    shift = [(s, d) for s, n in named for d in (1, -1) if n is not None and n.shifted(d) is not None]
    w23 = sorted({str(n.layer) for _, n in named if n is not None and n.head == "W" and n.decoration == "'"
                  and n.index in (2, 3) and isinstance(n.layer, int)}, key=int)
    tilde = [s for s, n in named if n is not None and n.decoration == "tilde"]
    return {"shift-index": shift, "swap-W2-W3": w23, "untilde": tilde}


def _untilde(symbol: sympy.Symbol) -> sympy.Symbol:
    """The layer parameter an updated (tilde) value replaces (seed 001 Fig. 2, "dashed boxes")."""
    found = structure(symbol)
    original = found.original() if found is not None else None
    return symbol if original is None else original.symbol


def _symbol_map(operator: str, site) -> dict:
    if operator == "shift-index":
        s, d = site
        return {s: structure(s).shifted(d).symbol}
    if operator == "swap-W2-W3":
        a, b = layer_weight(site, 2).symbol, layer_weight(site, 3).symbol
        return {a: b, b: a}
    return {site: _untilde(site)}


def expr_sites(expr: sympy.Expr) -> dict[str, list]:
    """The mutation sites of a noncommutative expression, per operator.

    >>> from symuat.expansion import layer_symbols, INPUT
    >>> s = layer_symbols(1)
    >>> sites = expr_sites(s.W1 * s.W2 * INPUT + s.b3)
    >>> len(sites["swap-product"]), len(sites["drop-term"]), sites["swap-W2-W3"]
    (1, 2, ['1'])
    """
    expr = sympy.sympify(expr)
    visit, counts, _ = _node_ops(expr, None)
    _walk(expr, visit)
    out = {"swap-product": list(range(counts["swap-product"]))}
    for op in ("drop-term", "duplicate-term", "flip-sign"):
        out[op] = list(range(counts["term"]))
    out.update(_symbol_sites(expr))
    return out


def mutate_expr(expr: sympy.Expr, operator: str, site) -> sympy.Expr:
    """Apply one mutation ``operator`` at ``site`` (an index or a symbol site from :func:`expr_sites`)."""
    expr = sympy.sympify(expr)
    if operator in ("shift-index", "swap-W2-W3", "untilde"):
        return expr.xreplace(_symbol_map(operator, site))
    visit, _, target = _node_ops(expr, site)
    target["target"] = (operator, site)
    return _walk(expr, visit)


def _site_label(operator: str, site) -> str:
    if operator == "shift-index":
        return f"{site[0].name}{'+' if site[1] > 0 else '-'}1"
    if operator == "untilde":
        return site.name
    return f"#{site}" if operator != "swap-W2-W3" else f"j={site}"


def opaque_mutants(source: str, identity: OpaqueIdentity) -> tuple[Mutant, ...]:
    """Every tree mutant of an :class:`OpaqueIdentity`'s right-hand side (sites taken over all cases)."""
    per_case = {case: expr_sites(identity.rhs(case)) for case in identity.cases}
    check = identity.numeric_case
    if check not in per_case:
        per_case[check] = expr_sites(identity.rhs(check))
    out = []
    for operator in OPERATORS:
        sites: list = []
        for s in per_case.values():
            sites.extend(x for x in s.get(operator, ()) if x not in sites)
        for site in sites:
            def rhs(case, _op=operator, _site=site, _rhs=identity.rhs):
                return mutate_expr(_rhs(case), _op, _site)
            fires = site in per_case[check].get(operator, ())
            out.append(Mutant(source, operator, _site_label(operator, site), replace(identity, rhs=rhs), fires))
    return tuple(out)


def table_mutants(table: SubstitutionTable) -> tuple[Mutant, ...]:
    """Every single-row mutant of a substitution table (box 0 excluded), plus whole-row 'untilde' mutants."""
    out = []
    for row in table.rows:
        if row.layer == 0:
            continue
        for operator, sites in expr_sites(row.definition).items():
            for site in sites:
                new = mutate_expr(row.definition, operator, site)
                out.append(Mutant(row.name, operator, _site_label(operator, site), _with_row(table, row, new)))
        original = _untilde(sympy.Symbol(row.name, commutative=False))
        if original.name != row.name and not row.name.startswith("R_"):
            out.append(Mutant(row.name, "untilde", f"row := {original.name}", _with_row(table, row, original)))
    return tuple(out)


def _with_row(table: SubstitutionTable, row: TableRow, definition: sympy.Expr) -> SubstitutionTable:
    rows = tuple(replace(r, definition=definition) if r.name == row.name else r for r in table.rows)
    return SubstitutionTable(table.depth, rows)
