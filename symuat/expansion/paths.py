r"""The path expansion of an attention-only residual stack ("virtual attention heads").

Beyond the paper: seed 001 stops at one layer, :math:`\mathring{\mathbf H}' = \mathbf W'\mathbf x'` with
:math:`\mathbf W' = \sum_h H_h\otimes W_{OV,h}` (Eq. 9–10), :math:`W_{OV,h} := (W_{V,h}W_{O,h})^{\mathsf T}`
(row-major :math:`\operatorname{vec}_r(HXB) = (H\otimes B^{\mathsf T})\operatorname{vec}_r(X)`).
With the standard residual and no value/output biases, layer :math:`l` maps
:math:`\mathbf x' \mapsto F_l\mathbf x'`, :math:`F_l = I + \sum_h H^{(l)}_h\otimes W^{(l)}_{OV,h}`, so a depth-:math:`L`
stack is :math:`\tilde A_L = F_L\cdots F_1` (the DUAT linear term of Eq. 11 / 33).  The mixed-product rule
:math:`(A\otimes B)(C\otimes D) = AC\otimes BD` turns the product into a sum over *paths*
:math:`S = \{l_1<\dots<l_k\}\subseteq\{1..L\}` with a head :math:`h_j` per visited layer:

.. math::
    F_L\cdots F_1 = \sum_{(S, h)} \big(H^{(l_k)}_{h_k}\cdots H^{(l_1)}_{h_1}\big)
    \otimes \big(W^{(l_k)}_{OV,h_k}\cdots W^{(l_1)}_{OV,h_1}\big),

the empty path giving :math:`I\otimes I = I`; :math:`\prod_l (1+h_l)` terms.  Each term is a pair of
noncommutative products (left factor, right factor), a :class:`PathTerm`.  :func:`path_expansion` builds the
terms by the recursion :func:`extension_pairs` (a new layer multiplies on the left); :func:`virtual_heads`
enumerates the paths independently; :func:`symuat.numeric.paths.apply_paths` applies the terms with
:class:`~symuat.numeric.operators.Kron` (never an :math:`NM\times NM` matrix).

>>> len(path_expansion(2, 2))
9
>>> path_expansion(2, 1)[-1].attention_product
H^{(2)}_{1}*H^{(1)}_{1}
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import sympy

from ..errors import InvalidValueError, ShapeError
from ..validation import check_positive_int
from .symbols import check_depth, nc_symbol

__all__ = [
    "Path",
    "PathTerm",
    "KronPair",
    "attention_symbol",
    "ov_symbol",
    "KRON_SEPARATOR",
    "layer_factor",
    "mixed_product",
    "kron_multiply",
    "encode_kron",
    "extension_pairs",
    "path_expansion",
    "virtual_heads",
    "count_paths",
]

#: A Kronecker product :math:`A\otimes B` kept as the pair ``(A, B)`` of noncommutative expressions.
KronPair = tuple[sympy.Expr, sympy.Expr]

#: Separator of :func:`encode_kron`: :math:`A\otimes B \mapsto A\,T_\otimes B` (a fresh opaque matrix).
KRON_SEPARATOR = nc_symbol(r"T_{\otimes}")


def _index(value: object, what: str) -> int:
    return check_positive_int(what, value, InvalidValueError)


def _tag(layer: int | str) -> str:
    return layer if isinstance(layer, str) else str(_index(layer, "layer"))


def attention_symbol(layer: int | str, head: int) -> sympy.Symbol:
    r"""The opaque attention matrix :math:`H^{(l)}_h` (``layer`` may be a generic tag such as ``"L+1"``)."""
    return nc_symbol(f"H^{{({_tag(layer)})}}_{{{_index(head, 'head')}}}")


def ov_symbol(layer: int | str, head: int) -> sympy.Symbol:
    r"""The opaque value–output matrix :math:`W^{(l)}_{OV,h} = (W_{V,h}W_{O,h})^{\mathsf T}`."""
    return nc_symbol(f"W_{{OV}}^{{({_tag(layer)})}}_{{{_index(head, 'head')}}}")


@dataclass(frozen=True)
class Path:
    r"""A path through the stack: visited layers :math:`l_1<\dots<l_k` and one head per visited layer."""

    layers: tuple[int, ...] = ()
    heads: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        layers = tuple(_index(v, "Path.layers item") for v in self.layers)
        heads = tuple(_index(v, "Path.heads item") for v in self.heads)
        if len(layers) != len(heads):
            raise ShapeError(f"Path needs one head per layer, got layers={layers} and heads={heads}")
        if any(a >= b for a, b in zip(layers, layers[1:])):
            raise InvalidValueError(f"Path.layers must be strictly increasing, got {layers}")
        object.__setattr__(self, "layers", layers)
        object.__setattr__(self, "heads", heads)

    @property
    def order(self) -> int:
        """Number of attention heads composed along the path (0 for the residual-only path)."""
        return len(self.layers)

    def extended(self, layer: int, head: int) -> "Path":
        """The path followed by head ``head`` of a later ``layer``."""
        return Path(self.layers + (layer,), self.heads + (head,))

    def products(self) -> KronPair:
        r"""The pair :math:`(H^{(l_k)}_{h_k}\cdots H^{(l_1)}_{h_1},\ W^{(l_k)}_{OV,h_k}\cdots W^{(l_1)}_{OV,h_1})`.

        Built directly from the path, not by the recursion.
        """
        steps = list(zip(self.layers, self.heads))[::-1]
        return (sympy.Mul(*[attention_symbol(l, h) for l, h in steps]),
                sympy.Mul(*[ov_symbol(l, h) for l, h in steps]))

    def __str__(self) -> str:
        return "∅" if not self.layers else " → ".join(f"{l}.{h}" for l, h in zip(self.layers, self.heads))


@dataclass(frozen=True)
class PathTerm:
    r"""One virtual head: :math:`(\text{attention\_product})\otimes(\text{ov\_product})` of ``path``."""

    path: Path
    attention_product: sympy.Expr
    ov_product: sympy.Expr

    def __post_init__(self) -> None:
        if not isinstance(self.path, Path):
            raise InvalidValueError(f"PathTerm.path must be a Path, got {type(self.path).__name__}")
        for name in ("attention_product", "ov_product"):
            value = sympy.sympify(getattr(self, name))
            if not isinstance(value, sympy.Expr):
                raise InvalidValueError(f"PathTerm.{name} must be a SymPy expression, got {value!r}")
            object.__setattr__(self, name, value)

    @property
    def pair(self) -> KronPair:
        return (self.attention_product, self.ov_product)

    def _latex(self, printer) -> str:
        left, right = printer._print(self.attention_product), printer._print(self.ov_product)
        return rf"\left({left}\right)\otimes\left({right}\right)"

    def _repr_latex_(self) -> str:
        return f"${sympy.latex(self)}$"


def _heads(depth: int, heads_per_layer: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(heads_per_layer, numbers.Integral) and not isinstance(heads_per_layer, bool):
        return (_index(heads_per_layer, "heads_per_layer"),) * depth
    if not isinstance(heads_per_layer, Sequence) or len(heads_per_layer) != depth:
        raise InvalidValueError(f"heads_per_layer must be an int >= 1 or a sequence of {depth} ints, "
                                f"got {heads_per_layer!r}")
    return tuple(_index(h, "heads_per_layer item") for h in heads_per_layer)


def layer_factor(layer: int | str, heads: int) -> tuple[KronPair, ...]:
    r""":math:`F_l = I\otimes I + \sum_h H^{(l)}_h\otimes W^{(l)}_{OV,h}` as Kronecker pairs (``1`` is :math:`I`)."""
    heads = _index(heads, "heads")
    return ((sympy.S.One, sympy.S.One),) + tuple((attention_symbol(layer, h), ov_symbol(layer, h))
                                                  for h in range(1, heads + 1))


def mixed_product(p: KronPair, q: KronPair) -> KronPair:
    r"""The mixed-product rule :math:`(A\otimes B)(C\otimes D) = AC\otimes BD`."""
    return (p[0] * q[0], p[1] * q[1])


def kron_multiply(P: Sequence[KronPair], Q: Sequence[KronPair]) -> tuple[KronPair, ...]:
    r""":math:`(\sum_i A_i\otimes B_i)(\sum_j C_j\otimes D_j) = \sum_{i,j} A_iC_j\otimes B_iD_j`.

    Bilinearity and the mixed-product rule.
    """
    return tuple(mixed_product(p, q) for p in P for q in Q)


def encode_kron(pairs: Sequence[KronPair]) -> sympy.Expr:
    r"""The injective linear map :math:`\sum A_i\otimes B_i \mapsto \sum A_i\,T_\otimes B_i` into one free algebra.

    Monomials :math:`a\,T_\otimes b` (``a`` a word in left symbols, ``b`` in right ones) are distinct
    basis elements, so two sums of pairs are equal in :math:`F\langle X\rangle\otimes F\langle Y\rangle`
    iff their encodings expand to the same noncommutative polynomial.
    """
    return sympy.Add(*[a * KRON_SEPARATOR * b for a, b in pairs])


def extension_pairs(pair: KronPair, layer: int | str, heads: int) -> tuple[KronPair, ...]:
    r"""The recursion of :func:`path_expansion`: a depth-:math:`L` term ``(A, B)`` gives ``(A, B)`` and
    :math:`(H^{(L+1)}_h A,\ W^{(L+1)}_{OV,h} B)` for every head :math:`h` of layer ``layer``."""
    heads = _index(heads, "heads")
    return (pair,) + tuple((attention_symbol(layer, h) * pair[0], ov_symbol(layer, h) * pair[1])
                           for h in range(1, heads + 1))


def path_expansion(depth: int, heads_per_layer: int | Sequence[int]) -> tuple[PathTerm, ...]:
    r"""All :math:`\prod_l(1+h_l)` virtual-head terms of a depth-``depth`` attention-only residual stack.

    Built by the recursion :func:`extension_pairs` (depth :math:`L \to L+1`), starting from the empty
    path :math:`(1, 1) = I\otimes I`.  Terms are ordered by the recursion (shorter prefixes first).

    >>> [str(t.path) for t in path_expansion(2, 1)]
    ['∅', '2.1', '1.1', '1.1 → 2.1']
    """
    depth = check_depth(depth)
    heads = _heads(depth, heads_per_layer)
    terms = (PathTerm(Path(), sympy.S.One, sympy.S.One),)
    for layer, h in enumerate(heads, start=1):
        out = []
        for t in terms:
            pairs = extension_pairs(t.pair, layer, h)
            paths = (t.path,) + tuple(t.path.extended(layer, k) for k in range(1, h + 1))
            out.extend(PathTerm(p, a, b) for p, (a, b) in zip(paths, pairs))
        terms = tuple(out)
    return terms


def virtual_heads(depth: int, heads_per_layer: int | Sequence[int]) -> tuple[Path, ...]:
    r"""Enumerate the paths directly: every subset :math:`S` of layers and every head choice on :math:`S`.

    Independent of :func:`path_expansion` (no recursion); ordered by path order, then layers, then heads.

    >>> len(virtual_heads(3, 2)) == (1 + 2) ** 3
    True
    """
    depth = check_depth(depth)
    heads = _heads(depth, heads_per_layer)
    out = []
    for k in range(depth + 1):
        for subset in itertools.combinations(range(1, depth + 1), k):
            for choice in itertools.product(*(range(1, heads[l - 1] + 1) for l in subset)):
                out.append(Path(subset, choice))
    return tuple(out)


def count_paths(depth: int, heads_per_layer: int | Sequence[int]) -> int:
    r""":math:`\prod_{l=1}^{L}(1+h_l)`, i.e. :math:`(1+h)^L` for a uniform head count."""
    return int(np.prod([1 + h for h in _heads(check_depth(depth), heads_per_layer)]))
