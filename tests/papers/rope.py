r"""Su et al. (2021), *RoFormer*: rotary position embedding and its relative-position property (Eqs. 13–16, 34).

Positions $m, n$ and the angle $\theta$ are scalar variables; the rotation is $R(\alpha)$ of Eq. 13."""

from __future__ import annotations

import numpy as np
import sympy

from symuat import Entry, Identity, Paper, Status, register_source

register_source(Paper("rope", "RoPE", authors=("Jianlin Su", "Yu Lu", "Shengfeng Pan", "Ahmed Murtadha", "Bo Wen",
                                               "Yunfeng Liu"),
                      title="RoFormer: Enhanced Transformer with Rotary Position Embedding",
                      venue="arXiv:2104.09864, 2021", equations=("eq13", "eq14", "eq15", "eq16", "eq34")))

ONE = ({"d": 1},)


def rotation(a) -> sympy.ImmutableMatrix:
    r"""$R(\alpha) = \begin{pmatrix}\cos\alpha & -\sin\alpha\\ \sin\alpha & \cos\alpha\end{pmatrix}$."""
    return sympy.ImmutableMatrix([[sympy.cos(a), -sympy.sin(a)], [sympy.sin(a), sympy.cos(a)]])


def np_rotation(a):
    return np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])


def block_rotation(m, t1, t2) -> sympy.ImmutableMatrix:
    r"""$R^d_{\Theta, m}$ of Eq. 15 for $d = 4$: two planes, angles $m\theta_1$, $m\theta_2$."""
    return sympy.ImmutableMatrix(sympy.diag(rotation(m * t1), rotation(m * t2)))


def np_block(m, t1, t2):
    out = np.zeros((4, 4))
    out[:2, :2], out[2:, 2:] = np_rotation(m * t1), np_rotation(m * t2)
    return out


def efficient(x, m, t1, t2) -> sympy.ImmutableMatrix:
    r"""Eq. 34: $x \circ \cos(m\theta) + \tilde x \circ \sin(m\theta)$, $\tilde x = (-x_2, x_1, -x_4, x_3)$."""
    c = [sympy.cos(m * t1)] * 2 + [sympy.cos(m * t2)] * 2
    s = [sympy.sin(m * t1)] * 2 + [sympy.sin(m * t2)] * 2
    swapped = [-x[1], x[0], -x[3], x[2]]
    return sympy.ImmutableMatrix(4, 1, [x[i] * c[i] + swapped[i] * s[i] for i in range(4)])


SCALARS = {"m": (), "n": (), "theta": ()}


def entries() -> list[Entry]:
    return [
        Entry("rope:eq13", "Eq. 13", r"R(m\theta)^T R(n\theta) = R((n - m)\theta)", Status.PROVED,
              Identity(SCALARS, lhs=lambda m, n, theta: rotation(m * theta).T * rotation(n * theta),
                       rhs=lambda m, n, theta: rotation((n - m) * theta), dims=ONE,
                       reference=lambda m, n, theta: np_rotation(m * theta).T @ np_rotation(n * theta))),
        Entry("rope:eq14", "Eq. 14", r"\langle R(m\theta) q, R(n\theta) k\rangle = q^T R((n - m)\theta) k",
              Status.PROVED,
              Identity({**SCALARS, "q": (2, 1), "k": (2, 1)},
                       lhs=lambda q, k, m, n, theta: (rotation(m * theta) * q).T * (rotation(n * theta) * k),
                       rhs=lambda q, k, m, n, theta: q.T * rotation((n - m) * theta) * k, dims=ONE,
                       reference=lambda q, k, m, n, theta: (np_rotation(m * theta) @ q).T
                       @ (np_rotation(n * theta) @ k))),
        Entry("rope:eq14.part2", "Eq. 14", r"R(\alpha) R(\beta) = R(\alpha + \beta)", Status.PROVED,
              Identity({"m": (), "n": ()}, lhs=lambda m, n: rotation(m) * rotation(n), rhs=lambda m, n: rotation(m + n),
                       dims=ONE, reference=lambda m, n: np_rotation(m) @ np_rotation(n))),
        Entry("rope:eq15", "Eq. 15", r"\lVert R^d_{\Theta,m} x\rVert^2 = \lVert x\rVert^2", Status.PROVED,
              Identity({"x": (4, 1), "m": (), "t1": (), "t2": ()},
                       lhs=lambda x, m, t1, t2: (block_rotation(m, t1, t2) * x).T * (block_rotation(m, t1, t2) * x),
                       rhs=lambda x: x.T * x, dims=ONE, reference=lambda x, m, t1, t2: x.T @ np_block(m, t1, t2).T
                       @ np_block(m, t1, t2) @ x)),
        Entry("rope:eq16", "Eq. 16", r"(R^d_{\Theta,m} q)^T (R^d_{\Theta,n} k) = q^T R^d_{\Theta,n-m} k", Status.PROVED,
              Identity({"q": (4, 1), "k": (4, 1), "m": (), "n": (), "t1": (), "t2": ()},
                       lhs=lambda q, k, m, n, t1, t2: (block_rotation(m, t1, t2) * q).T
                       * (block_rotation(n, t1, t2) * k),
                       rhs=lambda q, k, m, n, t1, t2: q.T * block_rotation(n - m, t1, t2) * k, dims=ONE,
                       reference=lambda q, k, m, n, t1, t2: (np_block(m, t1, t2) @ q).T @ (np_block(n, t1, t2) @ k))),
        Entry("rope:eq34", "Eq. 34", r"R^d_{\Theta,m} x = x \circ \cos m\theta + \tilde x \circ \sin m\theta",
              Status.PROVED,
              Identity({"x": (4, 1), "m": (), "t1": (), "t2": ()},
                       lhs=lambda x, m, t1, t2: block_rotation(m, t1, t2) * x,
                       rhs=efficient, dims=ONE, reference=lambda x, m, t1, t2: np_block(m, t1, t2) @ x)),
        Entry("rope:eq34.part2", "Eq. 34", r"R^d_{\Theta,m} x = x \circ \cos m\theta - \tilde x \circ \sin m\theta",
              Status.PROVED,
              Identity({"x": (4, 1), "m": (), "t1": (), "t2": ()},
                       lhs=lambda x, m, t1, t2: block_rotation(-m, t1, t2).T * x,
                       rhs=efficient, dims=ONE, reference=lambda x, m, t1, t2: np_block(-m, t1, t2).T @ x)),
    ]
