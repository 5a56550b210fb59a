r"""The DUAT substitution table (seed 001, App. B.2-B.3, Eq. 22-27, Eq. 33-34, Figure 2).

The table is *derived*, not typed in.  Starting from the depth-0 form
:math:`\mathbf x'_0 = \tilde A_0\mathbf x'_0 + \tilde c_0 + R_0` with
:math:`\tilde A_0 = I,\ \tilde c_0 = 0,\ R_0 = 0`, layer :math:`i` substitutes
the current DUAT form (in *named* symbols) into Eq. 20,

.. math::
    \mathbf x'_i = \mathbf W'_{i,1}(\tilde A_{i-1}\mathbf x'_0 + \tilde c_{i-1} + R_{i-1}) + \mathbf b'_{i,3}
    + \mathbf W'_{i,3}\,\sigma\big(\mathbf W'_{i,2}(\tilde A_{i-1}\mathbf x'_0 + \tilde c_{i-1} + R_{i-1})
    + \mathbf b'_{i,2}\big),

expands it, unfolds :math:`R_{i-1} = \sum_k \tilde U^{(i-1)}_k \sigma(\tilde V_k\mathbf x'_0 + \tilde\beta_k)`
*outside* :math:`\sigma` only (Lemma 1, Eq. 19: a matrix times a UAT is a UAT)
and reads off the coefficients (:mod:`symuat.expansion.collect`).  The result
is one box per layer, "transformed value on the left, original on the right":

.. math::
    \tilde A_i = \mathbf W'_{i,1}\tilde A_{i-1},\quad
    \tilde c_i = \mathbf W'_{i,1}\tilde c_{i-1} + \mathbf b'_{i,3},\quad
    \tilde U^{(i)}_j = \mathbf W'_{i,1}\tilde U^{(i-1)}_j\ (j<i),\quad
    \tilde U^{(i)}_i = \mathbf W'_{i,3},

.. math::
    \tilde V_i = \mathbf W'_{i,2}\tilde A_{i-1},\quad
    \tilde\beta_i = \mathbf W'_{i,2}\tilde c_{i-1} + \mathbf b'_{i,2} + \mathbf W'_{i,2}R_{i-1},\quad
    R_i = \sum_{k\le i}\tilde U^{(i)}_k\,\sigma(\tilde V_k\mathbf x'_0 + \tilde\beta_k).

Every quantity is a named noncommutative symbol whose definition refers only
to layer symbols and *earlier* names, so :math:`\tilde\beta_j` (which written
out grows like :math:`2^j`) stays a shared sub-expression.  Names whose
definition is a number (box 0) are folded into later definitions.

>>> t = substitution_table(2)
>>> t.definition(r"\tilde{V}_{2}")
W'_{2,2}*\tilde{A}_{1}
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy

from ..errors import DerivationError, InvalidValueError
from ..names import A_tilde, U_tilde, V_tilde, beta_tilde, c_tilde, residual
from .collect import canonical_expand, split_affine
from .residual import residual_term
from .symbols import INPUT, check_depth, layer_symbols, nc_symbol, sigma

__all__ = [
    "A_name",
    "c_name",
    "U_name",
    "V_name",
    "beta_name",
    "R_name",
    "TableRow",
    "SubstitutionTable",
    "substitution_table",
    "ClosedForm",
    "closed_forms",
]


def A_name(i: int) -> str:
    r"""Name of :math:`\tilde A_i`."""
    return A_tilde(i).name


def c_name(i: int) -> str:
    r"""Name of :math:`\tilde c_i`."""
    return c_tilde(i).name


def U_name(j: int, i: int) -> str:
    r"""Name of :math:`\tilde U^{(i)}_j`."""
    return U_tilde(j, i).name


def V_name(i: int) -> str:
    r"""Name of :math:`\tilde V_i`."""
    return V_tilde(i).name


def beta_name(i: int) -> str:
    r"""Name of :math:`\tilde\beta_i`."""
    return beta_tilde(i).name


def R_name(i: int) -> str:
    r"""Name of :math:`R_i` (the paper's :math:`UAT^R_i`)."""
    return residual(i).name


@dataclass(frozen=True)
class TableRow:
    r"""One line ``name := definition`` of a box of the substitution table.

    Attributes
    ----------
    name : str
        Name of the transformed quantity, e.g. ``\tilde{A}_{2}``.
    definition : sympy.Expr
        One-level definition in layer symbols and earlier names.
    layer : int
        The box (layer) the row belongs to; 0 for the initial values.
    kind : str
        ``"matrix"`` or ``"vector"``.
    """

    name: str
    definition: sympy.Expr
    layer: int
    kind: str = "matrix"

    @property
    def symbol(self) -> sympy.Symbol:
        """The noncommutative symbol standing for :attr:`name`."""
        return nc_symbol(self.name)

    def __str__(self) -> str:
        return f"{self.name} = {self.definition}"


@dataclass(frozen=True)
class SubstitutionTable:
    r"""The boxes of Figure 2 for a depth-:math:`L` network.

    Attributes
    ----------
    depth : int
        :math:`L`.
    rows : tuple of TableRow
        All rows, box 0 first, each box in definition order.
    """

    depth: int
    rows: tuple
    _index: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index = {}
        for r in self.rows:
            if r.name in index:
                raise InvalidValueError(f"rows: name {r.name!r} is defined twice")
            index[r.name] = r
        object.__setattr__(self, "_index", index)

    @property
    def names(self) -> tuple[str, ...]:
        """Names of all rows in table order."""
        return tuple(r.name for r in self.rows)

    def row(self, name: str | sympy.Symbol) -> TableRow:
        """The row defining ``name`` (a string or its symbol)."""
        key = name.name if isinstance(name, sympy.Symbol) else name
        try:
            return self._index[key]
        except KeyError:
            raise InvalidValueError(f"name {key!r} is not defined in the depth-{self.depth} table") from None

    def definition(self, name: str | sympy.Symbol) -> sympy.Expr:
        """The one-level definition of ``name``."""
        return self.row(name).definition

    def box(self, i: int) -> tuple[TableRow, ...]:
        """The rows of box (layer) ``i``, ``0 <= i <= depth``."""
        if not 0 <= i <= self.depth:
            raise InvalidValueError(f"box index i must be in 0..{self.depth}, got {i!r}")
        return tuple(r for r in self.rows if r.layer == i)

    def ref(self, name: str) -> sympy.Expr:
        """The symbol of ``name``, or its value when the definition is a number (folding)."""
        d = self.definition(name)
        return d if d.is_Number else nc_symbol(name)

    def form(self, k: int | None = None) -> sympy.Expr:
        r"""The depth-:math:`k` DUAT form in named symbols (Eq. 11 / Eq. 33).

        .. math::
            \mathbf x'_k = \tilde A_k\mathbf x'_0 + \tilde c_k
            + \sum_{j\le k}\tilde U^{(k)}_j\,\sigma(\tilde V_j\mathbf x'_0 + \tilde\beta_j)

        ``k`` defaults to :attr:`depth`; ``form(0)`` is :math:`\mathbf x'_0`.
        """
        k = self.depth if k is None else k
        return self.ref(A_name(k)) * INPUT + self.ref(c_name(k)) + self.definition(R_name(k))

    def unfold(self, expr: sympy.Expr) -> sympy.Expr:
        r"""Replace every table name in ``expr`` by its definition, recursively.

        The result is an (unexpanded) tree in layer symbols only.  It is built
        with shared sub-trees, but any expansion of it is exponential in depth.
        """
        memo: dict = {}
        index = self._index
        active: list[str] = []

        def full(name: str) -> sympy.Expr:
            if name not in memo:
                if name in active:
                    cycle = " -> ".join(active[active.index(name):] + [name])
                    raise DerivationError(f"substitution table is cyclic, it cannot be unfolded: {cycle}")
                active.append(name)
                d = index[name].definition
                memo[name] = d.xreplace({s: full(s.name) for s in d.free_symbols if s.name in index})
                active.pop()
            return memo[name]

        expr = sympy.sympify(expr)
        return expr.xreplace({s: full(s.name) for s in expr.free_symbols if s.name in index})

    def to_text(self) -> str:
        """Plain-text rendering, one box per layer (cf. Figure 2)."""
        lines = []
        for i in range(self.depth + 1):
            lines.append(f"[layer {i}]")
            lines.extend(f"  {r}" for r in self.box(i))
        lines.append(f"x'_{{{self.depth}}} = {self.form()}")
        return "\n".join(lines)


def _sigma_app(j: int) -> sympy.Expr:
    r"""The named sigma term :math:`\sigma(\tilde V_j\mathbf x'_0 + \tilde\beta_j)`."""
    return sigma(nc_symbol(V_name(j)) * INPUT + nc_symbol(beta_name(j)))


def _layer_box(i: int, defs: dict) -> list:
    """Mechanically derive box ``i`` from the definitions ``defs`` of boxes ``0..i-1``."""

    def ref(name: str) -> sympy.Expr:  # fold numeric definitions (box 0)
        return defs[name] if defs[name].is_Number else nc_symbol(name)

    A_prev, c_prev, R_prev = ref(A_name(i - 1)), ref(c_name(i - 1)), ref(R_name(i - 1))
    R_def = defs[R_name(i - 1)]
    old_index = {_sigma_app(j): j for j in range(1, i)}
    old = split_affine(canonical_expand(R_def), INPUT)
    if {app for _, app in old.sigma_terms} != set(old_index) or old.linear != 0 or old.bias != 0:
        raise DerivationError(f"{R_name(i - 1)} is not the sum of the sigma terms j = 1..{i - 1}")

    # Eq. 20 at the named depth-(i-1) form, expanded (Eq. 26-27).
    expanded = canonical_expand(residual_term(i, A_prev * INPUT + c_prev + R_prev))
    remainders = frozenset({R_prev}) if isinstance(R_prev, sympy.Symbol) else frozenset()
    parts = split_affine(expanded, INPUT, remainders)
    sigma_terms = {app: [c] for c, app in parts.sigma_terms}
    for coeff, _r in parts.remainder_terms:  # Lemma 1 (Eq. 19): M * UAT^R is a UAT
        for c, app in split_affine(canonical_expand(coeff * R_def), INPUT).sigma_terms:
            sigma_terms.setdefault(app, []).append(c)

    new_apps = [app for app in sigma_terms if app not in old_index]
    if len(new_apps) != 1:
        raise DerivationError(f"layer {i}: expected exactly one new sigma term, found {len(new_apps)}")
    arg = split_affine(new_apps[0].args[0], INPUT, remainders)
    bias = sympy.Add(arg.bias, *(c * r for c, r in arg.remainder_terms), *(c * a for c, a in arg.sigma_terms))

    box = [TableRow(A_name(i), parts.linear, i, "matrix"), TableRow(c_name(i), parts.bias, i, "vector")]
    for j in range(1, i):
        box.append(TableRow(U_name(j, i), sympy.Add(*sigma_terms.get(_sigma_app(j), [])), i, "matrix"))
    box.append(TableRow(U_name(i, i), sympy.Add(*sigma_terms[new_apps[0]]), i, "matrix"))
    box.append(TableRow(V_name(i), arg.linear, i, "matrix"))
    box.append(TableRow(beta_name(i), bias, i, "vector"))
    R_i = sympy.Add(*(nc_symbol(U_name(j, i)) * _sigma_app(j) for j in range(1, i + 1)))
    box.append(TableRow(R_name(i), R_i, i, "vector"))
    return box


def substitution_table(depth: int) -> SubstitutionTable:
    r"""Derive the substitution table of a depth-``depth`` network, layer by layer.

    Parameters
    ----------
    depth : int
        Number of residual layers :math:`L \ge 1`.

    Returns
    -------
    SubstitutionTable

    Raises
    ------
    InvalidValueError
        If ``depth`` < 1.
    DerivationError
        If a substitution does not collect into DUAT shape.
    """
    depth = check_depth(depth)
    rows = [
        TableRow(A_name(0), sympy.S.One, 0, "matrix"),
        TableRow(c_name(0), sympy.S.Zero, 0, "vector"),
        TableRow(R_name(0), sympy.S.Zero, 0, "vector"),
    ]
    defs = {r.name: r.definition for r in rows}
    for i in range(1, depth + 1):
        box = _layer_box(i, defs)
        defs.update((r.name, r.definition) for r in box)
        rows.extend(box)
    return SubstitutionTable(depth, tuple(rows))


@dataclass(frozen=True)
class ClosedForm:
    r"""A closed product form checked against the table.

    Attributes
    ----------
    name : str
        The table name (``\tilde{A}_{L}`` or ``\tilde{U}_{j}^{(L)}``).
    expected : sympy.Expr
        The claimed closed form, built independently of the table.
    unfolded : sympy.Expr
        The table's definition unfolded down to layer symbols.
    holds : bool
        Whether ``expand(unfolded - expected) == 0``.
    """

    name: str
    expected: sympy.Expr
    unfolded: sympy.Expr
    holds: bool


def closed_forms(depth: int, table: SubstitutionTable | None = None) -> tuple[ClosedForm, ...]:
    r"""Prove :math:`\tilde A_L = \mathbf W'_{L,1}\cdots\mathbf W'_{1,1}` and
    :math:`\tilde U^{(L)}_j = \mathbf W'_{L,1}\cdots\mathbf W'_{j+1,1}\mathbf W'_{j,3}`.

    Each is proved by unfolding the table's (sigma-free, polynomial) product
    rows and comparing with the product built directly from layer symbols.

    Parameters
    ----------
    depth : int
        :math:`L \ge 1`.
    table : SubstitutionTable, optional
        The table to check; defaults to ``substitution_table(depth)``.

    Returns
    -------
    tuple of ClosedForm
        :math:`\tilde A_L` first, then :math:`\tilde U^{(L)}_j` for :math:`j = 1..L`.
    """
    depth = check_depth(depth)
    table = substitution_table(depth) if table is None else table
    W1 = [None] + [layer_symbols(i).W1 for i in range(1, depth + 1)]
    claims = [(A_name(depth), sympy.Mul(*[W1[k] for k in range(depth, 0, -1)]))]
    for j in range(1, depth + 1):
        prod = sympy.Mul(*[W1[k] for k in range(depth, j, -1)]) * layer_symbols(j).W3
        claims.append((U_name(j, depth), prod))
    out = []
    for name, expected in claims:
        unfolded = table.unfold(nc_symbol(name))
        holds = canonical_expand(unfolded - expected) == 0
        out.append(ClosedForm(name, expected, unfolded, bool(holds)))
    return tuple(out)
