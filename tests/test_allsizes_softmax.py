"""All-sizes rules of the row-wise softmax and of scalars of the sizes (the printed 1/sqrt(M), M = h*m)."""

from __future__ import annotations

import sympy

from symuat import Identity, dims_grid
from symuat.allsizes import decide
from symuat.allsizes.index_types import is_size_scalar, size_symbol
from symuat.evidence.identity import check_identity
from symuat.evidence.verdict import Level
from symuat.layers.attention import softmax

_SHAPES = {"x": ("N", "m"), "WQ": ("m", "m"), "WK": ("m", "m")}


def _scores(x, WQ, WK):
    return (x * WQ) * (x * WK).T


def _identity(lhs, rhs, h=(1, 2)) -> Identity:
    return Identity(shapes=_SHAPES, lhs=lhs, rhs=rhs, dims=dims_grid(h=h, N=(1, 2), m=(1, 2)),
                    levels=(Level.SYMBOLIC,))


def test_scaled_softmax_is_proved_for_every_size():
    r""":math:`\operatorname{softmax}(QK^T/\sqrt{hm}) = \operatorname{softmax}(xW_QW_K^Tx^T\cdot(hm)^{-1/2})`."""
    ident = _identity(lambda x, WQ, WK, h, m: softmax(_scores(x, WQ, WK) / sympy.sqrt(h * m)),
                      lambda x, WQ, WK, h, m: softmax(x * (WQ * WK.T) * x.T * (1 / sympy.sqrt(h * m))))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    ev = decide(ident).evidence
    assert ev is not None and ev.holds and "every h, N, m >= 1" in ev.detail


def test_the_two_scales_differ_from_two_heads_on():
    r""":math:`1/\sqrt{M}` and :math:`1/\sqrt{m}` agree for one head only: the smallest witness has h = 2."""
    ident = _identity(lambda x, WQ, WK, h, m: softmax(_scores(x, WQ, WK) / sympy.sqrt(h * m)),
                      lambda x, WQ, WK, m: softmax(_scores(x, WQ, WK) / sympy.sqrt(m)), h=(1,))
    assert check_identity(ident, levels=[Level.SYMBOLIC]).holds
    ev = decide(ident).evidence
    assert ev is not None and not ev.holds and ev.counterexample["dims"]["h"] == 2


def test_softmax_is_not_entrywise_exp():
    ident = _identity(lambda x, WQ, WK: softmax(_scores(x, WQ, WK)),
                      lambda x, WQ, WK: _scores(x, WQ, WK).applyfunc(sympy.exp))
    d = decide(ident)
    assert not d.inside and "the elementwise map uses exp" in d.reason


def test_size_scalars_only():
    h = size_symbol("h")
    assert is_size_scalar(1 / sympy.sqrt(2 * h)) and is_size_scalar(h + 1)
    assert not is_size_scalar(sympy.sqrt(2)) and not is_size_scalar(sympy.exp(h)) and not is_size_scalar(
        sympy.Symbol("w"))
