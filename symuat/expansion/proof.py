r"""Symbolic proofs that the substitution table is the DUAT expansion of Eq. 20.

Three checks, all by canonical expansion of noncommutative expressions with
:math:`\sigma` uninterpreted (:func:`~symuat.expansion.collect.canonical_expand`,
i.e. ``sympy.expand(..., deep=True)`` with the ``mul`` hint: products are
distributed over sums everywhere, also inside :math:`\sigma`, and factor
order is kept):

* :func:`induction_proof` -- seed 001, App. B.2 (Eq. 24-27) and B.3
  (Eq. 32-34): base case (depth 1) and the induction step for an *arbitrary*
  depth-:math:`i` DUAT form :math:`A\mathbf x'_0 + c + R`, with the rules read
  off a box of the derived table;
* :func:`verify_depth` -- a *local* check of an explicit depth :math:`L`:
  at every layer, Eq. 20 applied to the named depth-:math:`(i-1)` form equals
  the named depth-:math:`i` form after one-level unfolding of box :math:`i`.
  Cost is polynomial in :math:`L`;
* :func:`verify_depth_naive` -- full expansion of the nested network against
  the fully unfolded table (exponential; for benchmarks and small depths).

Each returns a frozen verdict that can be ``holds=False``; nothing raises on
a failed identity.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..errors import InvalidValueError
from .collect import canonical_expand, split_term
from .residual import nested_form, residual_term
from .symbols import INPUT, check_depth, layer_symbols, nc_symbol, sigma
from .table import (
    A_name,
    R_name,
    SubstitutionTable,
    U_name,
    V_name,
    beta_name,
    c_name,
    substitution_table,
)

__all__ = [
    "IdentityCheck",
    "InductionProof",
    "LayerCheck",
    "DepthVerification",
    "induction_proof",
    "verify_table",
    "verify_depth",
    "verify_depth_naive",
]


_expand = canonical_expand


@dataclass(frozen=True)
class IdentityCheck:
    r"""An identity ``lhs == rhs`` decided by comparing canonical expansions.

    Attributes
    ----------
    name : str
        What is being checked.
    holds : bool
        Whether the expanded sides are identical.
    lhs, rhs : sympy.Expr
        The two expanded sides.
    note : str
        What the check stands for, if the name does not say it.
    difference : sympy.Expr
        The canonical expansion of ``lhs - rhs`` (0 when it holds).
    detail : str
        Human-readable explanation with the difference when it fails (printed when read).
    """

    name: str
    holds: bool
    lhs: sympy.Expr
    rhs: sympy.Expr
    note: str = ""
    difference: sympy.Expr = sympy.S.Zero

    @property
    def detail(self) -> str:
        text = f"{self.name}: {'holds' if self.holds else 'FAILS'}" + (f" ({self.note})" if self.note else "")
        return text if self.holds else f"{text}; lhs - rhs = {self.difference}"


def _identity(name: str, lhs: sympy.Expr, rhs: sympy.Expr, note: str = "") -> IdentityCheck:
    lhs, rhs = _expand(lhs), _expand(rhs)
    diff = sympy.S.Zero if lhs == rhs else canonical_expand(lhs - rhs)
    return IdentityCheck(name, bool(diff == 0), lhs, rhs, note, diff)


@dataclass(frozen=True)
class InductionProof:
    r"""Verdict of the induction proof (seed 001, App. B.2-B.3).

    Attributes
    ----------
    holds : bool
        ``base.holds and step.holds and lemma.holds and rules_ok``.
    detail : str
        Summary, including any rule that is not of the expected shape.
    base : IdentityCheck
        Depth 1: the unfolded table form equals Eq. 20 at :math:`\mathbf x'_0`.
    step : IdentityCheck
        Eq. 20 applied to :math:`A\mathbf x'_0 + c + R` equals the depth-(i+1) form built by the rules.
    lemma : IdentityCheck
        Lemma 1 (Eq. 19), inductive instance: :math:`M(U\sigma(a) + R') = (MU)\sigma(a) + MR'`.
    rule_layer : int
        The table box whose definitions were used as the generic rules.
    """

    holds: bool
    detail: str
    base: IdentityCheck
    step: IdentityCheck
    lemma: IdentityCheck
    rule_layer: int

    @property
    def lhs(self) -> sympy.Expr:
        """Expanded left side of the induction step."""
        return self.step.lhs

    @property
    def rhs(self) -> sympy.Expr:
        """Expanded right side of the induction step."""
        return self.step.rhs


def induction_proof(table: SubstitutionTable | None = None, rule_layer: int = 3) -> InductionProof:
    r"""Prove the DUAT expansion for every depth by induction.

    Base case: :math:`\mathbf x'_1` from the table (unfolded) equals Eq. 20
    applied to :math:`\mathbf x'_0`.  Induction step: for opaque :math:`A_i, c_i`
    and an opaque remainder :math:`R_i = \sum_k U_k\sigma(\cdot)`,

    .. math::
        f_{i+1}(A_i\mathbf x'_0 + c_i + R_i) = \tilde A_{i+1}\mathbf x'_0 + \tilde c_{i+1}
        + M R_i + \tilde U^{(i+1)}_{i+1}\sigma(\tilde V_{i+1}\mathbf x'_0 + \tilde\beta_{i+1}),

    where the right side is built from the definitions in box ``rule_layer``
    of ``table``, re-indexed to a generic layer ``i+1`` (:math:`\tilde A_{r-1}
    \mapsto A_i`, ...), and :math:`M` is the common left factor of the carried
    rules :math:`\tilde U^{(r)}_j = M\tilde U^{(r-1)}_j`.  Lemma 1 (Eq. 19)
    turns :math:`M R_i` into :math:`\sum_k (M U_k)\sigma(\cdot)`.

    Parameters
    ----------
    table : SubstitutionTable, optional
        Defaults to ``substitution_table(rule_layer)``; pass a modified table to
        check its rules instead.
    rule_layer : int
        Box used as the generic rule, ``2 <= rule_layer <= table.depth``.

    Returns
    -------
    InductionProof
    """
    if isinstance(rule_layer, bool) or not isinstance(rule_layer, int) or rule_layer < 2:
        raise InvalidValueError(f"rule_layer must be an integer >= 2, got {rule_layer!r}")
    table = substitution_table(rule_layer) if table is None else table
    if table.depth < rule_layer:
        raise InvalidValueError(f"rule_layer={rule_layer} exceeds table depth {table.depth}")
    r = rule_layer
    x0 = INPUT
    problems: list[str] = []

    base = _identity("base case (depth 1)", table.unfold(table.form(1)), residual_term(1, x0))

    g, s = layer_symbols("i+1"), layer_symbols(r)
    A, c, R = nc_symbol("A_{i}"), nc_symbol("c_{i}"), nc_symbol("R_{i}")
    ren = dict(zip(s.all, g.all))
    ren.update({nc_symbol(A_name(r - 1)): A, nc_symbol(c_name(r - 1)): c, nc_symbol(R_name(r - 1)): R})

    def rule(name: str) -> sympy.Expr:
        return table.definition(name).xreplace(ren)

    multipliers = []
    for j in range(1, r):
        coeff, last = split_term(table.definition(U_name(j, r)))
        if last != nc_symbol(U_name(j, r - 1)):
            problems.append(f"rule {U_name(j, r)} is not a left multiple of {U_name(j, r - 1)}")
        multipliers.append(coeff.xreplace(ren))
    M = multipliers[0]
    if any(m != M for m in multipliers):
        problems.append(f"carried rules use different multipliers {multipliers}")
    expected_R = sum(
        (nc_symbol(U_name(j, r)) * sigma(nc_symbol(V_name(j)) * x0 + nc_symbol(beta_name(j))) for j in range(1, r + 1)),
        sympy.S.Zero,
    )
    if table.definition(R_name(r)) != expected_R:
        problems.append(f"{R_name(r)} is not the sum of its sigma terms")

    lhs = residual_term("i+1", A * x0 + c + R)
    new_sigma = rule(U_name(r, r)) * sigma(rule(V_name(r)) * x0 + rule(beta_name(r)))
    rhs = rule(A_name(r)) * x0 + rule(c_name(r)) + M * R + new_sigma
    step = _identity("induction step (depth i -> i+1)", lhs, rhs, f"rules from box {r}")

    U, Rr, a = nc_symbol("U_{k}"), nc_symbol("R'_{i}"), nc_symbol("a_{k}")
    lemma = _identity("Lemma 1 (Eq. 19)", M * (U * sigma(a) + Rr), (M * U) * sigma(a) + M * Rr)

    holds = base.holds and step.holds and lemma.holds and not problems
    detail = "; ".join([base.detail, step.detail, lemma.detail] + problems)
    return InductionProof(bool(holds), detail, base, step, lemma, r)


@dataclass(frozen=True)
class LayerCheck:
    r"""Local check of box :math:`i` (see :func:`verify_table`).

    Attributes
    ----------
    layer : int
    holds : bool
        ``identity.holds and well_founded``.
    well_founded : bool
        Every definition of the box refers only to layer symbols of layers
        :math:`\le i`, :math:`\mathbf x'_0` and names defined earlier.
    identity : IdentityCheck
        Eq. 20 at the named depth-:math:`(i-1)` form vs. the unfolded depth-:math:`i` form.
    """

    layer: int
    holds: bool
    well_founded: bool
    identity: IdentityCheck


@dataclass(frozen=True)
class DepthVerification:
    """Verdict of :func:`verify_table` / :func:`verify_depth`.

    Attributes
    ----------
    depth : int
    holds : bool
        All layers hold.
    layers : tuple of LayerCheck
    detail : str
    """

    depth: int
    holds: bool
    layers: tuple
    detail: str

    @property
    def failures(self) -> tuple:
        """The layer checks that do not hold."""
        return tuple(lc for lc in self.layers if not lc.holds)


def _check_layer(table: SubstitutionTable, i: int, defined: set) -> LayerCheck:
    allowed = {INPUT}
    for k in range(1, i + 1):
        allowed.update(layer_symbols(k).all)
    well_founded = True
    for row in table.box(i):
        for sym in row.definition.free_symbols:
            if sym not in allowed and sym.name not in defined:
                well_founded = False
        defined.add(row.name)
    lhs = residual_term(i, table.form(i - 1))
    e = nc_symbol(A_name(i)) * INPUT + nc_symbol(c_name(i)) + nc_symbol(R_name(i))
    e = e.xreplace({nc_symbol(R_name(i)): table.definition(R_name(i))})
    e = e.xreplace({row.symbol: row.definition for row in table.box(i) if row.name != R_name(i)})
    e = e.xreplace({nc_symbol(R_name(i - 1)): table.definition(R_name(i - 1))})
    e = e.xreplace({row.symbol: row.definition for row in table.box(0)})
    ident = _identity(f"layer {i}", lhs, e)
    return LayerCheck(i, bool(ident.holds and well_founded), well_founded, ident)


def verify_table(table: SubstitutionTable) -> DepthVerification:
    r"""Check every box of ``table`` locally (polynomial in depth).

    For each layer :math:`i`: substitute the depth-:math:`(i-1)` form in named
    symbols into Eq. 20 and expand; on the other side take
    :math:`\tilde A_i\mathbf x'_0 + \tilde c_i + R_i`, replace :math:`R_i` and
    then every other name of box :math:`i` by its one-level definition, then
    :math:`R_{i-1}` by its definition, and expand.  The sides must agree.
    Names from earlier boxes stay opaque, so no expression grows with depth
    beyond :math:`O(i)` terms.
    """
    defined = {row.name for row in table.box(0)}
    layers = tuple(_check_layer(table, i, defined) for i in range(1, table.depth + 1))
    bad = [lc.layer for lc in layers if not lc.holds]
    holds = not bad
    detail = (f"depth {table.depth}: all {table.depth} layers hold" if holds
              else f"depth {table.depth}: layers {bad} FAIL")
    return DepthVerification(table.depth, holds, layers, detail)


def verify_depth(depth: int, table: SubstitutionTable | None = None) -> DepthVerification:
    """Derive (or take) the depth-``depth`` table and check it with :func:`verify_table`."""
    depth = check_depth(depth)
    table = substitution_table(depth) if table is None else table
    if table.depth != depth:
        raise InvalidValueError(f"table has depth {table.depth}, but depth={depth}")
    return verify_table(table)


def verify_depth_naive(depth: int, table: SubstitutionTable | None = None) -> IdentityCheck:
    r"""Fully expand the nested network and the fully unfolded table form and compare.

    Exponential in ``depth`` (the expanded :math:`\tilde\beta_j` has
    :math:`O(2^j)` terms); meant for :math:`L \lesssim 6` and benchmarks.
    """
    depth = check_depth(depth)
    table = substitution_table(depth) if table is None else table
    return _identity(f"naive depth {depth}", nested_form(depth), table.unfold(table.form()))
