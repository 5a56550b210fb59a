r"""Dao et al. (2022), *FlashAttention*: softmax by blocks (Sec. 3.1), the output update of Algorithm 1 and the
backward pass's row sums (App. B.2).  Scores are free variables; every maximum is a ``Max``."""

from __future__ import annotations

import functools

import numpy as np
import sympy

from symuat import Correction, Entry, Identity, Paper, Status, dims_grid, register_source

from ._shared import causal_mask, exp_entries, normalise_rows, np_causal, np_softmax_rows

register_source(Paper("flash-attention", "FlashAttention",
                      authors=("Tri Dao", "Daniel Y. Fu", "Stefano Ermon", "Atri Rudra", "Christopher Ré"),
                      title="FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness",
                      venue="NeurIPS 2022", equations=("eq1", "eq2", "eq3", "eq4", "eq5", "eq6")))

BLOCKS = {"s1": (1, "n1"), "s2": (1, "n2"), "V1": ("n1", "D"), "V2": ("n2", "D")}
BLOCK_GRID = dims_grid(n1=(1, 2), n2=(1, 2), D=(1,))


def _m(s) -> sympy.Expr:
    return sympy.Max(*s)


def _f(s) -> sympy.ImmutableMatrix:
    r"""$f(x) = e^{x - m(x)}$ (a row)."""
    return s.applyfunc(lambda t: sympy.exp(t - _m(s)))


def _l(s) -> sympy.Expr:
    return sum(_f(s))


def block_f(s1, s2):
    r"""$f(x) = [e^{m(x^{(1)}) - m(x)} f(x^{(1)}),\ e^{m(x^{(2)}) - m(x)} f(x^{(2)})]$."""
    m = sympy.Max(_m(s1), _m(s2))
    return sympy.ImmutableMatrix.hstack(sympy.exp(_m(s1) - m) * _f(s1), sympy.exp(_m(s2) - m) * _f(s2))


def block_l(s1, s2):
    r"""$\ell(x) = e^{m(x^{(1)}) - m(x)}\ell(x^{(1)}) + e^{m(x^{(2)}) - m(x)}\ell(x^{(2)})$."""
    m = sympy.Max(_m(s1), _m(s2))
    return sympy.exp(_m(s1) - m) * _l(s1) + sympy.exp(_m(s2) - m) * _l(s2)


def softmax_row(s):
    e = s.applyfunc(sympy.exp)
    return e / sum(e)


def np_softmax_row(s):
    return np_softmax_rows(s)


def algorithm1(s1, s2, V1, V2, rescale=True):
    r"""Algorithm 1, lines 9–12, over two key blocks for one query row: $m$, $\ell$ and $O$ after each block."""
    m, l_ = _m(s1), _l(s1)
    O = _f(s1) * V1 / l_  # after block 1 (from O = 0, l = 0, m = -inf)
    mt, lt, P = _m(s2), _l(s2), _f(s2)
    m_new = sympy.Max(m, mt)
    l_new = sympy.exp(m - m_new) * l_ + sympy.exp(mt - m_new) * lt
    old = l_ * sympy.exp(m - m_new) * O if rescale else l_ * O
    return (old + sympy.exp(mt - m_new) * P * V2) / l_new


def np_attention(s1, s2, V1, V2):
    return np_softmax_row(np.hstack([s1, s2])) @ np.vstack([V1, V2])


def _block(lhs, rhs, reference, shapes=None) -> Identity:
    return Identity(shapes or BLOCKS, lhs=lhs, rhs=rhs, dims=BLOCK_GRID, reference=reference)


@functools.cache
def output_update() -> Identity:
    return _block(lambda s1, s2, V1, V2: softmax_row(s1.row_join(s2)) * V1.col_join(V2), algorithm1, np_attention)


def _softmax_jvp(S, dP):
    r"""$dS_{ij} = \sum_k \partial P_{ik}/\partial S_{ij}\, dP_{ik}$ for $P = \mathrm{softmax}(S)$ row-wise."""
    P = normalise_rows(exp_entries(S))
    return sympy.Matrix(S.rows, S.cols, lambda i, j: sum(sympy.diff(P[i, k], S[i, j]) * dP[i, k]
                                                           for k in range(S.cols)))


def _backward(S, dP):
    r"""App. B.2: $dS = P \circ (dP - D)$ with $D_i = \sum_j P_{ij} dP_{ij}$."""
    P = normalise_rows(exp_entries(S))
    D = [sum(P[i, j] * dP[i, j] for j in range(S.cols)) for i in range(S.rows)]
    return sympy.Matrix(S.rows, S.cols, lambda i, j: P[i, j] * (dP[i, j] - D[i]))


def np_backward(S, dP):
    P = np_softmax_rows(S)
    return P * (dP - (P * dP).sum(axis=1, keepdims=True))


def entries() -> list[Entry]:
    both = lambda s1, s2: s1.row_join(s2)  # noqa: E731
    return [
        Entry("flash-attention:eq1", "Sec. 3.1", r"m(x) = \max(m(x^{(1)}), m(x^{(2)}))", Status.PROVED,
              _block(lambda s1, s2: sympy.ImmutableMatrix([[_m(both(s1, s2))]]),
                     lambda s1, s2: sympy.ImmutableMatrix([[sympy.Max(_m(s1), _m(s2))]]),
                     lambda s1, s2: np.array([[max(s1.max(), s2.max())]]))),
        Entry("flash-attention:eq2", "Sec. 3.1", r"f(x) = [e^{m(x^{(1)}) - m(x)}f(x^{(1)}),\ "
              r"e^{m(x^{(2)}) - m(x)}f(x^{(2)})]", Status.PROVED,
              _block(lambda s1, s2: _f(both(s1, s2)), block_f,
                     lambda s1, s2: np.exp(np.hstack([s1, s2]) - max(s1.max(), s2.max())))),
        Entry("flash-attention:eq3", "Sec. 3.1", r"\ell(x) = e^{m(x^{(1)}) - m(x)}\ell(x^{(1)}) + "
              r"e^{m(x^{(2)}) - m(x)}\ell(x^{(2)})", Status.PROVED,
              _block(lambda s1, s2: sympy.ImmutableMatrix([[_l(both(s1, s2))]]),
                     lambda s1, s2: sympy.ImmutableMatrix([[block_l(s1, s2)]]),
                     lambda s1, s2: np.exp(np.hstack([s1, s2]) - max(s1.max(), s2.max())).sum(keepdims=True))),
        Entry("flash-attention:eq4", "Sec. 3.1", r"\mathrm{softmax}(x) = f(x) / \ell(x)", Status.PROVED,
              _block(lambda s1, s2: softmax_row(both(s1, s2)), lambda s1, s2: block_f(s1, s2) / block_l(s1, s2),
                     lambda s1, s2: np_softmax_row(np.hstack([s1, s2])))),
        Entry("flash-attention:eq5", "Alg. 1, l. 12", r"O \leftarrow \operatorname{diag}(\ell^{new})^{-1}"
              r"(\operatorname{diag}(\ell)e^{m - m^{new}} O + e^{\tilde m - m^{new}}\tilde P V)", Status.PROVED,
              output_update()),
        Entry("flash-attention:eq5.part2", "Alg. 1, l. 12", r"O \leftarrow \operatorname{diag}(\ell^{new})^{-1}"
              r"(\operatorname{diag}(\ell) O + e^{\tilde m - m^{new}}\tilde P V)", Status.ERRATUM,
              _block(lambda s1, s2, V1, V2: softmax_row(s1.row_join(s2)) * V1.col_join(V2),
                     functools.partial(algorithm1, rescale=False), np_attention),
              correction=Correction(r"O \leftarrow \operatorname{diag}(\ell^{new})^{-1}(\operatorname{diag}(\ell)"
                                    r"e^{m - m^{new}} O + e^{\tilde m - m^{new}}\tilde P V)", output_update()),
              note=r"The old output must be rescaled by $e^{m - m^{new}}$ too."),
        Entry("flash-attention:eq5.part3", "Alg. 1, l. 9", r"\operatorname{rowsum}(M \circ e^{S - m}) / "
              r"\operatorname{rowsum}(\ldots) = \mathrm{softmax}_{\text{causal}}(S)", Status.PROVED,
              Identity({"S": ("N", "N")},
                       lhs=lambda S, N: normalise_rows(causal_mask(N).multiply_elementwise(exp_entries(S))),
                       rhs=lambda S, N: normalise_rows(causal_mask(N).multiply_elementwise(sympy.Matrix(
                           N, N, lambda i, j: sympy.exp(S[i, j] - sympy.Max(*S.row(i)[:i + 1]))))),
                       dims=dims_grid(N=(1, 2, 3)),
                       reference=lambda S, N: np_softmax_rows(np.where(np_causal(N) > 0, S, -np.inf)))),
        Entry("flash-attention:eq6", "App. B.2", r"D_i = \operatorname{rowsum}(dO \circ O)_i = \sum_j P_{ij}dP_{ij}",
              Status.PROVED,
              Identity({"P": ("N", "N"), "V": ("N", "D"), "dO": ("N", "D")},
                       lhs=lambda P, V, dO: (dO.multiply_elementwise(P * V)) * sympy.ones(V.cols, 1),
                       rhs=lambda P, V, dO: (P.multiply_elementwise(dO * V.T)) * sympy.ones(P.cols, 1),
                       dims=dims_grid(N=(1, 2, 3), D=(1, 2)),
                       reference=lambda P, V, dO: (dO * (P @ V)).sum(axis=1, keepdims=True))),
        Entry("flash-attention:eq6.part2", "App. B.2", r"dS_{ij} = P_{ij}(dP_{ij} - D_i)", Status.PROVED,
              Identity({"S": ("N", "N"), "dP": ("N", "N")}, lhs=_softmax_jvp, rhs=_backward,
                       dims=dims_grid(N=(1, 2)), reference=np_backward)),
        Entry("flash-attention:eq6.part3", "Alg. 2, l. 13", r"L = m + \log \ell = \log\sum_j e^{x_j}",
              Status.PROVED,
              Identity({"s": (1, "N")}, lhs=lambda s: sympy.ImmutableMatrix([[sympy.log(sum(s.applyfunc(sympy.exp)))]]),
                       rhs=lambda s: sympy.ImmutableMatrix([[_m(s) + sympy.log(_l(s))]]),
                       dims=dims_grid(N=(1, 2)),
                       reference=lambda s: np.array([[np.log(np.exp(s).sum())]]))),
    ]
