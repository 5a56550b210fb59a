r"""Katharopoulos et al. (2020), *Transformers are RNNs*: kernel attention, its causal form and its recurrence.

$\phi(Q)$ and $\phi(K)$ are the feature maps of the queries and keys ($\phi(x) = \mathrm{elu}(x) + 1 > 0$, Eq. 7),
declared positive (``assume``), so every normaliser is a positive sum.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from symuat import Correction, Entry, Identity, Paper, Status, dims_grid, register_source

from ._shared import causal_mask, exp_entries, normalise_rows, np_causal, np_normalise_rows, np_softmax_rows

register_source(Paper("linattn", "Linear attention", authors=("Angelos Katharopoulos", "Apoorv Vyas",
                                                                "Nikolaos Pappas", "François Fleuret"),
                      title="Transformers are RNNs: Fast Autoregressive Transformers with Linear Attention",
                      venue="ICML 2020", equations=tuple(f"eq{n}" for n in range(1, 13))))

FEATURES = {"PQ": ("N", "F"), "PK": ("N", "F"), "V": ("N", "D")}
POSITIVE = ("PQ > 0", "PK > 0")
GRID = dims_grid(N=(1, 2, 3), F=(1, 2), D=(1, 2))


def kernel(PQ, PK) -> sympy.ImmutableMatrix:
    r"""$A_{ij} = \phi(Q_i)^T\phi(K_j)$."""
    return sympy.ImmutableMatrix(PQ * PK.T)


def causal_attention(PQ, PK, V, N):
    r"""Eq. 8: $V'_i = \sum_{j\le i}\phi(Q_i)^T\phi(K_j)V_j / \sum_{j\le i}\phi(Q_i)^T\phi(K_j)$, as matrices."""
    return normalise_rows(causal_mask(N).multiply_elementwise(kernel(PQ, PK))) * V


def np_causal_attention(PQ, PK, V, N):
    return np_normalise_rows(np_causal(N) * (PQ @ PK.T)) @ V


def _claim(lhs, rhs, reference, shapes=None, dims=GRID, assume=POSITIVE) -> Identity:
    return Identity(shapes or FEATURES, lhs=lhs, rhs=rhs, dims=dims, reference=reference, assume=assume)


def _eq2_rhs(PQ, PK, V, N, D):
    sim = [[PQ.row(i).dot(PK.row(j)) for j in range(N)] for i in range(N)]
    return sympy.Matrix(N, D, lambda i, c: sum(sim[i][j] * V[j, c] for j in range(N)) / sum(sim[i]))


def _eq4_rhs(PQ, PK, V, N, D):
    num = PQ * (PK.T * V)
    den = PQ * (PK.T * sympy.ones(N, 1))
    return sympy.Matrix(N, D, lambda i, c: num[i, c] / den[i, 0])


def _states(PK, V, N):
    r"""Eq. 11: $s_i = s_{i-1} + \phi(K_i)V_i^T$, $z_i = z_{i-1} + \phi(K_i)$, from $s_0 = 0$, $z_0 = 0$."""
    s, z, out = sympy.zeros(PK.cols, V.cols), sympy.zeros(PK.cols, 1), []
    for i in range(N):
        s = s + PK.row(i).T * V.row(i)
        z = z + PK.row(i).T
        out.append((s, z))
    return out


def _rnn(PQ, PK, V, N, D, full_normaliser=False):
    states = _states(PK, V, N)
    rows = []
    for i, (s, z) in enumerate(states):
        z = states[-1][1] if full_normaliser else z
        den = PQ.row(i).dot(z)
        rows.append([PQ.row(i).dot(s.col(c)) / den for c in range(D)])
    return sympy.Matrix(rows)


@functools.cache
def causal_rnn() -> Identity:
    return _claim(causal_attention, _rnn, np_causal_attention)


def _elu1(t):
    return sympy.Piecewise((t + 1, t > 0), (sympy.exp(t), True))


def entries() -> list[Entry]:
    att = r"\operatorname{diag}(A\mathbf 1)^{-1} A V"
    return [
        Entry("linattn:eq2", "Eq. 2", r"V'_i = \frac{\sum_j \mathrm{sim}(Q_i, K_j) V_j}{\sum_j \mathrm{sim}(Q_i, K_j)}",
              Status.PROVED, _claim(lambda PQ, PK, V: normalise_rows(kernel(PQ, PK)) * V, _eq2_rhs,
                                    lambda PQ, PK, V: np_normalise_rows(PQ @ PK.T) @ V)),
        Entry("linattn:eq2.part2", "Eq. 2",
              r"\mathrm{sim} \to c\,\mathrm{sim}\ (c > 0) \text{ leaves } V' \text{ unchanged}",
              Status.PROVED, _claim(lambda PQ, PK, V, c: normalise_rows(c * kernel(PQ, PK)) * V,
                                    lambda PQ, PK, V: normalise_rows(kernel(PQ, PK)) * V,
                                    lambda PQ, PK, V: np_normalise_rows(PQ @ PK.T) @ V,
                                    shapes={**FEATURES, "c": ()}, assume=(*POSITIVE, "c > 0"))),
        Entry("linattn:eq3", "Eq. 3", r"\mathrm{softmax}(QK^T/\sqrt{E})V = \frac{\sum_j e^{Q_i^TK_j/\sqrt E} V_j}"
              r"{\sum_j e^{Q_i^TK_j/\sqrt E}}", Status.PROVED,
              Identity({"Q": ("N", "E"), "K": ("N", "E"), "V": ("N", "D")},
                       lhs=lambda Q, K, V, E: normalise_rows(exp_entries(Q * K.T / sympy.sqrt(E))) * V,
                       rhs=lambda Q, K, V, N, D, E: sympy.Matrix(N, D, lambda i, c: sum(
                           sympy.exp(Q.row(i).dot(K.row(j)) / sympy.sqrt(E)) * V[j, c] for j in range(N)) / sum(
                           sympy.exp(Q.row(i).dot(K.row(j)) / sympy.sqrt(E)) for j in range(N))),
                       dims=dims_grid(N=(1, 2, 3), E=(1, 2), D=(1,)),
                       reference=lambda Q, K, V, E: np_softmax_rows(Q @ K.T / np.sqrt(E)) @ V)),
        Entry("linattn:eq4", "Eq. 4", r"V'_i = \frac{\phi(Q_i)^T\sum_j\phi(K_j)V_j^T}{\phi(Q_i)^T\sum_j\phi(K_j)}",
              Status.PROVED, _claim(lambda PQ, PK, V: normalise_rows(kernel(PQ, PK)) * V, _eq4_rhs,
                                    lambda PQ, PK, V: np_normalise_rows(PQ @ PK.T) @ V)),
        Entry("linattn:eq5", "Eq. 5", r"(\phi(Q)\phi(K)^T)V = \phi(Q)(\phi(K)^TV)", Status.PROVED,
              _claim(lambda PQ, PK, V: kernel(PQ, PK) * V, lambda PQ, PK, V: PQ * (PK.T * V),
                     lambda PQ, PK, V: (PQ @ PK.T) @ V, assume=())),
        Entry("linattn:eq6", "Eq. 6", rf"{att}\,\mathbf 1 = \mathbf 1 \text{{ for }} V = \mathbf 1", Status.PROVED,
              _claim(lambda PQ, PK, N: normalise_rows(kernel(PQ, PK)) * sympy.ones(N, 1),
                     lambda N: sympy.ones(N, 1), lambda PQ, N: np.ones((N, 1)))),
        Entry("linattn:eq7", "Eq. 7", r"\mathrm{elu}(x) + 1 = \max(x, 0) + e^{\min(x, 0)}", Status.PROVED,
              Identity({"x": ("N", 1)}, lhs=lambda x: x.applyfunc(_elu1),
                       rhs=lambda x: x.applyfunc(lambda t: sympy.Max(t, 0) + sympy.exp(sympy.Min(t, 0))),
                       dims=dims_grid(N=(1, 2)), reference=lambda x: np.where(x > 0, x + 1, np.exp(x)))),
        Entry("linattn:eq8", "Eq. 8", r"V'_i = \frac{\sum_{j \le i}\phi(Q_i)^T\phi(K_j)V_j}"
              r"{\sum_{j\le i}\phi(Q_i)^T\phi(K_j)}", Status.PROVED,
              _claim(causal_attention, lambda PQ, PK, V, N, D: sympy.Matrix(N, D, lambda i, c: sum(
                  PQ.row(i).dot(PK.row(j)) * V[j, c] for j in range(i + 1)) / sum(
                  PQ.row(i).dot(PK.row(j)) for j in range(i + 1))), np_causal_attention)),
        Entry("linattn:eq9", "Eq. 9", r"V'_i = \frac{\phi(Q_i)^T S_i}{\phi(Q_i)^T Z_i},\ "
              r"S_i = \sum_{j\le i}\phi(K_j)V_j^T", Status.PROVED,
              _claim(causal_attention, lambda PQ, PK, V, N, D: sympy.Matrix(N, D, lambda i, c: PQ.row(i).dot(
                  (PK[:i + 1, :].T * V[:i + 1, :]).col(c)) / PQ.row(i).dot(PK[:i + 1, :].T * sympy.ones(i + 1, 1))),
                  np_causal_attention)),
        Entry("linattn:eq9.part2", "Eq. 9", r"V'_i = \frac{\phi(Q_i)^T S_i}{\phi(Q_i)^T Z_N}", Status.ERRATUM,
              _claim(causal_attention, functools.partial(_rnn, full_normaliser=True), np_causal_attention),
              correction=Correction(r"V'_i = \frac{\phi(Q_i)^T S_i}{\phi(Q_i)^T Z_i}", causal_rnn()),
              note=r"The normaliser must be causal too: $Z_i$, not $Z_N$."),
        Entry("linattn:eq10", "Eq. 10", r"(M \circ \phi(Q)\phi(K)^T)\mathbf 1 = (\phi(Q_i)^T Z_i)_i",
              Status.PROVED,
              _claim(lambda PQ, PK, N: causal_mask(N).multiply_elementwise(kernel(PQ, PK)) * sympy.ones(N, 1),
                     lambda PQ, PK, N: sympy.Matrix(N, 1, lambda i, _: PQ.row(i).dot(
                         PK[:i + 1, :].T * sympy.ones(i + 1, 1))),
                     lambda PQ, PK, N: (np_causal(N) * (PQ @ PK.T)).sum(axis=1, keepdims=True), assume=())),
        Entry("linattn:eq11", "Eq. 11", r"s_N = \phi(K)^T V \text{ for } s_i = s_{i-1} + \phi(K_i)V_i^T", Status.PROVED,
              _claim(lambda PK, V: PK.T * V, lambda PK, V, N: _states(PK, V, N)[-1][0],
                     lambda PK, V: PK.T @ V, assume=())),
        Entry("linattn:eq11.part2", "Eq. 11", r"z_N = \phi(K)^T\mathbf 1 \text{ for } z_i = z_{i-1} + \phi(K_i)",
              Status.PROVED, _claim(lambda PK, N: PK.T * sympy.ones(N, 1), lambda PK, V, N: _states(PK, V, N)[-1][1],
                                    lambda PK, N: PK.T @ np.ones((N, 1)), assume=())),
        Entry("linattn:eq12", "Eq. 12", r"y_i = \frac{\phi(Q_i)^T s_i}{\phi(Q_i)^T z_i} = V'_i", Status.PROVED,
              causal_rnn()),
        Entry("linattn:eq12.part2", "Eq. 12", r"V'_N = \frac{\phi(Q_N)^T\phi(K)^TV}{\phi(Q_N)^T\phi(K)^T\mathbf 1}",
              Status.PROVED,
              _claim(lambda PQ, PK, V, N: causal_attention(PQ, PK, V, N)[N - 1, :],
                     lambda PQ, PK, V, N: (PQ.row(N - 1) * PK.T * V) / PQ.row(N - 1).dot(PK.T * sympy.ones(N, 1)),
                     lambda PQ, PK, V, N: np_causal_attention(PQ, PK, V, N)[N - 1:, :])),
    ]
