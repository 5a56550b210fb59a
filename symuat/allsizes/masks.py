r"""Index-form rules of attention masks and scores (:mod:`symuat.layers.attention_scores`) on symbolic sizes.

``sliding_window_mask(N, w)`` — the predicate :math:`m \le n \wedge n - m < w` over the atom :math:`[N]`, with
the window :math:`w` a dimension of the identity — is traced as a :class:`TracedMask`; ``masked_weights(S, mask,
z, σ)`` is then the matrix with entry :math:`\sigma(S_{nm})\,z_n\,\chi(n, m)`, where :math:`\chi` is one factor
named by the predicate and its parameters (``causal window w over N``).

Soundness.  :math:`\chi` is traced as an *arbitrary* matrix (the factor of an input no builder can declare: its
name starts with a space): an identity whose normal form holds for every matrix holds for every 0/1 mask, in
particular for the window.  Two masks are the same factor only when predicate and parameters are the same.  The
normal form does not use what the predicate says (:math:`\chi(n, n) = 1`, :math:`\chi(n, m) = 0` for
:math:`m > n`): an identity that needs it has different normal forms and, when the explicit level finds no witness,
stays undecided — never proved, never refuted without a witness.  ``softcap(S, c, tanh)`` is the elementwise map
:math:`c\tanh(S/c)` (:meth:`~symuat.allsizes.tracer.Tracer.applyfunc`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import sympy

from .families import FamilyInput, FamilyShape, TracedFamily
from .index_types import UNIT, Atom, SizeDifference, as_type, same
from .outside import OutsideFragment
from .terms import ROW_STOCHASTIC, eliminate_deltas, multiply
from .tracer import Tracer, _vars

__all__ = ["TracedMask", "sliding_window_mask", "symmetric_window_mask", "causal_padding_mask", "masked_weights",
           "softcap", "mask_bounds", "row_stochastic_family"]

#: Traced masks: input name -> (the size the mask is over, its window).  Names start with a space: never declared.
_MASKS: dict[str, tuple[str, str]] = {}


@dataclass(frozen=True)
class TracedMask:
    """The predicate ``name`` over the atom ``n``: traced as the entry of the undeclarable matrix ``" χ[name]"``."""

    name: str
    n: Atom

    @property
    def input(self) -> str:
        return f" χ[{self.name}]"

    def __call__(self, *_args):
        raise OutsideFragment(f"the mask {self.name} evaluated at concrete positions")


def _atom(x, what: str) -> Atom:
    t = as_type(x)
    if not isinstance(t, Atom) or getattr(t, "empty_at_one", False):
        raise OutsideFragment(f"{what} {t} is not a dimension of the identity")
    return t


def _padding(n: Atom, padded) -> str:
    """The padding's part of a mask's name: none, or ``N - r`` tokens (a difference of ``n`` and a dimension)."""
    if isinstance(padded, int) and not isinstance(padded, bool) and padded == 0:
        return ""
    if isinstance(padded, SizeDifference) and padded.minuend == n.name:
        return f", {padded!r} padded"
    raise OutsideFragment(f"a mask over {n} with {padded!r} padded tokens (only 0 or {n.name} minus a dimension)")


def sliding_window_mask(N, window, padded_left=0) -> TracedMask:
    r"""Causal attention inside a window of ``window`` keys: :math:`\chi(n, m) = [m \le n][n - m < w]` (and not a
    left-padded key; a padded query sees itself)."""
    n, w = _atom(N, "the mask's size"), _atom(window, "the window")
    mask = TracedMask(f"causal window {w.name} over {n.name}{_padding(n, padded_left)} on the left", n)
    _MASKS[mask.input] = (n.name, w.name)
    return mask


def symmetric_window_mask(N, window, padded_right=0) -> TracedMask:
    r"""Bidirectional attention inside a window: :math:`\chi(n, m) = [|n - m| < w]` (and not a right-padded key; a
    padded query sees itself).  A factor of its own: never the causal window's."""
    n, w = _atom(N, "the mask's size"), _atom(window, "the window")
    mask = TracedMask(f"symmetric window {w.name} over {n.name}{_padding(n, padded_right)} on the right", n)
    _MASKS[mask.input] = (n.name, w.name)
    return mask


def causal_padding_mask(N, padded) -> TracedMask:
    r"""Causal attention to the real keys: :math:`\chi(n, m) = [m \le n][m < N - \text{padded}]`."""
    n = _atom(N, "the mask's size")
    return TracedMask(f"causal over {n.name}{_padding(n, padded)} at the end", n)


def row_stochastic_family(name, n, N, allowed) -> TracedFamily:
    r"""The family of :math:`N\times N` attention matrices supported on ``allowed`` with rows summing to 1, traced as an
    input family ``" ⟨name⟩ row-stochastic on mask"`` whose rows the normal form sums to 1
    (:data:`~symuat.allsizes.terms.ROW_STOCHASTIC`): the identity is then proved for *every* row-stochastic
    :math:`H_h`, in particular for every one supported on the mask."""
    if not isinstance(allowed, TracedMask):
        raise OutsideFragment(f"row-stochastic matrices on the mask {allowed!r} (only a traced mask predicate)")
    size = _atom(N, "the attention matrices' size")
    if not same(size, allowed.n):
        raise OutsideFragment(f"row-stochastic {size} x {size} matrices on a mask over {allowed.n}")
    fam = FamilyInput(f" ⟨{name}⟩ row-stochastic on {allowed.name}", FamilyShape(_atom(n, "the number of heads"),
                                                                              size, size))
    ROW_STOCHASTIC[fam.name] = size.name
    return TracedFamily(fam)


def mask_bounds(terms, bounds: dict) -> dict:
    r"""``bounds`` with each window raised to the bound of the size its mask is over: a window :math:`w \ge N`
    is the causal mask, so windows :math:`1, \dots, N` show every mask the predicate makes at size :math:`N`."""
    out = dict(bounds)

    def walk(term):
        for f in term[1]:
            if f[0] == "e" and f[1] in _MASKS:
                n, w = _MASKS[f[1]]
                out[w] = max(out.get(w, 1), bounds.get(n, 1))
            elif f[0] == "s":
                for inner in f[2]:
                    walk(inner)
    for t in terms:
        walk(t)
    return out


def masked_weights(S: Tracer, allowed, z: Tracer, exp) -> Tracer:
    r""":math:`\sigma(S_{nm})\,z_n\,\chi(n, m)`: ``exp`` an opaque function (σ), ``z`` an :math:`N\times 1` column."""
    if not isinstance(allowed, TracedMask):
        raise OutsideFragment(f"masked weights with the mask {allowed!r} (only a traced mask predicate)")
    n = allowed.n
    if not (isinstance(S, Tracer) and isinstance(z, Tracer) and same(S.rows, n) and same(S.cols, n)
            and same(z.rows, n) and same(z.cols, UNIT)):
        raise OutsideFragment(f"masked weights of {getattr(S, 'shape', S)} scores and {getattr(z, 'shape', z)} "
                              f"normalisers over {n}")
    probe = sympy.Dummy("score")
    out = exp(probe)
    if not (isinstance(out, sympy.core.function.AppliedUndef) and out.args == (probe,)):
        raise OutsideFragment(f"masked weights with {out} (only an opaque function of the score, σ for exp)")
    r, c = _vars((n.name,)), _vars((n.name,))
    scores = tuple(S.terms((0, 0), r, c))
    base = (Fraction(1), (("s", str(out.func), scores), ("e", allowed.input, 0, 0, r + c)), ())
    terms = (eliminate_deltas(multiply(base, t)) for t in z.terms((0, 0), r, ()))
    return Tracer(n, n, {(0, 0): (r, c, tuple(t for t in terms if t is not None))})


def softcap(S: Tracer, cap, tanh) -> Tracer:
    r""":math:`c\tanh(S/c)` entrywise (``tanh`` written with σ, e.g. :math:`2\sigma(2y) - 1`)."""
    return S.applyfunc(lambda y: cap * tanh(y / cap))
