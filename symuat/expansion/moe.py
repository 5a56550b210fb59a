r"""The DUAT table of a mixture-of-experts stack: one :math:`\sigma`-term (or gate-term) family per expert.

An MoE FFN with experts :math:`e\in\mathcal E` (routed and shared) turns Eq. 20 into

.. math::
    \mathbf x'_i = \mathbf W'_{i,1}\mathbf x'_{i-1} + \mathbf b'_{i,3}
    + \sum_{e\in\mathcal E}\mathbf W'_{i,3,e}\,\sigma(\mathbf W'_{i,2,e}\mathbf x'_{i-1} + \mathbf b'_{i,2,e})

(gated experts: :math:`g(\mathbf W'_{i,2,e}x + \mathbf b'_{i,2,e},\ \mathbf W'_{i,4,e}x + \mathbf b'_{i,4,e})`).
:math:`\mathbf W'_{i,3,e} = (\mathbf G_{i,e}\otimes I)(I_N\otimes W_{d,e}^T)` carries the expert's routing gate
:math:`\mathbf G_{i,e} = \operatorname{diag}(g_{1,e},\dots,g_{N,e})`, zero for every token that did not choose
:math:`e`: the top-k *choice* and the routing weights are dynamic parameters like :math:`W'_{HVO}`.

:func:`derive_moe_table` derives the table mechanically as :func:`~symuat.expansion.extended.derive_table`
does, except that box :math:`i` adds one application per expert, named by the pair :math:`(i, e)`:
:math:`\tilde U^{(L)}_{j,e}`, :math:`\tilde V_{j,e}`, :math:`\tilde\beta_{j,e}` (and :math:`\tilde P_{j,e}`,
:math:`\tilde\gamma_{j,e}`).  :func:`moe_induction` gives the cases of the every-depth proof (base, generic
step with the rules of box ``rule_layer`` re-indexed, Lemma 1), as :func:`~symuat.expansion.extended_induction`.

>>> t = derive_moe_table(2, moe_residual_term(("1", "s")), ("1", "s"))
>>> t.definition(V_name("2,s"))
W'_{2,2,s}*\tilde{A}_{1}
"""

from __future__ import annotations

import sympy

from ..errors import DerivationError, InvalidValueError
from .collect import canonical_expand, split_term
from .extended import LayerFn, P_name, _arg_parts, _split, gamma_name, gate, is_gate
from .extended_proof import ExtendedInduction, _renaming
from .symbols import INPUT, check_depth, layer_symbols, nc_symbol, sigma
from .table import A_name, R_name, SubstitutionTable, TableRow, U_name, V_name, beta_name, c_name

__all__ = ["expert_symbols", "moe_residual_term", "moe_application", "derive_moe_table", "moe_induction"]


def expert_symbols(i: int | str, e: str) -> dict[str, sympy.Symbol]:
    r"""``{"W2", "b2", "W3", "W4", "b4"}``: :math:`\mathbf W'_{i,2,e}, \mathbf b'_{i,2,e}, \mathbf W'_{i,3,e}`
    and the up projection :math:`\mathbf W'_{i,4,e}, \mathbf b'_{i,4,e}` of expert ``e`` in layer ``i``."""
    return {k: nc_symbol(f"{k[0]}'_{{{i},{k[1]},{e}}}") for k in ("W2", "b2", "W3", "W4", "b4")}


def _check_experts(experts) -> tuple[str, ...]:
    experts = tuple(experts)
    if not experts or len(set(experts)) != len(experts) or not all(isinstance(e, str) and e for e in experts):
        raise InvalidValueError(f"experts must be distinct non-empty labels, got {experts!r}")
    return experts


def moe_residual_term(experts, gated: bool = False) -> LayerFn:
    r"""The MoE Eq. 20 layer function ``(i, x) -> expr`` (module docstring) for the expert labels ``experts``."""
    experts = _check_experts(experts)

    def layer(i, x):
        s = layer_symbols(i)
        out = s.W1 * x + s.b3
        for e in experts:
            p = expert_symbols(i, e)
            u = p["W2"] * x + p["b2"]
            out = out + p["W3"] * (gate(u, p["W4"] * x + p["b4"]) if gated else sigma(u))
        return out

    return layer


def _key(j: int | str, e: str) -> str:
    return f"{j},{e}"


def moe_application(j: int | str, e: str, gated: bool) -> sympy.Expr:
    r"""The named application of expert ``e`` in box ``j``:
    :math:`\sigma(\tilde V_{j,e}\mathbf x'_0 + \tilde\beta_{j,e})` or the gate with
    :math:`\tilde P_{j,e}\mathbf x'_0 + \tilde\gamma_{j,e}`."""
    k = _key(j, e)
    a = nc_symbol(V_name(k)) * INPUT + nc_symbol(beta_name(k))
    return gate(a, nc_symbol(P_name(k)) * INPUT + nc_symbol(gamma_name(k))) if gated else sigma(a)


def _owner(app: sympy.Expr, i: int, experts: tuple[str, ...]) -> str:
    """The expert whose layer-``i`` symbols occur in ``app`` (exactly one, else the layer is not an MoE)."""
    names = {s.name for s in app.free_symbols}
    found = [e for e in experts if any(p.name in names for p in expert_symbols(i, e).values())]
    if len(found) != 1:
        raise DerivationError(f"box {i}: the application {app} belongs to experts {found}, expected exactly one")
    return found[0]


def _box(i: int, defs: dict, layer: LayerFn, experts, gated: bool, old: tuple) -> list:
    def ref(name: str) -> sympy.Expr:
        return defs[name] if defs[name].is_Number else nc_symbol(name)

    A_prev, c_prev, R_prev = ref(A_name(i - 1)), ref(c_name(i - 1)), ref(R_name(i - 1))
    remainders = frozenset({R_prev}) if isinstance(R_prev, sympy.Symbol) else frozenset()
    lin, bias, apps, rem = _split(canonical_expand(layer(i, A_prev * INPUT + c_prev + R_prev)), remainders)
    for coeffs in rem.values():  # Lemma 1 (Eq. 19): M * R_{i-1} is a sum of terms
        for app, cs in _split(canonical_expand(sympy.Add(*coeffs) * defs[R_name(i - 1)]), frozenset())[2].items():
            apps.setdefault(app, []).extend(cs)
    known = {moe_application(j, e, gated) for j, e in old}
    new = {_owner(a, i, experts): a for a in apps if a not in known}
    if sorted(new) != sorted(experts) or len(new) != len(apps) - len([a for a in apps if a in known]):
        raise DerivationError(f"box {i}: expected one new application per expert {experts}, found {sorted(new)}")
    rows = [TableRow(A_name(i), lin, i, "matrix"), TableRow(c_name(i), bias, i, "vector")]
    rows += [TableRow(U_name(_key(j, e), i), sympy.Add(*apps.get(moe_application(j, e, gated), [])), i, "matrix")
             for j, e in old]
    for e in experts:
        app, k = new[e], _key(i, e)
        if is_gate(app) != gated:
            raise DerivationError(f"box {i}: a {'gate' if gated else 'sigma'} table met {app.func}")
        rows.append(TableRow(U_name(k, i), sympy.Add(*apps[app]), i, "matrix"))
        V, beta = _arg_parts(app.args[0], remainders)
        rows += [TableRow(V_name(k), V, i, "matrix"), TableRow(beta_name(k), beta, i, "vector")]
        if gated:
            P, gam = _arg_parts(app.args[1], remainders)
            rows += [TableRow(P_name(k), P, i, "matrix"), TableRow(gamma_name(k), gam, i, "vector")]
    terms = old + tuple((i, e) for e in experts)
    R_i = sympy.Add(*(nc_symbol(U_name(_key(j, e), i)) * moe_application(j, e, gated) for j, e in terms))
    rows.append(TableRow(R_name(i), R_i, i, "vector"))
    return rows


def derive_moe_table(depth: int, layer: LayerFn, experts, *, gated: bool = False) -> SubstitutionTable:
    r"""Derive the substitution table of ``depth`` MoE layers ``layer(i, x)`` with the expert labels ``experts``.

    Raises
    ------
    DerivationError
        If a box does not collect into DUAT shape with exactly one new application per expert.
    """
    depth, experts = check_depth(depth), _check_experts(experts)
    rows = [TableRow(A_name(0), sympy.S.One, 0, "matrix"), TableRow(c_name(0), sympy.S.Zero, 0, "vector"),
            TableRow(R_name(0), sympy.S.Zero, 0, "vector")]
    defs = {r.name: r.definition for r in rows}
    old: tuple = ()
    for i in range(1, depth + 1):
        box = _box(i, defs, layer, experts, gated, old)
        defs.update((r.name, r.definition) for r in box)
        rows.extend(box)
        old += tuple((i, e) for e in experts)
    return SubstitutionTable(depth, tuple(rows))


def _carried(t: SubstitutionTable, r: int, experts, ren: dict, problems: list) -> sympy.Expr:
    """The common left factor :math:`M` of the rules :math:`\\tilde U^{(r)}_{j,e} = M\\tilde U^{(r-1)}_{j,e}`."""
    mults = []
    for j in range(1, r):
        for e in experts:
            coeffs = []
            for term in sympy.Add.make_args(canonical_expand(t.definition(U_name(_key(j, e), r)))):
                coeff, last = split_term(term)
                if last != nc_symbol(U_name(_key(j, e), r - 1)):
                    problems.append(f"rule {U_name(_key(j, e), r)} is not a left multiple of its predecessor")
                coeffs.append(coeff)
            mults.append(sympy.Add(*coeffs).xreplace(ren))
    if any(m != mults[0] for m in mults):
        problems.append(f"box {r}: carried rules use different multipliers")
    return mults[0]


def moe_induction(layer: LayerFn, experts, *, gated: bool = False, rule_layer: int = 3) -> ExtendedInduction:
    r"""The cases ``base``, ``step``, ``lemma`` of the every-depth proof of :func:`derive_moe_table`.

    ``step``: for opaque :math:`A_i, c_i, R_i`, ``layer(i+1, A_i x'_0 + c_i + R_i)`` equals
    :math:`\tilde A x'_0 + \tilde c + MR_i + \sum_e\tilde U_e\,\mathrm{app}_e(\dots)` with the rules of box
    ``rule_layer`` re-indexed to the generic layer :math:`i+1`.

    >>> moe_induction(moe_residual_term(("1", "2")), ("1", "2")).holds()
    True
    """
    if isinstance(rule_layer, bool) or not isinstance(rule_layer, int) or rule_layer < 2:
        raise InvalidValueError(f"rule_layer must be an integer >= 2, got {rule_layer!r}")
    experts = _check_experts(experts)
    t, r, x0 = derive_moe_table(rule_layer, layer, experts, gated=gated), rule_layer, INPUT
    problems: list[str] = []
    A, c, R = nc_symbol("A_{i}"), nc_symbol("c_{i}"), nc_symbol("R_{i}")
    sides = {"base": (layer(1, x0), t.unfold(t.form(1)))}
    ren = _renaming(layer, r, "i+1")
    ren.update({nc_symbol(A_name(r - 1)): A, nc_symbol(c_name(r - 1)): c, nc_symbol(R_name(r - 1)): R})

    def rule(name: str) -> sympy.Expr:
        return t.definition(name).xreplace(ren)

    M = _carried(t, r, experts, ren, problems)
    terms = []
    for e in experts:
        k = _key(r, e)
        arg = rule(V_name(k)) * x0 + rule(beta_name(k))
        app = gate(arg, rule(P_name(k)) * x0 + rule(gamma_name(k))) if gated else sigma(arg)
        terms.append(rule(U_name(k, r)) * app)
    expected = sympy.Add(*(nc_symbol(U_name(_key(j, e), r)) * moe_application(j, e, gated)
                           for j in range(1, r + 1) for e in experts))
    if t.definition(R_name(r)) != expected:
        problems.append(f"{R_name(r)} is not the sum of its terms")
    sides["step"] = (layer("i+1", A * x0 + c + R), rule(A_name(r)) * x0 + rule(c_name(r)) + M * R + sympy.Add(*terms))
    U, Rp, a = nc_symbol("U_{k}"), nc_symbol("R'_{i}"), nc_symbol("v_{k}")
    sides["lemma"] = (M * (U * sigma(a) + Rp), (M * U) * sigma(a) + M * Rp)
    return ExtendedInduction(sides, tuple(problems), r)
