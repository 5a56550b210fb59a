r"""A mixture-of-experts FFN as an input-dependent selection (beyond the paper; Mixtral, Qwen-MoE, DeepSeek).

Token :math:`n` chooses the experts :math:`S_n` (the router's top-:math:`k`, :math:`|S_n| = k`) with routing
weights :math:`w_{n,e}`; expert :math:`e` is a gated FFN :math:`F_e` (:class:`~symuat.layers.gated_ffn.GatedFFN`).
With the dynamic gates

.. math::
    g_{n,e} = \begin{cases} s\,p_{n,e} / \sum_{e'\in S_n} p_{n,e'} & e\in S_n \text{ (renormalised)}\\
    s\,p_{n,e} & e\in S_n \text{ (raw)}\\ 0 & e\notin S_n\end{cases}
    \qquad G_e = \operatorname{diag}(g_{1,e},\dots,g_{N,e}),

(:math:`p` the router's probabilities, :math:`s` the routed scaling factor) and shared experts :math:`F_t`
with gates :math:`T_t = \operatorname{diag}(t_{n,t})` (Qwen2-MoE: :math:`t_n = \mathrm{sigmoid}(h_nw)`;
DeepSeek: :math:`T = I`), on :math:`h' = \operatorname{vec}_r(H)`:

.. math::
    \operatorname{vec}_r\mathrm{MoE}(H) = \sum_e (G_e\otimes I_M)\operatorname{vec}_r F_e(H)
    + \sum_t (T_t\otimes I_M)\operatorname{vec}_r F_t(H).

Both the *choice* :math:`S_n` and the weights depend on the input, so :math:`G_e` is a dynamic parameter like
:math:`H_h`: an expert that no token chose contributes :math:`G_e = 0`.  :func:`dispatch` is the
libraries' computation (per expert, gather the tokens that chose it, weight, scatter-add); :func:`gated_experts`
the same with every expert on every token and diagonal gates; :func:`gated_experts_matrix_vector` the form
above; :func:`routing_gates` builds the gates from the choice.

Llama 4 scales each chosen expert's *input* by its gate instead: :math:`\sum_e F_e(G_eH)`
(:func:`input_scaled_experts`).  Since :math:`W(g\,u) = g\,Wu` and the experts have no biases,

.. math::
    \operatorname{vec}_r\textstyle\sum_e F_e(G_eH) = \sum_e (G_e\otimes I_M)(I_N\otimes W_{d,e}^T)
    \big(\sigma((G_e\otimes I_F)z_e)\odot u_e\big)

(:func:`input_scaled_experts_matrix_vector`): the routing diagonal before the down projection and a second one,
:math:`D_{in} = G_e\otimes I_F`, on the gate branch's pre-activation (``ext:moe.input-scaled``).
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy

from ..algebra.families import diag_vector, family_sum
from ..algebra.matrices import elementwise, identity_matrix, kron, traceable
from ..errors import ShapeError, UnsupportedError
from .gated_ffn import GatedFFN

__all__ = ["routing_gates", "check_choice", "fixed_choice", "choice_weights", "renormalise_rows", "expert_family",
           "dispatch", "gated_experts", "gated_experts_matrix_vector", "input_scaled_experts",
           "input_scaled_experts_matrix_vector"]

Matrix = sympy.ImmutableMatrix


def check_choice(choice: Sequence[Sequence[int]], n_experts: int) -> tuple[tuple[int, ...], ...]:
    r"""Validate a top-:math:`k` choice: one tuple of distinct expert indices per token, all of length :math:`k`."""
    choice = tuple(tuple(s) for s in choice)
    if not choice or len({len(s) for s in choice}) != 1 or not choice[0]:
        raise ShapeError(f"the choice must give k >= 1 experts to every token, got {choice!r}")
    for n, s in enumerate(choice):
        if len(set(s)) != len(s) or not all(isinstance(e, int) and 0 <= e < n_experts for e in s):
            raise ShapeError(f"token {n} chooses {s!r}: expected distinct expert indices in 0..{n_experts - 1}")
    return choice


@traceable
def fixed_choice(pattern, n_tokens: int, n_experts: int, k: int, c: int) -> tuple[tuple[int, ...], ...]:
    r"""The top-:math:`k` choice ``pattern(N, E, k, c)`` (validated): one of a ledger entry's fixed choices.  On
    symbolic sizes the level traces it as an arbitrary one-hot choice of one expert per (token, slot)
    (:mod:`symuat.allsizes.routing`): a statement proved there holds for every choice.

    >>> fixed_choice(lambda N, E, k, c: ((0,), (1,)), 2, 2, 1, 1)
    ((0,), (1,))
    """
    choice = check_choice(pattern(n_tokens, n_experts, k, c), n_experts)
    if len(choice) != n_tokens or len(choice[0]) != k:
        raise ShapeError(f"the choice {choice!r} is not {k} experts for each of {n_tokens} tokens")
    return choice


@traceable
def choice_weights(probs: sympy.MatrixBase, choice) -> Matrix:
    r"""The :math:`N\times k` matrix :math:`p_{n, S_n[\mathrm{slot}]}`: the router's probabilities of the chosen
    experts, slot by slot (the libraries' ``topk`` values / ``gather``)."""
    choice = check_choice(choice, probs.shape[1])
    return Matrix(len(choice), len(choice[0]), lambda n, slot: probs[n, choice[n][slot]])


@traceable
def renormalise_rows(weights: sympy.MatrixBase) -> Matrix:
    r"""Each row divided by its sum (Mixtral's softmax over the top-:math:`k` logits, ``norm_topk_prob``)."""
    return Matrix(weights.shape[0], weights.shape[1],
                  lambda n, slot: weights[n, slot] / sum(weights[n, :]))


@traceable
def expert_family(expert, n: int) -> tuple:
    r"""The routed experts ``(expert(0), …, expert(n - 1))`` (on symbolic sizes: by family index).

    >>> expert_family(lambda j: j, 3)
    (0, 1, 2)
    """
    return tuple(expert(j) for j in range(n))


@traceable
def routing_gates(probs: sympy.MatrixBase, choice, renormalise: bool, scale=1) -> Matrix:
    r"""The :math:`N\times E` matrix of gates :math:`g_{n,e}` (module docstring) from the router's ``probs``."""
    N, E = probs.shape
    choice = check_choice(choice, E)
    if len(choice) != N:
        raise ShapeError(f"the choice covers {len(choice)} tokens, the probabilities {N}")
    G = sympy.zeros(N, E)
    for n, s in enumerate(choice):
        total = sympy.Add(*(probs[n, e] for e in s))
        for e in s:
            G[n, e] = scale * (probs[n, e] / total if renormalise else probs[n, e])
    return Matrix(G)


@traceable
def dispatch(H: sympy.MatrixBase, experts: Sequence[GatedFFN], choice, weights: sympy.MatrixBase, sigma) -> Matrix:
    r"""The libraries' loop over the routed experts: for each expert, gather the tokens that chose it, apply it,
    weight the rows and scatter-add them (``weights``: :math:`N\times k` in the order of ``choice``, after any
    renormalisation and scaling).  Experts no token chose are never evaluated."""
    choice = check_choice(choice, len(experts))
    if len(choice) != H.shape[0] or weights.shape != (H.shape[0], len(choice[0])):
        raise ShapeError(f"choice of {len(choice)} tokens and weights {weights.shape} do not fit H {H.shape}")
    out = sympy.zeros(*H.shape)
    for e, ffn in enumerate(experts):
        hits = [(n, s.index(e)) for n, s in enumerate(choice) if e in s]
        if not hits:
            continue
        y = ffn.apply(Matrix.vstack(*(H[n, :] for n, _ in hits)), sigma)
        for r, (n, slot) in enumerate(hits):
            out[n, :] += weights[n, slot] * y[r, :]
    return Matrix(out)


def gated_experts(H: sympy.MatrixBase, gate, expert, n: int, sigma) -> Matrix:
    r""":math:`\sum_e G_eF_e(H)` row-wise, every expert on every token: ``gate(e)`` is the column :math:`g_e`
    (:math:`N\times 1`), ``expert(e)`` the :class:`GatedFFN` :math:`F_e`, ``n`` the number of experts."""
    return family_sum(lambda e: diag_vector(gate(e)) * expert(e).apply(H, sigma), n)


def gated_experts_matrix_vector(h_prime: sympy.MatrixBase, N: int, M: int, gate, expert, n: int, sigma) -> Matrix:
    r""":math:`\sum_e (G_e\otimes I_M)\big((I_N\otimes W_{d,e}^T)(\sigma(z_e)\odot u_e) + \mathbf 1_N\otimes
    b_{d,e}\big)` on :math:`h'` (module docstring)."""
    I_M = identity_matrix(M)
    return family_sum(lambda e: kron(diag_vector(gate(e)), I_M) * expert(e).apply_matrix_vector(h_prime, N, sigma), n)


def _unbiased(ffn: GatedFFN, e: int) -> GatedFFN:
    if any(b is not None for b in (ffn.b_g, ffn.b_u, ffn.b_d)):
        raise UnsupportedError(f"expert {e} has a bias: an input-scaled expert (Llama 4) needs an expert without "
                               "biases (a bias is not scaled by the routing gate, so W(g u) + b != g (W u + b))")
    return ffn


def input_scaled_experts(H: sympy.MatrixBase, gate, expert, n: int, sigma) -> Matrix:
    r""":math:`\sum_e F_e(G_eH)` row-wise (Llama 4: every expert on every token's input scaled by its gate, zero
    for a token that did not choose it); ``gate``, ``expert``, ``n`` as in :func:`gated_experts`."""
    return family_sum(lambda e: _unbiased(expert(e), e).apply(diag_vector(gate(e)) * H, sigma), n)


def input_scaled_experts_matrix_vector(h_prime: sympy.MatrixBase, N: int, M: int, gate, expert, n: int,
                                       sigma) -> Matrix:
    r""":math:`\sum_e (G_e\otimes I_M)(I_N\otimes W_{d,e}^T)\big(\sigma((G_e\otimes I_F)(I_N\otimes
    W_{g,e}^T)h')\odot(I_N\otimes W_{u,e}^T)h'\big)` (module docstring): :math:`D(u) = G_e\otimes I` before the
    down projection, :math:`D_{in}(u) = G_e\otimes I_F` on the gate branch."""
    I_N, I_M = identity_matrix(N), identity_matrix(M)

    def one(e):
        f, G = _unbiased(expert(e), e), diag_vector(gate(e))
        z = kron(G, identity_matrix(f.W_g.shape[1])) * (kron(I_N, f.W_g.T) * h_prime)
        u = kron(I_N, f.W_u.T) * h_prime
        return kron(G, I_M) * (kron(I_N, f.W_d.T) * Matrix(elementwise(sigma, z).multiply_elementwise(u)))
    return family_sum(one, n)
