r"""Index-form rules of mixture-of-experts routing (:mod:`symuat.layers.moe`): a top-k choice of symbolic size.

``fixed_choice(pattern, N, E, k, c)`` on symbolic sizes is traced as an *arbitrary one-hot* tensor
:math:`C_{(n,\mathrm{slot}),e}` (one expert per token and slot; an input no builder can declare, its name starts with a
space), so a statement proved here holds for every choice, in particular for each fixed pattern ``c`` of the grid:

* ``choice_weights(P, C)`` — :math:`W_{n,\mathrm{slot}} = \sum_e C_{(n,\mathrm{slot}),e}P_{n,e}` (the gather);
* ``renormalise_rows(W)`` — :math:`W_{n,\mathrm{slot}}\cdot\mathrm{inv}(\sum_{\mathrm{slot}'} W_{n,\mathrm{slot}'})`,
  the reciprocal an opaque function of its normalised argument;
* ``routing_gates(P, C, renormalise, s)`` — :math:`g_{n,e} = s\,\chi_{n,e}P_{n,e}\,[\mathrm{inv}(\sum_{e'}
  \chi_{n,e'}P_{n,e'})]` with :math:`\chi_{n,e} = \sum_{\mathrm{slot}} C_{(n,\mathrm{slot}),e}` (whether token
  :math:`n` chose :math:`e`: 0 or 1 for a choice of distinct experts, which ``check_choice`` enforces);
* ``dispatch(H, experts, C, W, σ)`` — :math:`\sum_e \operatorname{diag}(\sum_{\mathrm{slot}}
  C_{(\cdot,\mathrm{slot}),e}W_{\cdot,\mathrm{slot}})\,F_e(H)`: each expert on the tokens that chose it, weighted and
  summed (the concrete loop gathers those rows, applies :math:`F_e` row-wise and scatter-adds them).

Soundness.  Each rule is the concrete function's definition with the choice written as its one-hot tensor.  The
normal form uses one fact of the choice, :math:`C_{re}C_{re'} = \delta_{ee'}C_{re}` (a row holds one 1;
:data:`~symuat.allsizes.terms.ONE_HOT`), true for every choice; a statement that needs more of it (that some expert
goes unchosen) gets different normal forms and stays undecided unless the explicit level finds a witness.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .families import FamilyIndex, diag_vector, family_sum
from .index_types import UNIT, Atom, Prod, as_type, same
from .outside import OutsideFragment
from .terms import ONE_HOT, eliminate_deltas, multiply
from .tracer import Tracer, _vars

__all__ = ["CHOICES", "TracedChoice", "TracedExperts", "fixed_choice", "choice_weights", "renormalise_rows",
           "routing_gates", "dispatch", "expert_family"]


@dataclass(frozen=True)
class TracedChoice:
    """A top-k choice over ``N`` tokens, ``k`` slots and ``E`` experts: the one-hot input ``C`` (``(N*k) x E``)."""

    C: Tracer
    N: Atom
    k: Atom
    E: Atom

    def entry(self, n: str, slot: str, e: str) -> list:
        return self.C.terms((0, 0), (n, slot), (e,))


def _atom(x, what: str) -> Atom:
    t = as_type(x)
    if not isinstance(t, Atom) or getattr(t, "empty_at_one", False):
        raise OutsideFragment(f"{what} {t} is not a dimension of the identity")
    return t


#: The traced choices of the identity being traced (cleared with its sizes): name -> (tokens, experts, top-k, the
#: dimension numbering the pattern or None), for the verdict's scope and the witness search.
CHOICES: dict = {}


def fixed_choice(pattern, N, E, k, c) -> TracedChoice:
    r"""The choice ``c`` of ``pattern`` as an arbitrary one-hot tensor (every choice of one expert per token and
    slot).  Two calls name the same tensor only with the same pattern, the same ``c`` and the same sizes: a statement
    that compares two different choices gets two independent tensors."""
    N, E, k = _atom(N, "the number of tokens"), _atom(E, "the number of experts"), _atom(k, "the top-k")
    which = getattr(pattern, "__qualname__", None) or repr(pattern)
    name = f" C[{which} {c!r}: {k.name} of {E.name} experts per token of {N.name}]"
    CHOICES[f"{which} {c!r}"] = (N.name, E.name, k.name, c.name if isinstance(as_type(c), Atom) else None)
    ONE_HOT[name] = 2
    return TracedChoice(Tracer.input(name, Prod((N, k)), E), N, k, E)


def _choice(choice) -> TracedChoice:
    if not isinstance(choice, TracedChoice):
        raise OutsideFragment(f"a top-k choice {choice!r} on symbolic sizes (only fixed_choice)")
    return choice


def _sum(terms) -> list:
    return [t for t in (eliminate_deltas(x) for x in terms) if t is not None]


def choice_weights(P: Tracer, choice) -> Tracer:
    r""":math:`W_{n,\mathrm{slot}} = \sum_e C_{(n,\mathrm{slot}),e}P_{n,e}`."""
    ch = _choice(choice)
    if not (isinstance(P, Tracer) and same(P.rows, ch.N) and same(P.cols, ch.E)):
        raise OutsideFragment(f"gathering {getattr(P, 'shape', P)} probabilities with a choice over {ch.N} x {ch.E}")
    (n,), (slot,), (e,) = _vars((ch.N.name,)), _vars((ch.k.name,)), _vars((ch.E.name,))
    terms = _sum(multiply(a, b, ((e, ch.E.name),)) for a in ch.entry(n, slot, e) for b in P.terms((0, 0), (n,), (e,)))
    return Tracer(ch.N, ch.k, {(0, 0): ((n,), (slot,), tuple(terms))})


def _inverse(terms) -> tuple:
    """The opaque reciprocal of the (normalised) sum ``terms``."""
    return ("s", "inv", tuple(terms))


def renormalise_rows(W: Tracer) -> Tracer:
    r""":math:`W_{n,\mathrm{slot}}/\sum_{\mathrm{slot}'}W_{n,\mathrm{slot}'}` (one row block, one column block)."""
    if not (isinstance(W, Tracer) and isinstance(W.rows, Atom) and isinstance(W.cols, Atom)):
        raise OutsideFragment(f"renormalising the rows of a {getattr(W, 'shape', W)} matrix")
    (n,), (slot,), (other,) = _vars((W.rows.name,)), _vars((W.cols.name,)), _vars((W.cols.name,))
    total = tuple((c, fs, ds + ((other, W.cols.name),)) for c, fs, ds in W.terms((0, 0), (n,), (other,)))
    inv = (Fraction(1), (_inverse(total),), ())
    terms = _sum(multiply(a, inv) for a in W.terms((0, 0), (n,), (slot,)))
    return Tracer(W.rows, W.cols, {(0, 0): ((n,), (slot,), tuple(terms))})


def _chosen(ch: TracedChoice, n: str, e: str) -> list:
    r""":math:`\chi_{n,e} = \sum_{\mathrm{slot}} C_{(n,\mathrm{slot}),e}`."""
    (slot,) = _vars((ch.k.name,))
    return [(c, fs, ds + ((slot, ch.k.name),)) for c, fs, ds in ch.entry(n, slot, e)]


def routing_gates(P: Tracer, choice, renormalise: bool, scale=1) -> Tracer:
    r""":math:`g_{n,e} = s\,\chi_{n,e}P_{n,e}` over :math:`\sum_{e'}\chi_{n,e'}P_{n,e'}` when renormalised."""
    ch = _choice(choice)
    if not (isinstance(P, Tracer) and same(P.rows, ch.N) and same(P.cols, ch.E)):
        raise OutsideFragment(f"gates from {getattr(P, 'shape', P)} probabilities and a choice over {ch.N} x {ch.E}")
    (n,), (e,), (other,) = _vars((ch.N.name,)), _vars((ch.E.name,)), _vars((ch.E.name,))
    terms = _sum(multiply(a, b) for a in _chosen(ch, n, e) for b in P.terms((0, 0), (n,), (e,)))
    if renormalise:
        total = _sum(multiply(a, b, ((other, ch.E.name),)) for a in _chosen(ch, n, other)
                     for b in P.terms((0, 0), (n,), (other,)))
        inv = (Fraction(1), (_inverse(total),), ())
        terms = _sum(multiply(t, inv) for t in terms)
    return Tracer(ch.N, ch.E, {(0, 0): ((n,), (e,), tuple(terms))}).scale(scale)


@dataclass(frozen=True)
class TracedExperts:
    """The routed experts by family index: ``expert(j)`` for a family index ``j`` over ``n``."""

    expert: object
    n: Atom


def expert_family(expert, n) -> TracedExperts:
    return TracedExperts(expert, _atom(n, "the number of experts"))


def dispatch(H: Tracer, experts, choice, W: Tracer, sigma) -> Tracer:
    r""":math:`\sum_e \operatorname{diag}(\sum_{\mathrm{slot}} C_{(\cdot,\mathrm{slot}),e}
    W_{\cdot,\mathrm{slot}})F_e(H)`."""
    ch = _choice(choice)
    if not (isinstance(experts, TracedExperts) and same(experts.n, ch.E)):
        raise OutsideFragment(f"dispatching to the experts {experts!r} (only expert_family over {ch.E})")
    if not (isinstance(W, Tracer) and same(W.rows, ch.N) and same(W.cols, ch.k) and same(H.rows, ch.N)):
        raise OutsideFragment(f"dispatch weights {getattr(W, 'shape', W)} for a choice over {ch.N} x {ch.k}")

    def routed(j: FamilyIndex) -> Tracer:
        (n,), (slot,) = _vars((ch.N.name,)), _vars((ch.k.name,))
        gate = _sum(multiply(a, b, ((slot, ch.k.name),)) for a in ch.entry(n, slot, j.var)
                    for b in W.terms((0, 0), (n,), (slot,)))
        g = Tracer(ch.N, UNIT, {(0, 0): ((n,), (), tuple(gate))})
        return diag_vector(g) * experts.expert(j).apply(H, sigma)
    return family_sum(routed, ch.E)
