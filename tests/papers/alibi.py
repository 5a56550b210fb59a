r"""Press et al. (2022), *Train Short, Test Long*: attention with linear biases (ALiBi), under a causal mask.

The bias of query $i$ and key $j \le i$ is $-m(i - j)$ for a head slope $m > 0$."""

from __future__ import annotations

import numpy as np
import sympy

from symuat import Entry, Identity, Paper, Status, dims_grid, register_source

from ._shared import causal_mask, exp_entries, normalise_rows, np_causal, np_softmax_rows

register_source(Paper("alibi", "ALiBi", authors=("Ofir Press", "Noah A. Smith", "Mike Lewis"),
                      title="Train Short, Test Long: Attention with Linear Biases Enables Input Length Extrapolation",
                      venue="ICLR 2022", equations=("eq1", "eq2", "eq3")))

GRID = dims_grid(N=(1, 2, 3))
SHAPES = {"S": ("N", "N"), "m": ()}


def biased(S, m, bias) -> sympy.ImmutableMatrix:
    r"""Causal softmax of $S + B$, $B_{ij} = $ ``bias(i, j)``."""
    N = S.rows
    return normalise_rows(causal_mask(N).multiply_elementwise(exp_entries(
        sympy.Matrix(N, N, lambda i, j: S[i, j] + m * bias(i, j)))))


def np_biased(S, m, bias):
    N = S.shape[0]
    B = np.fromfunction(lambda i, j: bias(i, j), (N, N))
    return np_softmax_rows(np.where(np_causal(N) > 0, S + m * B, -np.inf))


def entries() -> list[Entry]:
    return [
        Entry("alibi:eq1", "Sec. 3", r"\mathrm{softmax}(q_iK^T + m[-(i-1), \ldots, -1, 0]) = "
              r"\frac{e^{q_i k_j - m(i-j)}}{\sum_{l\le i} e^{q_i k_l - m(i-l)}}", Status.PROVED,
              Identity(SHAPES, lhs=lambda S, m: biased(S, m, lambda i, j: -(i - j)),
                       rhs=lambda S, m, N: normalise_rows(causal_mask(N).multiply_elementwise(sympy.Matrix(
                           N, N, lambda i, j: sympy.exp(S[i, j]) * sympy.exp(-m * (i - j))))),
                       dims=GRID, reference=lambda S, m: np_biased(S, m, lambda i, j: -(i - j)),
                       assume=("m > 0",))),
        Entry("alibi:eq2", "Sec. 3", r"\text{the bias } m\,j \text{ gives the same attention as } -m(i - j)",
              Status.PROVED,
              Identity(SHAPES, lhs=lambda S, m: biased(S, m, lambda i, j: -(i - j)),
                       rhs=lambda S, m: biased(S, m, lambda i, j: j), dims=GRID,
                       reference=lambda S, m: np_biased(S, m, lambda i, j: j), assume=("m > 0",))),
        Entry("alibi:eq2.part2", "Sec. 3", r"-m\lvert i - j\rvert = -m(i - j) \text{ under the causal mask}",
              Status.PROVED,
              Identity({"S": ("N", "N"), "m": (), "p": ("N", 1)},
                       lhs=lambda S, m, p, N: causal_mask(N).multiply_elementwise(sympy.Matrix(
                           N, N, lambda i, j: S[i, j] - m * sympy.Abs(p[i] - p[j]))),
                       rhs=lambda S, m, p, N: causal_mask(N).multiply_elementwise(sympy.Matrix(
                           N, N, lambda i, j: S[i, j] - m * sympy.Max(p[i] - p[j], p[j] - p[i]))),
                       dims=GRID, reference=lambda S, m, p, N: np_causal(N) * (S - m * np.abs(p - p.T)))),
        Entry("alibi:eq3", "Sec. 3", r"m_{h+1} / m_h = 2^{-8/H} \text{ for } m_h = 2^{-8h/H}", Status.PROVED,
              Identity({"h": (), "H": ()}, lhs=lambda h, H: sympy.Integer(2) ** (-8 * (h + 1) / H) /
                       sympy.Integer(2) ** (-8 * h / H), rhs=lambda H: sympy.Integer(2) ** (-8 / H), dims=({"d": 1},),
                       reference=lambda h, H: 2.0 ** (-8 * (h + 1) / H) / 2.0 ** (-8 * h / H),
                       assume=("H > 0",))),
    ]
