r"""Milakov & Gimelshein (2018), *Online normalizer calculation for softmax*: safe softmax and the online
normaliser, a recurrence through a running maximum (``Max``) and rescaled exponentials."""

from __future__ import annotations

import functools

import numpy as np
import sympy

from symuat import Correction, Entry, Identity, Paper, Status, dims_grid, register_source

register_source(Paper("online-softmax", "Online softmax", authors=("Maxim Milakov", "Natalia Gimelshein"),
                      title="Online normalizer calculation for softmax", venue="arXiv:1805.02867, 2018",
                      equations=("eq1", "eq2", "eq3", "eq4", "eq5")))

GRID = dims_grid(N=(1, 2, 3))


def softmax(x) -> sympy.ImmutableMatrix:
    r"""Algorithm 1: $y_i = e^{x_i} / \sum_j e^{x_j}$ (a column)."""
    e = [sympy.exp(t) for t in x]
    return sympy.ImmutableMatrix(len(e), 1, [t / sum(e) for t in e])


def np_softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def safe_softmax(x) -> sympy.ImmutableMatrix:
    r"""Algorithm 2: $m = \max_k x_k$, $y_i = e^{x_i - m} / \sum_j e^{x_j - m}$."""
    m = sympy.Max(*x)
    e = [sympy.exp(t - m) for t in x]
    return sympy.ImmutableMatrix(len(e), 1, [t / sum(e) for t in e])


def online(x, rescale=True):
    r"""Algorithm 3: $m_j = \max(m_{j-1}, x_j)$, $d_j = d_{j-1}e^{m_{j-1}-m_j} + e^{x_j - m_j}$; every $(m_j, d_j)$."""
    m, d, out = x[0], sympy.Integer(1), [(x[0], sympy.Integer(1))]
    for t in list(x)[1:]:
        new = sympy.Max(m, t)
        d = (d * sympy.exp(m - new) if rescale else d) + sympy.exp(t - new)
        m = new
        out.append((m, d))
    return out


def prefix_normalisers(x) -> sympy.ImmutableMatrix:
    r"""$d_j = \sum_{k \le j} e^{x_k - \max_{l \le j} x_l}$, for every $j$."""
    xs = list(x)
    return sympy.ImmutableMatrix(len(xs), 1, [sum(sympy.exp(t - sympy.Max(*xs[:j + 1])) for t in xs[:j + 1])
                                              for j in range(len(xs))])


def np_prefix_normalisers(x):
    x = x.reshape(-1)
    return np.array([[np.exp(x[:j + 1] - x[:j + 1].max()).sum()] for j in range(x.size)])


@functools.cache
def online_normaliser() -> Identity:
    return Identity({"x": ("N", 1)}, lhs=prefix_normalisers,
                    rhs=lambda x: sympy.ImmutableMatrix([[d] for _, d in online(x)]), dims=GRID,
                    reference=np_prefix_normalisers)


def _merge(x, n1):
    r"""The paper's $\oplus$: $[m_a, d_a] \oplus [m_b, d_b] = [\max(m_a, m_b), d_a e^{m_a - m} + d_b e^{m_b - m}]$."""
    (ma, da), (mb, db) = online(x[:n1, :])[-1], online(x[n1:, :])[-1]
    m = sympy.Max(ma, mb)
    return sympy.ImmutableMatrix([[m], [da * sympy.exp(ma - m) + db * sympy.exp(mb - m)]])


def entries() -> list[Entry]:
    return [
        Entry("online-softmax:eq1", "Eq. 1", r"\mathrm{softmax}(x + c\mathbf 1) = \mathrm{softmax}(x)", Status.PROVED,
              Identity({"x": ("N", 1), "c": ()}, lhs=lambda x, c: softmax(x.applyfunc(lambda t: t + c)), rhs=softmax,
                       dims=GRID, reference=lambda x: np_softmax(x))),
        Entry("online-softmax:eq2", "Alg. 2", r"\frac{e^{x_i - \max_k x_k}}{\sum_j e^{x_j - \max_k x_k}} = "
              r"\frac{e^{x_i}}{\sum_j e^{x_j}}", Status.PROVED,
              Identity({"x": ("N", 1)}, lhs=softmax, rhs=safe_softmax, dims=GRID, reference=np_softmax)),
        Entry("online-softmax:eq2.part2", "Alg. 2", r"\frac{e^{(x_i - m)/\tau}}{\sum_j e^{(x_j - m)/\tau}} = "
              r"\mathrm{softmax}(x/\tau)", Status.PROVED,
              Identity({"x": ("N", 1), "tau": ()}, lhs=lambda x, tau: softmax(x / tau),
                       rhs=lambda x, tau: safe_softmax(x / tau), dims=GRID,
                       reference=lambda x, tau: np_softmax(x / tau), assume=("tau != 0",))),
        Entry("online-softmax:eq3", "Alg. 3", r"m_N = \max_j x_j", Status.PROVED,
              Identity({"x": ("N", 1)}, lhs=lambda x: sympy.ImmutableMatrix([[sympy.Max(*x)]]),
                       rhs=lambda x: sympy.ImmutableMatrix([[online(x)[-1][0]]]), dims=GRID,
                       reference=lambda x: np.array([[x.max()]]))),
        Entry("online-softmax:eq3.part2", "Alg. 3", r"d_j = \sum_{k\le j} e^{x_k - m_j}", Status.PROVED,
              online_normaliser()),
        Entry("online-softmax:eq3.part3", "Alg. 3", r"d_j = d_{j-1} + e^{x_j - m_j}", Status.ERRATUM,
              Identity({"x": ("N", 1)}, lhs=prefix_normalisers,
                       rhs=lambda x: sympy.ImmutableMatrix([[d] for _, d in online(x, rescale=False)]), dims=GRID,
                       reference=np_prefix_normalisers),
              correction=Correction(r"d_j = d_{j-1}e^{m_{j-1}-m_j} + e^{x_j - m_j}", online_normaliser()),
              note=r"Without the factor $e^{m_{j-1}-m_j}$ the old terms keep their old maximum."),
        Entry("online-softmax:eq4", "Alg. 3", r"y_i = e^{x_i - m_N} / d_N", Status.PROVED,
              Identity({"x": ("N", 1)}, lhs=softmax,
                       rhs=lambda x: x.applyfunc(lambda t: sympy.exp(t - online(x)[-1][0]) / online(x)[-1][1]),
                       dims=GRID, reference=np_softmax)),
        Entry("online-softmax:eq5", "Eq. 5", r"[m_a, d_a] \oplus [m_b, d_b] = [m_{a \cup b}, d_{a \cup b}]",
              Status.PROVED,
              Identity({"x": ("n1+n2", 1)}, lhs=lambda x: sympy.ImmutableMatrix([list(online(x)[-1])]).T,
                       rhs=lambda x, n1: _merge(x, n1), dims=dims_grid(n1=(1, 2), n2=(1, 2)),
                       reference=lambda x: np.array([[x.max()], [np.exp(x - x.max()).sum()]]))),
    ]
