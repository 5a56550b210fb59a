r"""The UAT form (seed 001 Eq. 1–2, seed 000 Eq. 1–2, seed 004 Eq. 1–2) and the DUAT definition (seed 001 Eq. 4).

Eq. 1 is Cybenko's finite sum

.. math::
    G(\mathbf x) = \sum_{j=1}^{N}\alpha_j\,\sigma(\mathbf W_j^{\mathsf T}\mathbf x + b_j)

(seed 004 and seed 000 write :math:`\theta_j` for :math:`b_j`).  It is checked on a concrete network:
a one-hidden-layer network :math:`W_2\sigma(W_1\mathbf x + \mathbf b_1)` *is* this sum with
:math:`\alpha_j = (W_2)_{:,j}`, :math:`\mathbf W_j = (W_1)_{j,:}^{\mathsf T}`, :math:`b_j = (\mathbf b_1)_j`.
The multi-output extension of §2.1 is audited under both printed readings of :math:`\alpha_j`
("reshaped into a matrix", seeds 001/000; "a diagonal vector", seed 004).

Eq. 2 is an existence (density) statement: it is prose, with a least-squares proxy.

Eq. 4, :math:`\mathbf y_i = G(\mathbf x_i\,|\,\mathbf W(\mathbf x_i), \mathbf b(\mathbf x_i))`, is a
definition; it is audited on real Transformer stacks (:mod:`symuat.numeric`): which Eq. 20 parameters
vary with the input, against :data:`symuat.numeric.DYNAMIC`, plus the identity that makes the
attention's bias static (rows of :math:`H` sum to one).
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from symuat import Entry, Evidence, Identity, Level, Prose, Readings, Status, dims_grid
from symuat.algebra.families import col_block, diag_vector, family_sum, row_block
from symuat.algebra.matrices import elementwise, kron, ones, vec_r
from symuat.algebra.splits import but_last
from symuat.evidence.fields import SIGMA, logistic
from symuat.numeric import DYNAMIC, KINDS, duat_form, random_stack

__all__ = ["ffn", "np_ffn", "ffn_is_eq1", "multi_output", "static_attention_bias", "least_squares_errors",
           "measured_dynamic",
           "entries"]


def ffn(W1, b1, W2, x) -> sympy.ImmutableMatrix:
    r""":math:`W_2\sigma(W_1\mathbf x + \mathbf b_1)` as a matrix expression (σ entrywise)."""
    return sympy.ImmutableMatrix(W2 * elementwise(SIGMA, W1 * x + b1))


def np_ffn(W1, b1, W2, x) -> np.ndarray:
    """:func:`ffn` in NumPy with the logistic σ."""
    return W2 @ logistic(W1 @ x + b1)


@functools.cache
def ffn_is_eq1() -> Identity:
    r"""Eq. 1 with scalar output: :math:`W_2\sigma(W_1x+b_1) = \sum_j \alpha_j\sigma(\mathbf W_j^{\mathsf T}x+b_j)`."""
    def eq1(W1, b1, W2, x, N):
        def unit(j):  # alpha_j sigma(W_j^T x + b_j), W_j = (W1)_{j,:}^T in R^n, as a 1x1 matrix
            return col_block(W2, j, 1) * elementwise(SIGMA, row_block(W1, j, 1) * x + row_block(b1, j, 1))
        return family_sum(unit, N)

    return Identity(shapes={"W1": ("N", "n"), "b1": ("N", 1), "W2": (1, "N"), "x": ("n", 1)},
                    lhs=ffn, rhs=eq1, dims=dims_grid(N=(1, 2, 3, 4), n=(1, 2, 3)),
                    reference=np_ffn, random_dims={"N": 6, "n": 4},
                    scope="Every entry is polynomial in the weights and the sigma values, so the grid covers all "
                          "index patterns up to $N = 4$ units, $n = 3$ inputs.")


@functools.cache
def multi_output(reading: str) -> Identity:
    r"""The §2.1 extension to :math:`G:\mathbb R^n\to\mathbb R^m` under one reading of :math:`\alpha_j`.

    ``matrix`` (seeds 001/000): :math:`\mathbf W_j\in\mathbb R^{n\times m}`, :math:`b_j\in\mathbb R^m`,
    :math:`\alpha_j\in\mathbb R^{m\times m}`; an FFN with :math:`Nm` hidden units is
    :math:`\sum_j \alpha_j\sigma(\mathbf W_j^{\mathsf T}x+b_j)` with the hidden units grouped in blocks of m.
    ``diagonal`` (seed 004): :math:`\alpha_j` a vector acting entrywise; an FFN with N hidden units is
    :math:`\sum_j \operatorname{diag}(\alpha_j)\sigma(\mathbf W_j^{\mathsf T}x+\theta_j)` with
    :math:`\alpha_j = (W_2)_{:,j}`, every column of :math:`\mathbf W_j` equal to :math:`(W_1)_{j,:}^{\mathsf T}`,
    :math:`\theta_j = (b_1)_j\mathbf 1_m`.
    """
    k = "N*m" if reading == "matrix" else "N"  # hidden units
    shapes = {"W1": (k, "n"), "b1": (k, 1), "W2": ("m", k), "x": ("n", 1)}

    def form(W1, b1, W2, x, N, m):
        def unit(j):
            if reading == "matrix":
                Wj, bj, aj = row_block(W1, j, m).T, row_block(b1, j, m), col_block(W2, j, m)
            else:
                Wj = row_block(W1, j, 1).T * ones(m).T
                bj, aj = ones(m) * row_block(b1, j, 1), diag_vector(col_block(W2, j, 1))
            return aj * elementwise(SIGMA, Wj.T * x + bj)
        return family_sum(unit, N)

    return Identity(shapes=shapes, lhs=ffn, rhs=form, dims=dims_grid(N=(1, 2, 3), m=(1, 2), n=(1, 2)),
                    reference=np_ffn, random_dims={"N": 3, "m": 3, "n": 4},
                    scope=r"Polynomial in the weights and sigma values; $N \le 3$ terms, $m \le 2$ outputs, $n \le 2$ "
                          "inputs.")


def static_attention_bias() -> Identity:
    r"""A value/output bias of attention is a *static* bias: for any row-stochastic :math:`H` (softmax rows sum to 1)

    .. math::
        \operatorname{vec}_r\big(H(XW_V+\mathbf 1b_V^{\mathsf T})W_O+\mathbf 1b_O^{\mathsf T}\big)
        = (H\otimes(W_VW_O)^{\mathsf T})\operatorname{vec}_r(X) + \mathbf 1_N\otimes(W_O^{\mathsf T}b_V+b_O).

    The bias term contains neither X nor H: with the FFN's :math:`\mathbf 1_N\otimes b_2` it is the paper
    block's :math:`\mathbf b'_{i,3}`, which is therefore static; :math:`\mathbf W'_{i,3}=I_N\otimes W_2^{\mathsf T}`
    contains no X at all.
    """
    def stochastic(H, N):
        free = but_last(N)  # the last column is 1 minus the sum of the N - 1 others
        return sympy.ImmutableMatrix.hstack(H[:, :free], ones(N) - H[:, :free] * ones(N)[:free, :])

    def np_stochastic(H):
        out = H.copy()
        out[:, -1] = 1.0 - out[:, :-1].sum(axis=1)
        return out

    shapes = {"H": ("N", "N"), "X": ("N", "M"), "WV": ("M", "M"), "WO": ("M", "M"), "bV": ("M", 1), "bO": ("M", 1)}

    def lhs(H, X, WV, WO, bV, bO, N):
        return vec_r(stochastic(H, N) * (X * WV + ones(N) * bV.T) * WO + ones(N) * bO.T)

    def rhs(H, X, WV, WO, bV, bO, N):
        return kron(stochastic(H, N), (WV * WO).T) * vec_r(X) + kron(ones(N), WO.T * bV + bO)

    def ref(H, X, WV, WO, bV, bO):
        return (np_stochastic(H) @ (X @ WV + bV.T) @ WO + bO.T).reshape(-1)

    return Identity(shapes=shapes, lhs=lhs, rhs=rhs, dims=dims_grid(N=(1, 2, 3), M=(1, 2)), reference=ref,
                    random_dims={"N": 4, "M": 3},
                    scope="H is any row-stochastic matrix (last column 1 - sum of the others), which covers every "
                          "softmax attention matrix.")


def least_squares_errors(seed: int, sizes=(4, 16, 64, 256)) -> list[tuple[int, float, float]]:
    r"""Fit :math:`f(x)=\sin(2\pi x)+x/2` on [0, 1] by Eq. 1 with N random sigmoid units (nested pools).

    Returns ``(N, training RMS error, sup error on a 4x finer test grid)``; the units of size N are the
    first N of one random pool, so the training error cannot increase with N.
    """
    rng = np.random.default_rng([seed, 2])
    def f(x):
        return np.sin(2 * np.pi * x) + 0.5 * x
    slopes = rng.uniform(5.0, 40.0, max(sizes)) * rng.choice([-1.0, 1.0], max(sizes))
    centres = rng.uniform(-0.1, 1.1, max(sizes))
    train, test = np.linspace(0, 1, 513), np.linspace(0, 1, 2049)
    out = []
    for N in sizes:
        def feats(x):
            return logistic(slopes[:N] * (x[:, None] - centres[:N]))
        alpha, *_ = np.linalg.lstsq(feats(train), f(train), rcond=None)
        rms = float(np.sqrt(np.mean((feats(train) @ alpha - f(train)) ** 2)))
        out.append((N, rms, float(np.max(np.abs(feats(test) @ alpha - f(test))))))
    return out


def eq2_proxy(seed: int) -> tuple[Evidence, ...]:
    errs = least_squares_errors(seed)
    rms = [e[1] for e in errs]
    ok = all(b <= a + 1e-10 for a, b in zip(rms, rms[1:])) and errs[-1][2] < 1e-2
    table = "; ".join(f"N={n}: rms {r:.1e}, sup {s:.1e}" for n, r, s in errs)
    return (Evidence(Level.FLOAT, ok, f"least-squares fit of sin(2πx)+x/2 on [0,1] by Eq. 1 with N random logistic "
                                      f"units (seed {seed}): {table}; the error falls with N, as density predicts"),)


def measured_dynamic(seed: int, kinds=KINDS, depth: int = 2) -> dict[str, frozenset]:
    r"""For each block kind, the Eq. 20 parameters that differ between two random inputs of a random stack."""
    rng = np.random.default_rng([seed, 4])
    out = {}
    for kind in kinds:
        stack = random_stack(rng, depth, 4, 2, 5, kind=kind, activation="gelu_tanh")
        X, Y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
        fx, fy = duat_form(stack, X), duat_form(stack, Y)
        varying = set()
        for i in range(1, depth + 1):
            for field, k in (("W1", 1), ("W2", 2), ("W3", 3)):
                name = f"W'_{{{i},{k}}}"
                a, b = fx.parameter(name).to_dense(), fy.parameter(name).to_dense()
                if np.max(np.abs(a - b)) > 1e-10 * max(1.0, np.max(np.abs(a))):
                    varying.add(field)
            for field, k in (("b2", 2), ("b3", 3)):
                a, b = fx.parameter(f"b'_{{{i},{k}}}"), fy.parameter(f"b'_{{{i},{k}}}")
                if np.max(np.abs(a - b)) > 1e-10 * max(1.0, np.max(np.abs(a))):
                    varying.add(field)
        out[kind] = frozenset(varying)
    return out


def eq4_proxy(seed: int) -> tuple[Evidence, ...]:
    got = measured_dynamic(seed)
    ok = all(got[k] == DYNAMIC[k] for k in got)
    detail = "; ".join(f"{k}: varies {sorted(got[k])}, static {sorted({'W1', 'W2', 'W3', 'b2', 'b3'} - got[k])}"
                       for k in got)
    return (Evidence(Level.FLOAT, ok, f"random depth-2 stacks (N=3, M=4, 2 heads, F=5, seed {seed}), Eq. 20 "
                                      f"parameters at two random inputs: {detail}; "
                                      f"{'matches' if ok else 'DIFFERS FROM'} symuat.numeric.DYNAMIC"),)


_EQ1 = r"G(\mathbf{x}) = \sum_{j=1}^{N} \alpha_j \sigma \left(\mathbf{W}_j^{\mathrm{T}} \mathbf{x} + b_j \right)"
_EQ1_THETA = (r"G(\mathbf{x})=\sum_{j=1}^{N}\alpha_{j}\sigma\left(\mathbf{W}_{j}^{\mathrm{T}}\mathbf{x}"
              r"+\theta_{j}\right)")
_EQ2 = r"|G(\mathbf{x}) - f(\mathbf{x})| < \varepsilon"
_EQ2_ALL = r"|G(\mathbf{x})-f(\mathbf{x})|<\varepsilon\quad\text{ for all }\quad\mathbf{x}\in\mathbf{I}_{n}."
_EQ1_NOTE = (r"Checked as: a one-hidden-layer network $W_2 \sigma(W_1$ $x + b_1$) (scalar output) IS the finite sum "
             r"with $\alpha_j = (W_2)_{1j}$, $W_j$ = j-th row of $W_1$, $b_j = (b_1)_j$. Density (Eq. 2) is a "
             "separate entry.")
_EQ2_REASON = ("Eq. 2 is Cybenko's density theorem (an existence statement over all continuous f and all "
               r"$\varepsilon> 0$): no finite computation proves it. Proxy: least-squares fits of a fixed continuous "
               "f with growing N; the error falls with N (it does not prove density, it only illustrates it).")
_EXT = (r"\mathbf{W}_j \in \mathbb{R}^{n\times m},\ b_j \in \mathbb{R}^m,\ \alpha_j \text{ is reshaped into a matrix}")
_EXT_004 = (r"\mathbf{W}_{j} \in \mathbb{R}^{n\times m},\ \theta_{j} \in \mathbb{R}^{m},\ \alpha_{j} "
            r"\text{ is reshaped into a diagonal vector}")
_EXT_CONV = "the shape of α_j in the multi-output extension: an m×m matrix (seeds 001/000) or a diagonal (seed 004)"
_EXT_NOTE = (r"Both readings hold: an FFN with m outputs is $\sum_j \alpha_j \sigma(W_j^{T}x + b_j)$ with $\alpha_j$ "
             r"an $m\times m$ block of $W_2$ (hidden units grouped by m) and also $\sum_j diag(\alpha_j) "
             r"\sigma(W_j^{T}x + \theta_j)$ with $\alpha_j$ a column of $W_2$ and every column of $W_j$ equal to a "
             r"row of $W_1$. Note Eq. 1's $W_j \in R^n$ becomes $R^{n\times m}$: the Transformer's FFN is the 'vector "
             r"$\alpha_j'$ case of Eq. 1 applied per output.")
_EQ4 = r"\mathbf{y}_i = G(\mathbf{x}_i | \mathbf{W}(\mathbf{x}_i), \mathbf{b}(\mathbf{x}_i))"
_EQ4_REASON = ("Eq. 4 is a definition (a UAT whose parameters are functions of the input), not an equation to prove. "
               "Proxy: on random Transformer stacks of each block kind, the Eq. 20 parameters are computed at two "
               "inputs; the ones that change are the 'dynamic' parameters of Eq. 4. Paper/standard blocks: "
               "$W'_{i,1}$, $W'_{i,2}$ vary (attention), $W'_{i,3}$, $b'_{i,2}$, $b'_{i,3}$ are static; LayerNorm "
               "makes $b'_{i,2}$ (pre-LN) or everything (post-LN) dynamic.")


def entries() -> list[Entry]:
    ext = Readings(_EXT_CONV, {"matrix": multi_output("matrix"), "diagonal": multi_output("diagonal")})
    theta = r" The {} version writes $\theta_j$ where the DUAT version writes $b_j$ (the same bias)."
    return [
        Entry("duat:eq1", "§2.1, Eq. 1", _EQ1, Status.PROVED, ffn_is_eq1(),
              note=_EQ1_NOTE + r" The text says '$\alpha_j$, $b \in R'$ (b without index)."),
        Entry("uat-aaai:eq1", "§2, Eq. 1", _EQ1_THETA, Status.PROVED, ffn_is_eq1(),
              note=_EQ1_NOTE + theta.format("UAT conference") + " OCR garbled ('Z ajo (Wix+6;)'); transcribed from the "
                                                                "UAT "
                                                     "arXiv version."),
        Entry("uat-arxiv:eq1", "§2, Eq. 1", _EQ1_THETA, Status.PROVED, ffn_is_eq1(),
              note=_EQ1_NOTE + theta.format("UAT arXiv")),
        Entry("duat:eq2", "§2.1, Eq. 2", _EQ2, Status.PROSE, Prose(_EQ2_REASON, eq2_proxy),
              note=r"The DUAT version drops 'for all $x \in I_n'$ from the display (it is in the surrounding text of "
                   "Eq. 13)."),
        Entry("uat-aaai:eq2", "§2, Eq. 2", _EQ2_ALL, Status.PROSE, Prose(_EQ2_REASON, eq2_proxy)),
        Entry("uat-arxiv:eq2", "§2, Eq. 2", _EQ2_ALL, Status.PROSE, Prose(_EQ2_REASON, eq2_proxy)),
        Entry("duat:sec2.1.claim1", "§2.1, text after Eq. 2", _EXT, Status.PROVED, ext, note=_EXT_NOTE),
        Entry("uat-aaai:sec2.claim1", "§2, text after Eq. 2", _EXT.replace("b_j", r"\theta_j"), Status.PROVED,
              ext, note=_EXT_NOTE + r" OCR garbled; transcribed from the DUAT version with $\theta_j$."),
        Entry("uat-arxiv:sec2.claim1", "§2, text after Eq. 2", _EXT_004, Status.PROVED, ext, note=_EXT_NOTE),
        Entry("duat:eq4", "§2.3, Eq. 4", _EQ4, Status.PROSE, Prose(_EQ4_REASON, eq4_proxy),
              note=r"The text defines $W = W_1\cdots W_N$ and $b = b_1\cdots b_N$ (lists, not products). The "
                   "dynamic/static split of the paper's own block is proved symbolically by duat:eq4.part1 (static "
                   "bias) and by the §3.3 entries (duat:sec3.3.claim2) for the DUAT table."),
        Entry("duat:eq4.part1", "§2.3, Eq. 4 on the paper's block: static parameters",
              r"\mathbf{b}'_{i,3} = \mathbf{1}_N\otimes(\mathbf{W}_O^{\mathsf T}\mathbf{b}_V+\mathbf{b}_O+\mathbf{b}_2)"
              r"\text{ and } \mathbf{W}'_{i,3} = \mathbf{I}_N\otimes\mathbf{W}_2^{\mathsf T} \text{ do not depend on } "
              r"\mathbf{x}", Status.PROVED, static_attention_bias(),
              note="Not printed as such: the static half of Eq. 4 for the paper's block (docs/conventions.md). The "
                   "bias of MHA "
                   "is static only because softmax rows sum to one; for a general (non-stochastic) H it would be H 1 "
                   r"$\otimes$ (...), dynamic."),
    ]
