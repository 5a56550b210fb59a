r"""The all-sizes level: decide an explicit :class:`~symuat.evidence.identity.Identity` for every size.

Both builders are re-run on :class:`~symuat.allsizes.tracer.Tracer` matrices whose
sizes are the identity's dimensions as symbols.  Each block of :math:`\mathrm{lhs}-\mathrm{rhs}`
is put in index normal form and canonically labelled (:mod:`symuat.allsizes.terms`):

* equal normal forms — every rewrite holds at every size, so the identity holds for
  **every** value of every dimension;
* different normal forms — once every index range is at least the number of distinct
  indices of its type in a term, distinct canonical terms are independent polynomials,
  so a counterexample exists at or below that bound.  The explicit symbolic level is
  run at sizes upward from 1 and its first failure is the smallest witness.  If none
  is found up to the bound that is a bug of this module, reported as "outside the
  fragment", never as false;
* a builder that does anything the tracer does not model — outside the fragment,
  with the reason; the entry keeps its grid proof.
"""

from __future__ import annotations

import dataclasses
import os
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass

import sympy

from ..errors import SymuatError
from ..evidence.declare import DeclaredShapes, DimensionExpr
from ..evidence.identity import Identity
from ..evidence.levels import Run, register_optional_level, symbolic_level
from ..evidence.verdict import Evidence, Level
from .families import FamilyInput, FamilyShape, first_index
from .index_types import DIFFERENCES, Atom, as_type, cases, parse_size, same
from .masks import mask_bounds
from .outside import OutsideFragment
from .routing import CHOICES
from .rules import tracing
from .splits import SplitRequest, in_domain, partition_bounds, split_dims, witness_bounds
from .terms import canonical_poly, index_counts
from .tracer import SCALAR_SYMBOLS, Tracer

__all__ = ["Decision", "decide", "all_sizes_level", "normal_form", "clear_cache", "inputs", "traced_sides"]


@dataclass(frozen=True)
class Decision:
    """The all-sizes outcome: ``evidence`` when inside the fragment, else ``reason`` (why it is outside)."""

    evidence: Evidence | None
    reason: str = ""
    seconds: float = 0.0

    @property
    def inside(self) -> bool:
        return self.evidence is not None


_CACHE: dict[int, tuple[Identity, Decision]] = {}


def clear_cache() -> None:
    """Forget every cached decision."""
    _CACHE.clear()


def _symbolic_dims(identity: Identity) -> dict[str, Atom]:
    return {k: Atom(k) for k in identity.dims[0]}


def _shapes(identity: Identity, dims) -> dict:
    """Each variable's (row, column) index type: declared shapes are evaluated over the symbolic sizes."""
    shapes = identity.shapes
    if isinstance(shapes, DeclaredShapes):
        declared = {name: tuple(DimensionExpr.parse(x, tuple(dims)).value(dims) for x in shape)
                    for name, shape in shapes.declared.items()}
    elif isinstance(shapes, Mapping):
        declared = {name: tuple(parse_size(x, dims) if isinstance(x, str) else x for x in shape)
                    for name, shape in shapes.items()}
    else:
        declared = shapes(dims)
    return {name: shape if isinstance(shape, FamilyShape) or shape == () else (as_type(shape[0]), as_type(shape[1]))
            for name, shape in declared.items()}


def inputs(identity: Identity, dims) -> dict:
    """The traced environment: a :class:`Tracer` per declared matrix, a :class:`FamilyInput` per declared family."""
    shapes = _shapes(identity, dims)
    hyp = identity.hypotheses
    env = {name: FamilyInput(name, s) if isinstance(s, FamilyShape) else
           sympy.Symbol(name, **(hyp.flags(name) if hyp.concerns(name) else {"finite": True})) if s == () else
           Tracer.input(name, *s) for name, s in shapes.items()}  # a scalar variable is a symbol, as in Identity
    for name, s in shapes.items():  # the first member under its concrete name: the member at the constant index 0
        if isinstance(s, FamilyShape) and f"{name}1" not in env:
            env[f"{name}1"] = env[name].member(first_index(s.n))
    return env


class _LayoutMismatch(OutsideFragment):
    """The sides have different index types: a witness may be a size where their shapes differ."""


def _where(exc: Exception) -> str:
    """`` at <file>:<line>``: the innermost frame of the builder's code that left the fragment."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if "/symuat/allsizes/" not in f.filename and "/sympy/" not in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    parts = os.path.realpath(f.filename).replace("\\", "/").split("/")  # a linked folder: the file itself
    short = "/".join(parts[-2:])
    return f" (at {short}:{f.lineno})"


def _run(side, env, dims, raw: bool = False):
    """One builder on the traced environment; any failure is :class:`OutsideFragment` with where it happened
    (``raw``: the value as the builder returns it)."""
    try:
        with tracing():
            value = side(env, dims)  # Identity turns keyword builders into (env, dims) callables
    except SplitRequest:
        raise
    except OutsideFragment as exc:
        raise OutsideFragment(f"{exc}{_where(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - any failure of a traced builder means: not modelled
        raise OutsideFragment(f"the builder does not run on symbolic sizes ({type(exc).__name__}: {exc})"
                              f"{_where(exc)}") from None
    if raw:
        return value
    if isinstance(value, sympy.MatrixBase) and value.rows and value.cols:
        return Tracer.constant(value)  # entries that are numbers or sizes, e.g. [[rows of W ◇ x]]
    if isinstance(value, sympy.Expr) and not isinstance(value, sympy.MatrixExpr):
        return Tracer.constant(sympy.ImmutableMatrix([[value]]))  # a scalar side is a 1 x 1 side, as in Identity
    if not isinstance(value, Tracer):
        raise OutsideFragment(f"a side is a {type(value).__name__}, not a traced matrix")
    return value


def traced_sides(identity: Identity) -> tuple[Tracer, Tracer, dict, dict]:
    r"""Both sides traced: ``(lhs, rhs, symbolic dims, split dimensions)``.

    A dimension a builder splits with :func:`~symuat.algebra.splits.halves` or ``but_last`` is
    traced as its parts (:mod:`symuat.allsizes.splits`; the last value maps it to the kind);
    every other dimension is an atom.
    """
    split: dict = {}
    while True:
        dims = split_dims(_symbolic_dims(identity), split)
        DIFFERENCES.clear()
        CHOICES.clear()
        try:
            env = _run(lambda _e, d: inputs(identity, d), None, dims, raw=True)  # shapes may split a size too
            SCALAR_SYMBOLS.clear()
            SCALAR_SYMBOLS.update(v for v in env.values() if isinstance(v, sympy.Symbol))
            lhs, rhs = (_run(side, env, dims) for side in (identity.lhs, identity.rhs))
        except SplitRequest as exc:
            asked = {exc.name: exc.kind, **exc.also}
            if any(k in split or k not in dims for k in asked):
                raise OutsideFragment(f"{exc} twice, or it is not a dimension of the identity") from None
            split.update(asked)
            continue
        finally:
            SCALAR_SYMBOLS.clear()
        return lhs, rhs, dims, split


def normal_form(identity: Identity):
    r"""Trace both sides; return ``(per-block canonical forms of lhs - rhs, bounds, row type, col type)``.

    ``bounds`` maps each dimension to the size up to which a witness is searched.
    Raises :class:`~symuat.allsizes.outside.OutsideFragment` when a side leaves the fragment.
    """
    return _normal_form(identity)[:4]


def _normal_form(identity: Identity):
    lhs, rhs, dims, split = traced_sides(identity)
    if not (same(lhs.rows, rhs.rows) and same(lhs.cols, rhs.cols)):
        raise _LayoutMismatch(f"the sides have index types {lhs.shape} and {rhs.shape}")
    diff = lhs - rhs
    forms, bounds, used = {}, {k: 1 for k in dims}, []
    rc, cc = cases(diff.rows), cases(diff.cols)
    for key in diff.keys():
        if key not in diff.blocks:
            continue
        rv, cv, terms = diff.blocks[key]
        try:
            form = canonical_poly(terms, {v: ("f", n) for n, v in enumerate(rv + cv)})
        except KeyError:
            raise OutsideFragment("a family index is used outside the family_sum or family_hstack that "
                                  "introduced it") from None
        if form:
            forms[key] = form
            atoms = rc[key[0]] + cc[key[1]]
            used.extend(terms)
            for t in terms:
                for a, n in index_counts(t, atoms).items():
                    bounds[a] = max(bounds.get(a, 1), n)
                for a, b in _coefficient_sizes(t).items():
                    bounds[a] = max(bounds.get(a, 1), b)
    bounds = mask_bounds(used, partition_bounds(used, witness_bounds(bounds, split)))
    for n, e, k, c in CHOICES.values():  # a choice is arbitrary in the normal form, one fixed pattern per size:
        bounds[e] = max(bounds.get(e, 1), bounds.get(k, 1) + 1)  # an expert some token skips,
        bounds[n] = max(bounds.get(n, 1), 2)  # two tokens, and the second pattern of the choice
        if c is not None:
            bounds[c] = max(bounds.get(c, 1), 2)
    for d in DIFFERENCES:  # N - r counts tokens: r reaches its bound only where N does too
        bounds[d.minuend] = max(bounds.get(d.minuend, 1), bounds.get(d.subtrahend, 1))
    return forms, bounds, diff.rows, diff.cols, split


def _coefficient_sizes(term) -> dict:
    r"""Witness bound of each size in the (scalar) coefficients of ``term`` and its σ arguments.

    A nonzero polynomial of degree :math:`d` in a size is nonzero somewhere in :math:`1,\dots,d+1`; any other
    scalar (such as :math:`1/\sqrt{hm}`) gets 2.
    """
    out: dict = {}
    c = term[0]
    for s in getattr(c, "free_symbols", ()):
        d = sympy.degree(c, s) if c.is_polynomial(s) else 1
        out[s.name] = max(out.get(s.name, 2), int(d) + 1)
    for f in term[1]:
        if f[0] == "s":
            for inner in f[2]:
                for k, v in _coefficient_sizes(inner).items():
                    out[k] = max(out.get(k, 2), v)
    return out


def _scalar_names(identity: Identity) -> set:
    """The names of the identity's scalar variables (shape ``()``), which are no sizes."""
    try:
        return {n for n, s in identity.shapes(identity.dims[0]).items() if s == ()}
    except Exception:  # noqa: BLE001 - shapes are user code; no scalars known
        return set()


def _split_note(split) -> str:
    if not split:
        return ""
    parts = "; ".join(_SPLIT_NOTES[_kind(split[k])].format(k=k, r=split[k].split(" ")[-1]) for k in sorted(split))
    if any(split[k] in ("halves", "last") for k in split):
        return f" ({parts}: the parts traced as independent sizes, each possibly 0)"
    zero = [f"{k}-{split[k].split(' ')[-1]}" for k in sorted(split) if _kind(split[k]) == "beyond"]
    return f" ({parts}: the parts traced as independent sizes{', ' if zero else ''}{', '.join(zero)}" \
           f"{' possibly 0' if zero else ''})"


def _kind(kind: str) -> str:
    """The kind of a split without its dimension (``"beyond r"`` -> ``"beyond"``, ``"per G"`` -> ``"per"``)."""
    return kind.split(" ")[0] if kind.startswith(("beyond ", "per ")) else kind


#: How each kind of split is written in a verdict ("beyond r": a head width d as r followed by d - r).
_SPLIT_NOTES = {"halves": "{k} as ⌈{k}/2⌉ + ⌊{k}/2⌋", "last": "{k} as ({k}-1) + 1",
                "pairs": "{k} even, as {k}/2 + {k}/2 (planes (i, i + {k}/2))",
                "adjacent pairs": "{k} even, as {k}/2 pairs (planes (2i, 2i + 1))",
                "beyond": "{k} >= {r}, as {r} + ({k}-{r})",
                "per": "{k} as {r}·({k}/{r}), {r} dividing {k} (head g·({k}/{r}) + q reads group g)"}


def _difference_note() -> str:
    """Where a builder counted ``N - r`` (padded tokens): the identity is stated where that count is >= 0."""
    if not DIFFERENCES:
        return ""
    return " with " + ", ".join(f"{d.subtrahend} <= {d.minuend}" for d in sorted(DIFFERENCES, key=repr)) + \
        " (the builders' domain)"


def _choice_note() -> str:
    """Where a builder routed by a fixed top-k choice: the statement is proved for every choice."""
    if not CHOICES:
        return ""
    return (" and every top-k choice (" + ", ".join(sorted(CHOICES)) + " traced as an arbitrary one-hot choice of one "
            "expert per token and slot)")


def _names(dims) -> str:
    return ", ".join(dims)


#: Size tuples the witness search runs the explicit level at before it gives up (the verdict is then undecided).
MAX_WITNESS_SIZES = 1000


def _by_total_size(bounds: list):
    """Every tuple ``1 <= v_i <= bounds[i]``, ordered by total size then lexicographically (as
    :func:`~symuat.evidence.identity.dims_grid`), generated lazily: a search stops long before a large grid ends.

    >>> list(_by_total_size([2, 2]))
    [(1, 1), (1, 2), (2, 1), (2, 2)]
    """
    def split(total, bs):
        if len(bs) == 1:
            if 1 <= total <= bs[0]:
                yield (total,)
            return
        for first in range(1, min(bs[0], total - len(bs) + 1) + 1):
            if total - first <= sum(bs[1:]):
                yield from ((first,) + rest for rest in split(total - first, bs[1:]))
    for total in range(len(bounds), sum(bounds) + 1):
        yield from split(total, bounds)


def _witness(identity: Identity, bounds: dict, shapes_count: bool = False, split=None):
    """The first failure of the explicit symbolic level at sizes up to ``bounds`` inside the builders' domain
    (:func:`~symuat.allsizes.splits.in_domain`), smallest first."""
    keys = list(identity.dims[0])
    tried = 0
    for values in _by_total_size([bounds.get(k, 1) for k in keys]):
        d = dict(zip(keys, values))
        if split and not in_domain(d, split):
            continue
        tried += 1
        if tried > MAX_WITNESS_SIZES:
            return None
        try:
            at = dataclasses.replace(identity, dims=(d,))
        except SymuatError:  # sizes the builders refuse (an odd rotary width): no point of the statement
            continue
        try:
            ev = symbolic_level(at, Run())
        except Exception:  # noqa: BLE001 - a builder that fails at these sizes (k > E experts): no point, no witness
            continue
        if ev.holds is False and ev.counterexample and ("entry" in ev.counterexample or shapes_count):
            return ev
    return None


def _decide(identity: Identity) -> Decision:
    dims = list(identity.dims[0])
    try:
        forms, bounds, rows, cols, split = _normal_form(identity)
    except _LayoutMismatch as exc:
        beyond = {k: max(d[k] for d in identity.dims) + 1 for k in dims}
        witness = _witness(identity, beyond, shapes_count=True)
        if witness is None:
            return Decision(None, str(exc))
        return Decision(Evidence(Level.ALL_SIZES, False, f"{exc}; smallest witness: {witness.detail}",
                                 witness.counterexample, witness=witness.witness))
    except OutsideFragment as exc:
        return Decision(None, str(exc))
    except Exception as exc:  # noqa: BLE001 - a claim this level cannot model is undecided, never an abort
        return Decision(None, f"outside the fragment ({type(exc).__name__}: {exc})")
    if not forms:
        return Decision(Evidence(Level.ALL_SIZES, True,
                                 f"lhs - rhs has index normal form 0 ({rows} x {cols} blocks, dummies canonically "
                                 f"labelled): equal for every {_names(dims)} >= 1{_difference_note()}{_choice_note()}"
                                 f"{_split_note(split)}"
                                 + (f", assuming {identity.hypotheses.text}" if not identity.hypotheses.empty else "")))
    bounds = {k: v for k, v in bounds.items() if k not in _scalar_names(identity)}
    witness = _witness(identity, bounds, split=split)
    if witness is None:
        return Decision(None, f"normal forms differ but no witness up to {bounds} (or among the first "
                              f"{MAX_WITNESS_SIZES} sizes): the difference may vanish at every "
                              "size (the normal form neither evaluates a sum over an unused index to its size nor uses "
                              "that a partition indicator is 0/1)")
    d = witness.counterexample["dims"]
    where = ", ".join(f"{k}={v}" for k, v in d.items())
    r, c = witness.counterexample["entry"]
    return Decision(Evidence(Level.ALL_SIZES, False,
                             f"normal forms differ; smallest witness: entry ({r},{c}) differs at {where} "
                             f"(confirmed by the symbolic level; searched sizes up to {bounds})",
                             witness.counterexample, witness=witness.witness))


def decide(identity: Identity) -> Decision:
    r"""Decide ``identity`` for every size (cached per identity object).

    >>> from symuat.evidence.identity import Identity
    >>> ident = Identity(shapes=lambda d: {"A": (d["n"], d["n"]), "B": (d["n"], d["n"])},
    ...                  lhs=lambda e, d: (e["A"] * e["B"]).T, rhs=lambda e, d: e["B"].T * e["A"].T,
    ...                  dims=({"n": 1}, {"n": 2}))
    >>> decide(ident).evidence.holds
    True
    """
    hit = _CACHE.get(id(identity))
    if hit is not None and hit[0] is identity:
        return hit[1]
    start = time.perf_counter()
    decision = dataclasses.replace(_decide(identity), seconds=time.perf_counter() - start)
    _CACHE[id(identity)] = (identity, decision)
    return decision



@register_optional_level(Level.ALL_SIZES)
def all_sizes_level(claim, run=None) -> Evidence | None:
    """The level's runner: evidence for an explicit :class:`Identity` inside the fragment, else ``None``."""
    if not isinstance(claim, Identity) or Level.SYMBOLIC not in claim.levels:
        return None
    decision = decide(claim)
    if decision.evidence is not None:
        return decision.evidence
    grid = {k: max(d[k] for d in claim.dims) for k in claim.dims[0]}
    where = ", ".join(f"{k} ≤ {v}" for k, v in grid.items())
    return Evidence(Level.ALL_SIZES, None, f"undecided: {decision.reason}; the other levels cover only the grid "
                                           f"{where}", grid=grid)
