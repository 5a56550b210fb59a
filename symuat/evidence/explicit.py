r"""Both sides of an explicit :class:`~symuat.evidence.identity.Identity` at one dimension tuple: the claim
protocol's instance (:mod:`symuat.evidence.protocol`), with the symbolic level's canonical forms and witnesses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import sympy

from .canonical import reduces_to_zero
from .expand import expand_shared
from .fields import (
    PrimeField,
    RationalField,
    RealField,
    evaluate,
    is_polynomial,
    magnitude,
    sigma_arguments,
    structural_degree,
)
from .interval import enclose, interval_text
from .protocol import LazyData, SymbolicFailure
from .witness import Witness, certify_prime, certify_rational, find_witness
from .witness import point_text as _point

__all__ = ["ExplicitInstance", "entries_of"]

Dims = Mapping[str, int]
Env = Mapping[str, sympy.ImmutableMatrix]


def entries_of(value) -> tuple:
    """The symbols of a variable, row-major (a scalar is its own only entry)."""
    return (value,) if isinstance(value, sympy.Symbol) else tuple(value)



def _fmt_dims(d: Dims) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items())



@dataclass(frozen=True)
class ExplicitInstance:
    """Both sides of an :class:`Identity` at one dimension tuple (the claim protocol's instance)."""

    claim: Any  # the Identity (symuat.evidence.identity imports this module)
    dims: Dims
    env: Env
    lhs: sympy.ImmutableMatrix
    rhs: sympy.ImmutableMatrix

    @property
    def point(self) -> dict[str, Any]:
        return {"dims": dict(self.dims)}

    @property
    def where(self) -> str:
        return _fmt_dims(self.dims)

    @property
    def ncols(self) -> int:
        return self.lhs.shape[1]

    @cached_property
    def proof_methods(self) -> list[str]:
        """The canonical forms beyond expansion that the symbolic level needed (filled by it)."""
        return []

    def symbolic_failure(self) -> SymbolicFailure | None:
        r"""``None`` when every entry of ``lhs - rhs`` expands, or reduces in a canonical form
        (:mod:`~symuat.evidence.canonical`), to 0; else the first entry with a checked witness, or, without one,
        an undecided failure naming the first entry that did not reduce."""
        memo: dict = {}  # entries share sub-expressions: expand each once
        undecided = None
        for idx in range(len(self.lhs)):
            diff = expand_shared(self.lhs[idx] - self.rhs[idx], memo)
            if diff == 0:
                continue
            lhs, rhs = self.lhs[idx], self.rhs[idx]
            witness, searched = find_witness(lhs, rhs, self._draw)
            if witness is None:
                method = reduces_to_zero(lhs - rhs, self._order_substitution)
                if method is not None:
                    if method not in self.proof_methods and method != "expansion":
                        self.proof_methods.append(method)
                    continue
            r, c = divmod(idx, self.ncols)
            if witness is not None:
                return SymbolicFailure(f"entry ({r + 1},{c + 1}) differs at {self.where}", LazyData(
                    lambda: {"lhs": sympy.latex(lhs), "rhs": sympy.latex(rhs), "difference": sympy.latex(diff)},
                    eager={"entry": [r + 1, c + 1]}), witness=witness)
            if undecided is None:
                undecided = SymbolicFailure(
                    f"undecided: entry ({r + 1},{c + 1}) at {self.where}: lhs - rhs reduces to 0 in none of the "
                    f"canonical forms (common denominator, exp/log, case split) and no witness was found "
                    f"({searched})", {"entry": [r + 1, c + 1]}, undecided=True)
        return undecided

    def _draw(self, fld, trial: int) -> dict:
        """A random point inside the hypotheses, for the symbolic level's witness search (fixed seeds)."""
        return self.bind(fld, np.random.default_rng([11, trial]))

    @cached_property
    def _order_substitution(self) -> dict:
        return self.claim.hypotheses.substitution({n: entries_of(v) for n, v in self.env.items()})

    @cached_property
    def _degree(self) -> tuple[int, int]:
        memo: dict = {}
        sides = (self.lhs, self.rhs)
        degree = max(structural_degree(m[i], memo) for m in sides for i in range(len(m)))
        n_sigma = len(sigma_arguments(m[i] for m in sides for i in range(len(m))))
        return degree, n_sigma

    @property
    def degree_note(self) -> str:
        return f"degree <= {self._degree[0]}"

    def survival_per_trial(self, p: int) -> float:
        degree, n_sigma = self._degree
        # sigma collisions: each pair of distinct arguments agrees with probability <= degree/p.
        return (degree + n_sigma * n_sigma * max(degree, 1)) / p

    def bind(self, fld, rng) -> dict[sympy.Symbol, Any]:
        """A random value of ``fld`` per input symbol, moved inside the claim's hypotheses (not in F_p, which
        has no order)."""
        entries = {name: entries_of(self.env[name]) for name in sorted(self.env)}
        values = {s: fld.random(rng) for name in entries for s in entries[name]}
        kind = {RealField: "real", RationalField: "rational"}.get(type(fld))
        return values if kind is None else self.claim.hypotheses.apply(values, entries, kind)

    def recheck_prime(self, idx: int, values, fld: PrimeField):
        """Entry ``idx`` re-checked by SymPy's exact integers at the F_p point: the witness, or ``None``."""
        return certify_prime(self.lhs[idx], self.rhs[idx], values, fld)

    def recheck_rational(self, idx: int, values, fld: RationalField):
        """Entry ``idx`` re-checked by SymPy's exact rationals: the witness, or ``None``."""
        return certify_rational(self.lhs[idx], self.rhs[idx], values, fld)

    def real_witness(self, idx: int, lhs, rhs, values, prec: int) -> Witness:
        """The witness of disjoint enclosures ``lhs``, ``rhs`` of entry ``idx``."""
        return Witness("R (float64 inputs, exact)", _point(values, (self.lhs[idx], self.rhs[idx])),
                       interval_text(lhs), interval_text(rhs),
                       f"disjoint enclosures, mpmath interval arithmetic at {prec} bits")

    def enclosures(self, values, prec: int) -> tuple[list, list]:
        """mpmath interval enclosures of every entry of both sides at ``values`` (:mod:`.interval`)."""
        return ([enclose(self.lhs[i], values, prec) for i in range(len(self.lhs))],
                [enclose(self.rhs[i], values, prec) for i in range(len(self.rhs))])

    def side(self, name: str, values, fld, memo: dict) -> np.ndarray:
        m = self.lhs if name == "lhs" else self.rhs
        return np.array([evaluate(m[i], values, fld, memo) for i in range(len(m))], dtype=object)

    def reference(self, values) -> np.ndarray | None:
        if self.claim.reference is None:
            return None
        arrays = {n: float(values[m]) if isinstance(m, sympy.Symbol) else
                  np.array([[values[m[i, j]] for j in range(m.shape[1])] for i in range(m.shape[0])])
                  for n, m in self.env.items()}
        return np.asarray(self.claim.reference(arrays, self.dims))

    def magnitudes(self, values) -> np.ndarray:
        memo: dict = {}
        mags = np.array([max(magnitude(self.lhs[i], values, memo), magnitude(self.rhs[i], values, memo))
                         for i in range(len(self.lhs))])
        return np.maximum(mags, self._input_scale_floor(values))

    def _input_scale_floor(self, values) -> np.ndarray:
        r"""Per-entry magnitude with every input as large as the largest one, :math:`X=\max|\text{input}|`.

        The reference may form (and cancel) intermediates that the simplified symbolic
        side never shows, e.g. :math:`|a+c|-|a|` with :math:`a = u_1^2+u_2^2`: their size is
        bounded by the expression's magnitude at inputs of size :math:`X`, constants included.
        """
        scale = max((abs(float(v)) for v in values.values()), default=1.0)
        uniform = {s: scale for s in values}
        memo: dict = {}

        def floor(i: int) -> float:
            if not self._polynomial_entries[i]:
                return 0.0  # exp, sqrt, ...: the magnitude bound is not meaningful there
            return max(magnitude(self.lhs[i], uniform, memo), magnitude(self.rhs[i], uniform, memo))

        with np.errstate(over="ignore"):
            return np.array([floor(i) for i in range(len(self.lhs))], dtype=float)

    @cached_property
    def _polynomial_entries(self) -> tuple[bool, ...]:
        memo: dict = {}
        return tuple(is_polynomial(self.lhs[i], memo) and is_polynomial(self.rhs[i], memo)
                     for i in range(len(self.lhs)))

    def input_count(self) -> int:
        return sum(len(entries_of(m)) for m in self.env.values())
