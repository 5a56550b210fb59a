r"""Every-depth proofs for the extended tables (:mod:`symuat.expansion.extended`), as in
:func:`~symuat.expansion.proof.induction_proof`.

For a layer function ``layer(i, x)`` the proof has these cases, each an identity between two expressions
in opaque symbols (to be expanded canonically; the gate stays uninterpreted):

``base``
    :math:`\mathbf x'_1`: the unfolded box-1 form equals ``layer(1, Ã_0 x'_0 + c̃_0)`` (box 0 is
    :math:`I, 0` or the input transform :math:`\mathbf W'_{0,1}, \mathbf b'_{0,3}`);
``step``
    for opaque :math:`A_i, c_i` and an opaque remainder :math:`R_i`, ``layer(i+1, A_i x'_0 + c_i + R_i)``
    equals the depth-:math:`(i+1)` form built from the rules of box ``rule_layer`` re-indexed to the generic
    layer :math:`i+1`: :math:`\tilde A x'_0 + \tilde c + M R_i + \tilde U\,\mathrm{app}(\dots)`, where :math:`M`
    is the common left factor of the carried rules :math:`\tilde U^{(r)}_j = M\tilde U^{(r-1)}_j`;
``final`` (optional)
    the affine final box applied to :math:`A_L x'_0 + c_L + R_L` equals its rules, :math:`M_F R_L` carried;
``lemma``
    Lemma 1 (Eq. 19): :math:`M(U\,\mathrm{app} + R') = (MU)\,\mathrm{app} + MR'`.

Together (induction on the depth) they prove the table for every depth.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..errors import InvalidValueError
from .collect import canonical_expand, split_term
from .extended import ExtendedTable, LayerFn, P_name, application, derive_table, gamma_name, gate
from .symbols import INPUT, nc_symbol, sigma
from .table import A_name, R_name, U_name, V_name, beta_name, c_name

__all__ = ["ExtendedInduction", "extended_induction"]


@dataclass(frozen=True)
class ExtendedInduction:
    r"""The cases of an every-depth proof: ``sides[case] = (lhs, rhs)``; ``problems`` lists rules of the
    wrong shape (a proof with problems does not hold even if every identity does)."""

    sides: dict
    problems: tuple[str, ...]
    rule_layer: int

    @property
    def cases(self) -> tuple[str, ...]:
        return tuple(self.sides)

    def holds(self) -> bool:
        """Decide every case by canonical expansion."""
        if self.problems:
            return False
        return all(canonical_expand(lhs - rhs) == 0 for lhs, rhs in self.sides.values())


def _renaming(layer: LayerFn, r: int | str, generic: str) -> dict:
    """Pair the symbols of ``layer(r, ·)`` with those of ``layer(generic, ·)`` by name."""
    probe = nc_symbol("x_{probe}")
    old = {s.name: s for s in sympy.sympify(layer(r, probe)).free_symbols if s != probe}
    new = {s.name: s for s in sympy.sympify(layer(generic, probe)).free_symbols if s != probe}
    ren = {}
    for name, s in old.items():
        gname = name.replace(f"{{{r},", f"{{{generic},", 1)
        if gname not in new:
            raise InvalidValueError(f"cannot re-index {name} of layer {r} to layer {generic}")
        ren[s] = new[gname]
    return ren


def _carried(table, box: int, old: tuple[int, ...], ren: dict, problems: list) -> sympy.Expr:
    mults = []
    for j in old:
        coeffs = []
        for term in sympy.Add.make_args(canonical_expand(table.definition(U_name(j, box)))):
            coeff, last = split_term(term)
            if last != nc_symbol(U_name(j, box - 1)):
                problems.append(f"rule {U_name(j, box)} is not a left multiple of {U_name(j, box - 1)}")
            coeffs.append(coeff)
        mults.append(sympy.Add(*coeffs).xreplace(ren))
    if any(m != mults[0] for m in mults):
        problems.append(f"box {box}: carried rules use different multipliers {mults}")
    return mults[0]


def extended_induction(layer: LayerFn, *, gated: bool | None = None, rule_layer: int = 3,
                       input_transform: bool = False, final: LayerFn | None = None,
                       table: ExtendedTable | None = None) -> ExtendedInduction:
    """Build the cases of the every-depth proof of ``derive_table(·, layer, ...)`` (module docstring).

    ``table`` (default: the derived one of depth ``rule_layer``) lets a modified table's rules be checked.

    >>> from symuat.expansion.extended import gated_residual_term
    >>> extended_induction(gated_residual_term).holds()
    True
    """
    if isinstance(rule_layer, bool) or not isinstance(rule_layer, int) or rule_layer < 2:
        raise InvalidValueError(f"rule_layer must be an integer >= 2, got {rule_layer!r}")
    ext = table or derive_table(rule_layer, layer, gated=gated, input_transform=input_transform, final=final)
    t, r, x0 = ext.table, rule_layer, INPUT
    problems: list[str] = []
    A, c, R = nc_symbol("A_{i}"), nc_symbol("c_{i}"), nc_symbol("R_{i}")
    sides = {}

    start = t.definition(A_name(0)) * x0 + t.definition(c_name(0))
    sides["base"] = (layer(1, start), t.unfold(t.form(1)))

    ren = _renaming(layer, r, "i+1")
    ren.update({nc_symbol(A_name(r - 1)): A, nc_symbol(c_name(r - 1)): c, nc_symbol(R_name(r - 1)): R})

    def rule(name: str) -> sympy.Expr:
        return t.definition(name).xreplace(ren)

    M = _carried(t, r, tuple(range(1, r)), ren, problems)
    arg = rule(V_name(r)) * x0 + rule(beta_name(r))
    app = gate(arg, rule(P_name(r)) * x0 + rule(gamma_name(r))) if ext.gated else sigma(arg)
    if t.definition(R_name(r)) != sympy.Add(*(nc_symbol(U_name(j, r)) * application(j, ext.gated)
                                               for j in range(1, r + 1))):
        problems.append(f"{R_name(r)} is not the sum of its terms")
    sides["step"] = (layer("i+1", A * x0 + c + R),
                     rule(A_name(r)) * x0 + rule(c_name(r)) + M * R + rule(U_name(r, r)) * app)

    if final is not None:
        f = r + 1
        fren = _renaming(final, f, "L+1")
        fren.update({nc_symbol(A_name(r)): A, nc_symbol(c_name(r)): c, nc_symbol(R_name(r)): R})
        MF = _carried(t, f, tuple(range(1, r + 1)), fren, problems)
        sides["final"] = (final("L+1", A * x0 + c + R),
                          t.definition(A_name(f)).xreplace(fren) * x0 + t.definition(c_name(f)).xreplace(fren)
                          + MF * R)

    U, Rp, a = nc_symbol("U_{k}"), nc_symbol("R'_{i}"), nc_symbol("v_{k}")
    sides["lemma"] = (M * (U * sigma(a) + Rp), (M * U) * sigma(a) + M * Rp)
    return ExtendedInduction(sides, tuple(problems), r)
