r"""The paper's symbols as objects: the activation :math:`\sigma` and the names of the DUAT expansion.

One :math:`\sigma` (:data:`SIGMA`, uninterpreted in symbolic work) and one concrete
logistic function (:func:`logistic`, used by the float level and every NumPy reference).

Every name of the DUAT expansion is a :class:`PaperName` that carries its structure (head,
decoration, layer, index), the way SymPy's ``MatrixSymbol`` carries its shape: the printer, the
opaque evaluator (vector or matrix?) and the mutation operators read that structure instead of
parsing symbol names.  The SymPy symbol's name is derived from the structure and is the contract
with the numeric evaluators, which bind values by name.  A symbol created elsewhere from a string
is read once, by :meth:`PaperName.read`, the only reader of the grammar that :attr:`PaperName.name`
writes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy

__all__ = ["SIGMA", "logistic", "PaperName", "structure", "is_vector", "VECTOR_HEADS", "MATRIX_HEADS",
           "layer_weight", "layer_bias", "layer_state", "A_tilde", "c_tilde", "U_tilde", "V_tilde", "beta_tilde",
           "residual", "matrix_entry"]

#: The paper's activation :math:`\sigma`, an uninterpreted (elementwise) function in symbolic work; its values are
#: finite numbers (SymPy then skips the :math:`0\cdot\infty` checks of its matrix product).
SIGMA = sympy.Function("sigma", finite=True)


def logistic(x):
    r"""The concrete :math:`\sigma` of the float level, :math:`1/(1+e^{-x}) = \tfrac12(1+\tanh(x/2))`.

    The tanh form is exact and cannot overflow (``1/(1+exp(800))`` warns; this does not).

    >>> float(logistic(0.0)), float(logistic(-800.0)), float(logistic(800.0))
    (0.5, 0.0, 1.0)
    """
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:
        return 0.5 * (1.0 + np.tanh(0.5 * x))
    t = 0.5 * x  # in place below: one temporary the size of x, the same values
    np.tanh(t, out=t)
    t += 1.0
    t *= 0.5
    return t


# --------------------------------------------------------------------------------------------
# Names of the DUAT expansion, as objects
# --------------------------------------------------------------------------------------------

#: Heads of vector quantities: the paper's bold lowercase letters, c̃, β̃ and R = UAT^R (``e'``: a decoder's second
#: input, the encoder's output :math:`\operatorname{vec}_r E`).
VECTOR_HEADS = ("x", "b", "c", "e", "h", "y", "v", "\\beta", "R")
#: Heads of matrix quantities (checked first: ``H`` is a matrix although ``h`` is a vector head).
MATRIX_HEADS = ("W", "A", "U", "V", "H")

_REGISTRY: dict[str, PaperName] = {}


@dataclass(frozen=True)
class PaperName:
    r"""A symbol name with its structure: head, decoration, subscript indices and stage.

    ``decoration`` is ``"'"`` (the matrix–vector forms :math:`\mathbf W'_{i,k}`), ``"tilde"``
    (the table's :math:`\tilde A_i, \tilde U^{(i)}_j`, …) or ``""``; ``sub`` are the subscript
    items (``("1", "2")`` for :math:`{}_{1,2}`), ``stage`` the superscript :math:`(i)` of
    :math:`\tilde U^{(i)}_j`.  ``tail`` keeps, verbatim, a suffix that is not of that form.
    The SymPy symbol's name (:attr:`name`) is derived from the structure, never the other way
    round, except by :meth:`read` for a symbol created elsewhere from a string.

    >>> w = layer_weight(2, 3)
    >>> w.name, w.layer, w.index, w.is_vector
    ("W'_{2,3}", 2, 3, False)
    >>> U_tilde(1, 3).name, U_tilde(1, 3).original().name
    ('\\tilde{U}_{1}^{(3)}', "W'_{1,3}")
    """

    head: str
    decoration: str = ""
    sub: tuple[str, ...] = ()
    stage: str | None = None
    tail: str | None = None

    def __post_init__(self) -> None:
        _REGISTRY.setdefault(self.name, self)

    @property
    def name(self) -> str:
        base = rf"\tilde{{{self.head}}}" if self.decoration == "tilde" else self.head + self.decoration
        if self.tail is not None:
            return base + self.tail
        sub = f"_{{{','.join(self.sub)}}}" if self.sub else ""
        return base + sub + (f"^{{({self.stage})}}" if self.stage is not None else "")

    @property
    def symbol(self) -> sympy.Symbol:
        """The noncommutative SymPy symbol (opaque matrix or vector) of this name."""
        return sympy.Symbol(self.name, commutative=False)

    @property
    def layer(self) -> int | str | None:
        """The layer :math:`i` of :math:`\\mathbf W'_{i,k}`, :math:`\\tilde A_i`, :math:`\\tilde U^{(i)}_j`, …"""
        raw = self.stage if self.stage is not None else (self.sub[0] if self.sub else None)
        return _int_or_str(raw)

    @property
    def index(self) -> int | str | None:
        """The second index: :math:`k` of :math:`\\mathbf W'_{i,k}`, :math:`j` of :math:`\\tilde U^{(i)}_j`."""
        if self.stage is not None:
            return _int_or_str(self.sub[0]) if self.sub else None
        return _int_or_str(self.sub[1]) if len(self.sub) > 1 else None

    @property
    def is_vector(self) -> bool:
        """Bold lowercase (and c̃, β̃, R) are vectors; uppercase letters are matrices."""
        return self.head.startswith(VECTOR_HEADS) and not self.head.startswith(MATRIX_HEADS)

    def latex(self, commutative: bool = False) -> str | None:
        r"""The paper's typesetting (bold, primes, tildes, :math:`\mathrm{UAT}^R`), ``None`` if plain.

        >>> layer_weight(1, 1).latex(), beta_tilde(2).latex(), residual(1).latex()
        ("\\mathbf{W}'_{1,1}", '\\tilde{\\boldsymbol{\\beta}}_{2}', '\\mathrm{UAT}^{R}_{1}')
        """
        rest = self.name[len(self.head) + len(self.decoration):] if self.decoration != "tilde" else \
            self.name[len(rf"\tilde{{{self.head}}}"):]
        if self.decoration == "'":
            return f"{_bold(self.head)}'{rest}"
        if self.decoration == "tilde":
            return rf"\tilde{{{_bold(self.head)}}}{rest}"
        if self.head == "R" and self.sub and self.tail is None:
            return r"\mathrm{UAT}^{R}" + rest
        if commutative and self.tail is None and self.stage is None and self.head[0].isupper() \
                and len(self.sub) in (1, 2) and all(s.isdigit() for s in self.sub):
            return f"{self.head.lower()}_{{{','.join(self.sub)}}}"
        return None

    def shifted(self, d: int) -> PaperName | None:
        r"""The same name with its first printed integer index moved by ``d`` (``None``: none, or < 0).

        >>> layer_weight(2, 1).shifted(1).name, U_tilde(1, 3).shifted(1).name, layer_state("i-1").shifted(1).name
        ("W'_{3,1}", '\\tilde{U}_{2}^{(3)}', "x'_{i-2}")
        """
        if self.tail is not None:
            span = _digits(self.tail)
            if span is None or int(self.tail[span[0]:span[1]]) + d < 0:
                return None
            tail = self.tail[:span[0]] + str(int(self.tail[span[0]:span[1]]) + d) + self.tail[span[1]:]
            return PaperName(self.head, self.decoration, tail=tail)
        items = list(self.sub) + ([self.stage] if self.stage is not None else [])
        k = next((k for k, item in enumerate(items) if _digits(item)), None)
        if k is None:
            return None
        start, end = _digits(items[k])
        value = int(items[k][start:end]) + d
        if value < 0:
            return None
        items[k] = items[k][:start] + str(value) + items[k][end:]
        sub, stage = (tuple(items[:-1]), items[-1]) if self.stage is not None else (tuple(items), None)
        return PaperName(self.head, self.decoration, sub, stage)

    def original(self) -> PaperName | None:
        """The layer parameter an updated (tilde) value replaces; ``None`` if not a tilde name."""
        if self.decoration != "tilde":
            return None
        i = self.sub[0] if self.sub else ""
        known = {"A": ("W", (i, "1")), "c": ("b", (i, "3")), "V": ("W", (i, "2")), "\\beta": ("b", (i, "2")),
                 "U": ("W", (i, "3"))}
        if self.head in known and self.tail is None:
            head, sub = known[self.head]
            return PaperName(head, "'", sub)
        return PaperName(self.head, "", tail=self.name[len(rf"\tilde{{{self.head}}}"):])

    @classmethod
    def read(cls, name: str) -> PaperName | None:
        """The structure of a name built elsewhere from a string (``None`` if it has none)."""
        if name in _REGISTRY:
            return _REGISTRY[name]
        if name.startswith("\\tilde{"):
            head, closed, rest = name[len("\\tilde{"):].partition("}")
            if not closed or not _is_head(head):
                return None
            return _with_tail(head, "tilde", rest)
        if name.startswith(("\\hat{", "\\bar{", "\\mathbf{", "{")):
            return None  # a decorated head: only its kind (vector or matrix) is known, see is_vector
        n = 1 if name.startswith("\\") else 0
        while n < len(name) and name[n].isascii() and (name[n].isalpha() or (n and name[n].isdigit())):
            n += 1
        head, rest = name[:n], name[n:]
        if not head or head == "\\":
            return None
        if rest.startswith("'") and head.isalpha() and (not rest[1:] or (rest[1:].startswith("_{")
                                                                          and rest.endswith("}"))):
            return _with_tail(head, "'", rest[1:])
        return _with_tail(head, "", rest)


def _digits(item: str) -> tuple[int, int] | None:
    """Start and end of the first run of decimal digits in ``item``."""
    start = next((n for n, ch in enumerate(item) if ch.isdigit()), None)
    if start is None:
        return None
    end = start
    while end < len(item) and item[end].isdigit():
        end += 1
    return start, end


def _with_tail(head: str, decoration: str, rest: str) -> PaperName:
    sub, stage = _split(rest)
    if sub is not None:
        return PaperName(head, decoration, sub, stage)
    return PaperName(head, decoration, tail=rest)


def _split(rest: str) -> tuple[tuple[str, ...] | None, str | None]:
    """``_{a,b}`` or ``_{a}^{(s)}`` → (items, stage); anything else → (None, None)."""
    if not rest:
        return (), None
    if not rest.startswith("_{"):
        return None, None
    body, closed, after = rest[2:].partition("}")
    if not closed or "{" in body:
        return None, None
    if not after:
        return tuple(body.split(",")), None
    if after.startswith("^{(") and after.endswith(")}") and "{" not in after[3:-2]:
        return tuple(body.split(",")), after[3:-2]
    return None, None


def _is_head(text: str) -> bool:
    return bool(text) and (text.isalpha() or (text[0] == "\\" and text[1:].isalpha()))


def _int_or_str(raw: str | None) -> int | str | None:
    return int(raw) if raw is not None and raw.isdigit() else raw


def _bold(head: str) -> str:
    return rf"\boldsymbol{{{head}}}" if head.startswith("\\") else rf"\mathbf{{{head}}}"


def structure(symbol: sympy.Symbol | str) -> PaperName | None:
    """The structure of a symbol: recorded when its name was built here, else read once."""
    name = symbol if isinstance(symbol, str) else symbol.name
    return _REGISTRY.get(name) or PaperName.read(name)


def is_vector(symbol: sympy.Symbol) -> bool:
    r"""Whether an opaque symbol is a vector (bold lowercase in the paper, or c̃, β̃, R).

    >>> [is_vector(sympy.Symbol(n)) for n in ["b'_{1,2}", "W'_{1,1}", r"\tilde{\beta}_{2}", "R_{1}"]]
    [True, False, True, True]
    """
    found = structure(symbol)
    if found is not None:
        return found.is_vector
    head = symbol.name.lstrip("{")
    for deco in ("\\hat{", "\\bar{", "\\mathbf{"):
        head = head[len(deco):] if head.startswith(deco) else head
    return head.startswith(VECTOR_HEADS) and not head.startswith(MATRIX_HEADS)


def layer_weight(i: int | str, k: int) -> PaperName:
    r""":math:`\mathbf W'_{i,k}` of residual layer :math:`i` (Eq. 20), :math:`k\in\{1,2,3\}`."""
    return PaperName("W", "'", (str(i), str(k)))


def layer_bias(i: int | str, k: int) -> PaperName:
    r""":math:`\mathbf b'_{i,k}` of residual layer :math:`i` (Eq. 20), :math:`k\in\{2,3\}`."""
    return PaperName("b", "'", (str(i), str(k)))


def layer_state(i: int | str) -> PaperName:
    r""":math:`\mathbf x'_i`, the output of layer :math:`i` (:math:`\mathbf x'_0` the input)."""
    return PaperName("x", "'", (str(i),))


def A_tilde(i: int | str) -> PaperName:
    r""":math:`\tilde A_i` of the substitution table (Eq. 11 / 33)."""
    return PaperName("A", "tilde", (str(i),))


def c_tilde(i: int | str) -> PaperName:
    r""":math:`\tilde c_i` of the substitution table."""
    return PaperName("c", "tilde", (str(i),))


def U_tilde(j: int | str, i: int | str) -> PaperName:
    r""":math:`\tilde U^{(i)}_j` of the substitution table."""
    return PaperName("U", "tilde", (str(j),), str(i))


def V_tilde(i: int | str) -> PaperName:
    r""":math:`\tilde V_i` of the substitution table."""
    return PaperName("V", "tilde", (str(i),))


def beta_tilde(i: int | str) -> PaperName:
    r""":math:`\tilde\beta_i` of the substitution table."""
    return PaperName("\\beta", "tilde", (str(i),))


def residual(i: int | str) -> PaperName:
    r""":math:`R_i`, the paper's :math:`\mathrm{UAT}^R_i` (the sum of the σ-terms up to layer :math:`i`)."""
    return PaperName("R", "", (str(i),))


def matrix_entry(head: str, row: int, col: int | None = None) -> PaperName:
    r"""Entry ``head_{row,col}`` of an explicit matrix (``head_{row}`` of a vector), printed lowercase."""
    return PaperName(head, "", (str(row),) if col is None else (str(row), str(col)))
