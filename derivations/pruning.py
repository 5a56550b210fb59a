r"""The pruning argument: seed 001 Eq. 13–16 (§4.3) = seed 000 Eq. 12–15 = seed 004 Eq. 9–12.

Model.  At one input :math:`\mathbf x`, write :math:`S_1=\sum_{j\in\Lambda_1}\alpha_j\sigma(\mathbf W_j^{\mathsf T}
\mathbf x+b_j)`, :math:`S_2` likewise over :math:`\Lambda_2` (a partition of :math:`\{1..N\}`), and
:math:`f = f(\mathbf x)`, all real.  The printed chain is

.. math::
    |S-f|<\varepsilon \ (13) \;\Rightarrow\; |S_1+S_2-f|<\varepsilon \ (14) \;\Rightarrow\;
    \big||S_1-f|-|S_2|\big|<\varepsilon \ (15) \;\Rightarrow\; |S_1-f|<\varepsilon+|S_2| \ (16).

Each implication is audited as an :class:`~symuat.Identity` whose rows are

* *structural rows* — the sums named in the later display equal those of the earlier one
  (with :math:`\sigma` uninterpreted): this is where the printed :math:`b_j`/:math:`\theta_j`
  mix and seed 004's :math:`\sum_{j=1}^{N_1}`, :math:`\sum_{j=1}^{N_2}` are read;
* *certificate rows* — with :math:`a = S_1-f`, :math:`c = S_2`, the implication
  ":math:`P<\varepsilon\Rightarrow Q<\varepsilon'` for every :math:`\varepsilon`" is
  :math:`(\varepsilon'-Q)-(\varepsilon-P)\ge 0`.  The reals are split into 8 exhaustive cases
  (signs of a and c; :math:`|a|\ge|c|` or :math:`|c|\ge|a|`), parametrised by squares
  (e.g. :math:`a=\pm(q^2+r^2)`, :math:`c=\pm q^2`); SymPy resolves every :math:`|\cdot|` under
  real assumptions and the margin must equal a hand-written sum of squares with non-negative
  coefficients (the certificate).  A certificate identity in every case is a proof of the
  inequality for all reals.

The hypothesis :math:`|S_2|\to 0` is never used by any step: all three implications hold for
every partition (it only serves to read Eq. 16 as "the pruned sum is still an approximation").
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import sympy

from symuat import Entry, Evidence, Identity, Level, Prose, Readings, Status, dims_grid
from symuat.algebra.families import diag_vector
from symuat.algebra.matrices import elementwise, ones
from symuat.algebra.partitions import partition_indicator
from symuat.algebra.splits import halves
from symuat.evidence.fields import SIGMA
from symuat.numeric import duat_form, forward, random_stack, vec_r
from symuat.numeric.stack import TransformerStack

__all__ = ["CASES", "MARGINS", "CERTIFICATES", "step", "split_identity", "random_search", "entries"]

#: The 8 sign/dominance cases: (dominant, sign of a, sign of c).
CASES = tuple((dom, sa, sc) for dom in ("a", "c") for sa in (1, -1) for sc in (1, -1))


def _case_values(case, u1, u2):
    r"""(a, c) in one case: :math:`|a|\ge|c|`: a = ±(u1²+u2²), c = ±u1²; :math:`|c|\ge|a|`: a = ±u1², c = ±(u1²+u2²)."""
    dom, sa, sc = case
    big, small = u1**2 + u2**2, u1**2
    return (sa * big, sc * small) if dom == "a" else (sa * small, sc * big)


#: Margin (ε' − Q) − (ε − P) of each implication, as a function of a = S1 − f, c = S2 and an abs function.
MARGINS: dict[str, Callable] = {
    "reverse": lambda a, c, ab: ab(a + c) - ab(ab(a) - ab(c)),          # Eq. 14 ⇒ Eq. 15
    "from15": lambda a, c, ab: ab(ab(a) - ab(c)) - (ab(a) - ab(c)),     # Eq. 15 ⇒ Eq. 16
    "triangle": lambda a, c, ab: ab(a + c) + ab(c) - ab(a),            # Eq. 14 ⇒ Eq. 16
}

#: Hand-written sum-of-squares certificates (in u1, u2), one per case, in CASES order.
CERTIFICATES: dict[str, tuple[Callable, ...]] = {
    "reverse": (lambda p, r: 2 * p**2, lambda p, r: 0, lambda p, r: 0, lambda p, r: 2 * p**2) * 2,
    "from15": (lambda p, r: 0,) * 4 + (lambda p, r: 2 * r**2,) * 4,
    "triangle": (lambda p, r: 2 * p**2, lambda p, r: 0, lambda p, r: 0, lambda p, r: 2 * p**2,
                 lambda p, r: 2 * p**2 + 2 * r**2, lambda p, r: 2 * r**2, lambda p, r: 2 * r**2,
                 lambda p, r: 2 * p**2 + 2 * r**2),
}


_P, _R = sympy.symbols("p r", real=True)


def _resolved_margin(kind: str, case) -> sympy.Poly:
    """The margin in one case with every |.| resolved by SymPy under real assumptions, a polynomial in p, r."""
    a, c = _case_values(case, _P, _R)
    return sympy.Poly(MARGINS[kind](a, c, sympy.Abs), _P, _R)


def _poly_row(poly: sympy.Poly, u) -> sympy.MatrixBase:
    r"""The :math:`1\times1` matrix ``poly(u_1, u_2)``, monomials as products of the blocks ``u[:1, :]``, ``u[1:, :]``.

    Every margin and certificate is homogeneous of degree 2, so there is no constant monomial.
    """
    p, r = u[:1, :], u[1:, :]
    total = 0 * p
    for (i, j), coef in poly.terms():
        if coef == 0:
            continue
        factors = [p] * i + [r] * j
        term = factors[0]
        for f in factors[1:]:
            term = term * f
        total = total + term * coef
    return total


def _certificate(kind: str, n: int) -> sympy.Poly:
    return sympy.Poly(CERTIFICATES[kind][n](_P, _R), _P, _R)


def _np_margin(kind: str, case, u: np.ndarray) -> float:
    a, c = _case_values(case, float(u[0, 0]), float(u[1, 0]))
    return float(MARGINS[kind](a, c, abs))


def _sum(alpha, W, b, x, part: slice) -> sympy.MatrixBase:
    r""":math:`\sum_{j\in\text{part}} \alpha_j\sigma(W_j x + b_j)` as a :math:`1\times1` matrix (rows ``part``)."""
    return alpha[part, :].T * elementwise(SIGMA, W[part, :] * x + b[part, :])


def _np_sum(alpha, W, b, x, idx) -> float:
    return float(sum(alpha[j, 0] / (1.0 + np.exp(-(W[j, :] @ x[:, 0] + b[j, 0]))) for j in idx))


def _halves(N: int) -> tuple[range, range]:
    """Λ1 = {1..⌈N/2⌉}, Λ2 = the rest (0-based ranges)."""
    n1 = (N + 1) // 2
    return range(n1), range(n1, N)


#: Readings of the sums named by a display: which bias symbol, and which index set for the second sum.
Struct = tuple[str, str]  # (bias of the later display, second-sum index rule: "lambda2" | "first_N2")


def _idx2(N: int, rule: str) -> range:
    return _halves(N)[1] if rule == "lambda2" else range(N - len(_halves(N)[0]))


def _parts(N, rule: str = "lambda2") -> tuple[slice, slice]:
    r"""Row slices of :math:`\Lambda_1` and of the second sum (:math:`\Lambda_2`, or literally the first N_2)."""
    n1, n2 = halves(N)
    return slice(None, n1), slice(n1, None) if rule == "lambda2" else slice(None, n2)


@functools.cache
def step(kind: str, later: Struct = ("b", "lambda2"), earlier: str = "b") -> Identity:
    r"""One implication of the chain: structural rows (later display's :math:`S_1, S_2` = earlier's) + certificates.

    ``later = (bias, rule)``: the later display's bias symbol (``"b"`` or ``"theta"``) and its second sum
    (``"lambda2"``: over :math:`\Lambda_2`; ``"first_N2"``: literally :math:`\sum_{j=1}^{N_2}`).
    ``earlier``: the bias symbol of the earlier display.
    """
    bias, rule = later

    shapes = {"alpha": ("N", 1), "W": ("N", "n"), "b": ("N", 1), "theta": ("N", 1), "x": ("n", 1), "u": (2, 1)}

    def lhs(alpha, W, b, theta, x, u, N):
        later_bias = {"b": b, "theta": theta}[bias]
        rows = [_sum(alpha, W, later_bias, x, part) for part in _parts(N, rule)]
        return sympy.ImmutableMatrix.vstack(*rows, *(_poly_row(_resolved_margin(kind, c), u) for c in CASES))

    def rhs(alpha, W, b, theta, x, u, N):
        earlier_bias = {"b": b, "theta": theta}[earlier]
        rows = [_sum(alpha, W, earlier_bias, x, part) for part in _parts(N)]
        return sympy.ImmutableMatrix.vstack(*rows, *(_poly_row(_certificate(kind, n), u) for n in range(len(CASES))))

    def reference(alpha, W, b, theta, x, u, N):
        later_bias = {"b": b, "theta": theta}[bias]
        rows = [_np_sum(alpha, W, later_bias, x, _halves(N)[0]), _np_sum(alpha, W, later_bias, x, _idx2(N, rule))]
        return np.array(rows + [_np_margin(kind, c, u) for c in CASES])

    return Identity(shapes=shapes, lhs=lhs, rhs=rhs, dims=dims_grid(N=(1, 2, 3, 4), n=(1, 2)), reference=reference,
                    random_dims={"N": 5, "n": 3},
                    scope="Rows 1-2: the sums $S_1$, $S_2$ named by the later display equal those of the earlier one "
                          r"($\Lambda_1$ = first $\lceil N/2\rceil$ indices). Rows 3-10: in each of the 8 exhaustive "
                          "sign/dominance cases the margin (|.| resolved by SymPy for real u) equals a sum of "
                          "squares with non-negative coefficients, so the implication holds for all reals and every "
                          r"$\varepsilon$.")


def split_identity() -> Identity:
    r"""Eq. 13 ⇒ Eq. 14: :math:`\sum_{j=1}^N t_j = \sum_{\Lambda_1}t_j + \sum_{\Lambda_2}t_j` for every partition.

    The dimension ``P`` numbers the partition (:func:`~symuat.algebra.partitions.partition_indicator`:
    :math:`j\in\Lambda_1` iff bit :math:`j` of ``P - 1`` mod :math:`2^N` is set), so all :math:`2^N`
    partitions are covered for :math:`N\le 3`.
    """
    def rhs(alpha, W, b, x, N, P):
        in_lambda1 = partition_indicator(N, P)
        t = elementwise(SIGMA, W * x + b)
        return alpha.T * diag_vector(in_lambda1) * t + alpha.T * diag_vector(ones(N) - in_lambda1) * t

    return Identity(
        shapes={"alpha": ("N", 1), "W": ("N", "n"), "b": ("N", 1), "x": ("n", 1)},
        lhs=lambda alpha, W, b, x: _sum(alpha, W, b, x, slice(None)),
        rhs=rhs,
        dims=dims_grid(N=(1, 2, 3), n=(1, 2), P=tuple(range(1, 9))),
        reference=lambda alpha, W, b, x, N: np.array([_np_sum(alpha, W, b, x, range(N))]),
        random_dims={"N": 6, "n": 3, "P": 38},
        scope=r"All $2^N$ partitions ($\Lambda_1$, $\Lambda_2$) for $N \le 3$, $n \le 2$; the float/exact levels use "
              "$N = 6$ and mask 37.")


def random_search(seed: int, trials: int = 20000) -> dict[str, int]:
    r"""Random real instances of the chain, with the logistic σ: count violations of each printed step.

    ε is set just above :math:`|S-f|`, so Eq. 13/14 hold; partitions are random and :math:`S_2` is *not*
    small (the hypothesis is not imposed).  ``theta_distinct`` counts violations of Eq. 15 when
    :math:`\theta_j` is read as a parameter independent of :math:`b_j`.  All instances at once: each has
    :math:`N \le 8` hidden units and :math:`n \le 3` inputs, the rest of its arrays masked to 0.
    """
    rng = np.random.default_rng([seed, 13])
    N, n = rng.integers(1, 9, size=trials), rng.integers(1, 4, size=trials)
    unit = np.arange(8) < N[:, None]
    x = np.where(np.arange(3) < n[:, None], rng.standard_normal((trials, 3)), 0.0)
    alpha, W = rng.standard_normal((trials, 8)) * 3, rng.standard_normal((trials, 8, 3))
    b, theta, f = rng.standard_normal((trials, 8)), rng.standard_normal((trials, 8)), 3 * rng.standard_normal(trials)
    lam1 = rng.random((trials, 8)) < 0.5
    z = np.einsum("tjk,tk->tj", W, x)

    def sums(bias):  # S_1, S_2: the σ-terms over Λ_1 and Λ_2 (masked terms are exactly 0)
        t = np.where(unit, alpha / (1 + np.exp(-(z + bias))), 0.0)
        return np.where(lam1, t, 0.0).sum(axis=1), np.where(lam1, 0.0, t).sum(axis=1)

    S1, S2 = sums(b)
    T1, T2 = sums(theta)
    eps = np.abs(S1 + S2 - f) * (1 + 1e-9) + 1e-12 + 1e-3 * rng.random(trials)
    slack = 1e-12 * (1 + np.abs(S1) + np.abs(S2) + np.abs(f))  # rounding: Λ_2 = ∅ gives equality
    return {"eq15": int(np.count_nonzero(~(np.abs(np.abs(S1 - f) - np.abs(S2)) < eps))),
            "eq16": int(np.count_nonzero(~(np.abs(S1 - f) < eps + np.abs(S2)))),
            "eq16_from_eq14": int(np.count_nonzero(~(np.abs(S1 - f) <= np.abs(S1 + S2 - f) + np.abs(S2) + slack))),
            "theta_distinct": int(np.count_nonzero(~(np.abs(np.abs(T1 - f) - np.abs(T2)) < eps)))}


def _search_proxy(seed: int) -> tuple[Evidence, ...]:
    bad = random_search(seed)
    ok = bad["eq15"] == bad["eq16"] == bad["eq16_from_eq14"] == 0 and bad["theta_distinct"] > 0
    return (Evidence(Level.FLOAT, ok,
                     f"20000 random real instances (N <= 8, random partitions, |S_2| not small, ε just above |S-f|, "
                     f"seed {seed}): violations of Eq. 15: {bad['eq15']}, of Eq. 16: {bad['eq16']}, of the triangle "
                     f"route Eq. 14 ⇒ Eq. 16: {bad['eq16_from_eq14']}; with θ_j independent of b_j, Eq. 15 fails in "
                     f"{bad['theta_distinct']} instances"),)


def layer_removal(seed: int, depth: int = 3) -> list[tuple[int, float, float]]:
    r"""Drop the j-th σ-term of the DUAT form vs remove block j from a random standard Transformer stack.

    Returns ``(j, ‖term j‖/‖x'_L‖, ‖x'_L − x'_L(without block j)‖/‖x'_L‖)``.
    """
    rng = np.random.default_rng([seed, 16])
    stack = random_stack(rng, depth, 4, 2, 6, kind="standard", activation="gelu_tanh")
    X = rng.standard_normal((3, 4))
    form = duat_form(stack, X)
    full = form.terms.total
    norm = float(np.linalg.norm(full))
    out = []
    for j in range(depth):
        term = float(np.linalg.norm(form.terms.sigma_terms[j])) / norm
        pruned = TransformerStack(tuple(b for k, b in enumerate(stack.blocks) if k != j), stack.kind, stack.activation)
        removed = vec_r(forward(pruned, X)[-1])
        out.append((j + 1, term, float(np.linalg.norm(full - removed)) / norm))
    return out


def _layer_proxy(seed: int) -> tuple[Evidence, ...]:
    rows = layer_removal(seed)
    differ = all(abs(a - b) > 0.05 * max(a, b) for _, a, b in rows)
    detail = "; ".join(f"j={j}: drop σ-term {a:.3f}, remove block {b:.3f}" for j, a, b in rows)
    return (Evidence(Level.FLOAT, differ,
                     f"random depth-3 standard Transformer (N=3, M=4, seed {seed}), relative change of x'_L: {detail}. "
                     f"Eq. 16 bounds the first number (one σ-term of one sum), not the second (a layer)"),)


# ------------------------------------------------------------------ transcriptions (as printed)

def _S(lam: str, bias: str, W: str = r"\mathbf{W}_j^{\mathrm{T}}") -> str:
    return rf"\sum_{{j \in \Lambda_{lam}}} \alpha_j \sigma \left({W} \mathbf{{x}} + {bias}_j \right)"


_WJ = r"\mathbf{W} j^{\mathrm{T}}"
_TH = r"\theta"
_D13 = (r"\left|\sum_{j=1}^{N} \alpha_{j} \sigma \left(\mathbf{W}_{j}^{\mathrm{T}} \mathbf{x} + b_{j}\right) "
        r"- f(\mathbf{x})\right| < \varepsilon")
_D14 = rf"\left| {_S(1, 'b', _WJ)} + {_S(2, 'b')} - f(\mathbf{{x}}) \right| < \varepsilon"
_D15 = rf"\left| \left| {_S(1, _TH)} - f(\mathbf{{x}}) \right| - \left| {_S(2, _TH)} \right| \right| < \varepsilon"
_D16 = rf"\left| {_S(1, 'b')} - f(\mathbf{{x}}) \right| < \varepsilon + \left| {_S(2, 'b', _WJ)} \right|"
_T13 = _D13.replace("b_{j}", r"\theta_{j}")
_T14 = rf"\left| {_S(1, _TH, _WJ)} + {_S(2, _TH)} - f(\mathbf{{x}}) \right| < \varepsilon"
_T15_004 = (rf"\big| \left| {_S(1, _TH)} - f(\mathbf{{x}}) \right| - \left| {_S(2, _TH, _WJ)} \right| "
            r"\big| < \varepsilon")
_T15_000 = rf"\left| \left| {_S(1, _TH)} - f(\mathbf{{x}}) \right| - \left| {_S(2, _TH)} \right| \right| < \varepsilon"
_T16 = (r"\left|\sum_{j=1}^{N_{1}}\alpha_{j}\sigma\left(\mathbf{W}j^{\mathrm{T}}\mathbf{x}+\theta_{j}\right)"
         r"-f(\mathbf{x})\right| < "
         r"\varepsilon+\left|\sum_{j=1}^{N_{2}}\alpha_{j}\sigma\left(\mathbf{W}_{j}^{\mathrm{T}}"
         r"\mathbf{x}+\theta_{j}\right)\right|")

_HYP = (r"\Lambda = \{1, 2...N\}, \Lambda_1 \cup \Lambda_2 = \Lambda, \Lambda_1 \cap \Lambda_2 = \emptyset, "
        r"|\sum_{j \in \Lambda_2} \alpha_j \sigma(\mathbf{W}_j^\mathrm{T} \mathbf{x} + \theta_j)| \to 0")
_REMOVE = r"\text{when parameters in certain layers are small enough, we can directly remove those layers}"
_THETA = "whether θ_j (undefined in seed 001) is the bias b_j of Eq. 13, or a parameter of its own"
_N12 = "what Σ_{j=1}^{N_1}, Σ_{j=1}^{N_2} sum over: Λ_1, Λ_2 renumbered, or literally the first N_1, N_2 terms"
_WJ_NOTE = (r" The printed $\mathbf{W}\,j^{\mathrm{T}}$ is read as $\mathbf{W}_j^{\mathrm{T}}$: a typesetting slip "
            "that changes nothing.")
_UNUSED = (r" The hypothesis $|\sum_{\Lambda_2}| \to 0$ is not used: the implication holds for every partition.")


def _theta_readings(kind: str) -> Readings:
    return Readings(_THETA, {"θ_j is b_j": step(kind, ("b", "lambda2"), "b"),
                             "θ_j independent of b_j": step(kind, ("theta", "lambda2"), "b")})


def _n12_readings() -> Readings:
    return Readings(_N12, {"Λ_1, Λ_2 renumbered": step("from15", ("theta", "lambda2"), "theta"),
                           "first N_1, N_2 terms": step("from15", ("theta", "first_N2"), "theta")})


def _premise_proxy(seed: int) -> tuple[Evidence, ...]:
    from .uat_theory import eq2_proxy
    return eq2_proxy(seed)


def entries() -> list[Entry]:
    premise = Prose("Eq. 13 is the premise of the argument: Eq. 2 instantiated with Eq. 1 (an existence statement, "
                    "see Eq. 2). Proxy: the least-squares fits of Eq. 2.", _premise_proxy)
    split = split_identity()
    hyp_reason = (r"'$|\sum_{\Lambda_2} \dots|$ $\to$ 0' is informal: at a fixed x the sum is a number, nothing tends "
                  r"to 0; the intended meaning is '$sup_x |S_2(x)| \le\delta$ small'. It is not used by Eq. 14–16, "
                  r"which hold for every partition; it only lets Eq. 16 be read as $|S_1$ $-$ f| $<$ $\varepsilon+ "
                  r"\delta$. Proxy: random real instances of the chain with $|S_2|$ NOT small, looking for "
                  "counterexamples.")
    remove_reason = ("Eq. 13–16 are about the terms (hidden units) of ONE finite sum, not about layers; a layer of a "
                     r"Transformer is not a term of Eq. 1. In the DUAT form the $\sigma-terms$ are indexed by layers, "
                     r"but removing block j also changes $\tilde{A}$, $\tilde{U}_k$ ($k < j$) and every "
                     r"$\tilde{\beta}_k$ ($k > j$). Proxy: dropping the j-th $\sigma-term$ vs removing block j on a "
                     "random stack.")
    return [
        Entry("duat:eq13", "§4.3, Eq. 13", _D13 + r"\quad\text{for all } \mathbf{x}\in\mathbf{I}_n", Status.PROSE,
              premise),
        Entry("duat:eq14", "§4.3, Eq. 13 ⇒ Eq. 14", _D14, Status.PROVED, split,
              note=r"Eq. 14 is Eq. 13 with the sum split over $\Lambda_1 \cup\Lambda_2$ (an identity of the left-hand "
                   "sides)."
                   + _WJ_NOTE),
        Entry("duat:eq15", "§4.3, Eq. 14 ⇒ Eq. 15 (reverse triangle inequality)", _D15, Status.CONVENTION,
              _theta_readings("reverse"),
              note=r"||a| $-$ |c|| $\le$ |a + c| with $a = S_1 - f$, $c = S_2$. Eq. 14 uses $b_j$, Eq. 15 $\theta_j$: "
                   r"as printed the two displays are about different sums unless $\theta_j = b_j$ (the UAT arXiv "
                   r"version uses $\theta_j$ throughout). Also holds for vector outputs with any norm." + _UNUSED),
        Entry("duat:eq16", "§4.3, Eq. 15 ⇒ Eq. 16", _D16, Status.CONVENTION, _theta_readings("from15"),
              note=r"$|a| - |c| \le ||a| - |c||$. Eq. 16 returns to $b_j$ (and the printed "
                   r"$\mathbf{W}\,j^{\mathrm{T}}$) after Eq. 15's "
                   r"$\theta_j$." + _WJ_NOTE
                   + " Eq. 16 also follows from Eq. 14 directly (duat:eq16.step1)." + _UNUSED),
        Entry("duat:eq16.step1", "§4.3, Eq. 14 ⇒ Eq. 16 (triangle inequality; the route without θ_j)", _D16,
              Status.PROVED, step("triangle"),
              note=r"Not a printed step: $|S_1$ $-$ f| $\le$ $|S_1 + S_2$ $-$ f| + $|S_2|$, so Eq. 16 holds whenever "
                   r"Eq. 14 does, without Eq. 15 and its $\theta_j$." + _UNUSED),
        Entry("duat:sec4.3.claim1", "§4.3, hypothesis", _HYP, Status.PROSE,
              Prose(hyp_reason, _search_proxy),
              note=r"The hypothesis uses $\theta_j$ while Eq. 13/14 use $b_j$ (see duat:eq15)."),
        Entry("duat:sec4.3.claim2", "§4.3, text after Eq. 16", _REMOVE, Status.PROSE,
              Prose(remove_reason, _layer_proxy),
              note=r"Eq. 16 bounds the error of dropping $\Lambda_2$ by $\varepsilon+ |S_2|$, i.e. pruning hidden "
                   r"units of one layer (or one $\sigma-term$ of the DUAT sum with all other table entries kept), not "
                   "removing layers."),
        # seed 000 (OCR): Eq. 12-15
        Entry("uat-aaai:eq12", "§4.3, Eq. 12", _T13, Status.PROSE, premise,
              note=r"OCR garbled; transcribed from the UAT arXiv version Eq. 9 ($\theta_j$)."),
        Entry("uat-aaai:eq13", "§4.3, Eq. 12 ⇒ Eq. 13", _T14, Status.PROVED, split,
              note=r"OCR garbled; transcribed from the UAT arXiv version Eq. 10. $\theta_j$ throughout (it is the "
                   "bias)."),
        Entry("uat-aaai:eq14", "§4.3, Eq. 13 ⇒ Eq. 14", _T15_000, Status.PROVED,
              step("reverse", ("theta", "lambda2"), "theta"),
              note=r"OCR garbled; $\theta_j$ in both displays, so no reading is needed." + _UNUSED),
        Entry("uat-aaai:eq15", "§4.3, Eq. 14 ⇒ Eq. 15", _T16, Status.CONVENTION, _n12_readings(),
              note="OCR shows '$N_1' ('Ny$') over the first sum and 'j=1' under the second; transcribed from the UAT "
                   "arXiv version Eq. 12." + _UNUSED),
        Entry("uat-aaai:sec4.3.claim1", "§4.3, text after Eq. 15", _REMOVE, Status.PROSE,
              Prose(remove_reason, _layer_proxy)),
        # seed 004: Eq. 9-12
        Entry("uat-arxiv:eq9", "§4.3, Eq. 9", _T13, Status.PROSE, premise),
        Entry("uat-arxiv:eq10", "§4.3, Eq. 9 ⇒ Eq. 10", _T14, Status.PROVED, split, note=_WJ_NOTE.strip()),
        Entry("uat-arxiv:eq11", "§4.3, Eq. 10 ⇒ Eq. 11", _T15_004, Status.PROVED,
              step("reverse", ("theta", "lambda2"), "theta"), note=_WJ_NOTE.strip() + _UNUSED),
        Entry("uat-arxiv:eq12", "§4.3, Eq. 11 ⇒ Eq. 12", _T16, Status.CONVENTION, _n12_readings(),
              note=r"$\sum_{j=1}^{N_1} / \sum_{j=1}^{N_2}$: holds when $\Lambda_1 = {1..N_1}$ and $\Lambda_2$ is "
                   "renumbered $1..N_2 (N_1 + N_2 = N)$; read literally the second sum is over the first $N_2$ "
                   r"terms, not $\Lambda_2$ (smallest counterexample $N = 2$)." + _WJ_NOTE + _UNUSED),
        Entry("uat-arxiv:sec4.3.claim1", "§4.3, hypothesis",
              _HYP.replace(r"\Lambda_2} \alpha", r"\Lambda_1} \alpha"), Status.PROSE, Prose(hyp_reason, _search_proxy),
              note=r"The UAT arXiv version assumes $|\sum_{\Lambda_1} \dots| \to 0$ (twice) but then keeps "
                   r"$\Lambda_1$ and bounds the error by $|\sum_{\Lambda_2}|$: with its own hypothesis Eq. 12 would "
                   r"say the NEGLIGIBLE part approximates f. The DUAT and UAT conference versions assume $\Lambda_2$; "
                   r"read $\Lambda_1$ as a typo for $\Lambda_2$. No equation depends on it."),
        Entry("uat-arxiv:sec4.3.claim2", "§4.3, text after Eq. 12", _REMOVE, Status.PROSE,
              Prose(remove_reason, _layer_proxy)),
    ]
