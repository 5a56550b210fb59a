r"""Named views of a :class:`~symuat.numeric.DUATForm` as numbers (seed 001, Eq. 11 / 20 / 33).

With layer :math:`k` written as Eq. 20 at its actual input,
:math:`\mathbf x'_k = \mathbf W'_{k,1}\mathbf x'_{k-1} + \mathbf b'_{k,3} + \mathbf W'_{k,3}\,\mathrm{app}_k` and
:math:`\mathrm{app}_k = \sigma(\mathbf W'_{k,2}\mathbf x'_{k-1} + \mathbf b'_{k,2})` (gated:
:math:`\odot(\mathbf W'_{k,4}\mathbf x'_{k-1} + \mathbf b'_{k,4})`), the table's dynamic quantities are

.. math::
    \tilde A_k = \mathbf W'_{k,1}\tilde A_{k-1},\quad \tilde c_k = \mathbf W'_{k,1}\tilde c_{k-1} + \mathbf b'_{k,3},
    \quad \tilde V_j = \mathbf W'_{j,2}\tilde A_{j-1},\quad
    \tilde\beta_j = \mathbf W'_{j,2}(\mathbf x'_{j-1} - \tilde A_{j-1}\mathbf x'_0) + \mathbf b'_{j,2},\quad
    \tilde U_j = \mathbf W'_{K,1}\cdots\mathbf W'_{j+1,1}\mathbf W'_{j,3}

(:math:`\tilde A_0 = \mathbf W'_{0,1}`, :math:`\tilde c_0 = \mathbf b'_{0,3}` for an input transform, else
:math:`I` and 0; :math:`K` is the last box, :math:`L+1` with a final norm), and gated
:math:`\tilde P_j = \mathbf W'_{j,4}\tilde A_{j-1}`, :math:`\tilde\gamma_j` like :math:`\tilde\beta_j`; so
:math:`\mathbf x'_{out} = \tilde A\mathbf x'_0 + \tilde c + \sum_j \tilde U_j\,\mathrm{app}_j`.
:math:`\tilde\beta_j` carries the earlier nonlinear terms (:math:`R_{j-1}` of the table), which is why it is dynamic.
Operators are composed lazily (never an :math:`NM\times NM` matrix); asking for them holds the layers they span.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from ..errors import InvalidValueError, UnsupportedError
from ..numeric.attention import HeadPlan, multi_head_attention
from ..numeric.cross import cross_heads
from ..numeric.ffn import activation_function
from ..numeric.norms import apply_norm, norm_operator
from ..numeric.operators import Compose, IdentityOperator, LinearOperator, trusted_operators

__all__ = ["KroneckerFactor", "LayerParameters", "DynamicTerm", "attention", "cross_attention", "layer_parameters",
           "A_tilde", "c_tilde",
           "dynamic_term", "token_terms", "summary_html"]


@dataclass(frozen=True)
class KroneckerFactor:
    r"""One named term :math:`T\otimes F` of a layer operator: ``token_mixing`` :math:`T` (N×N array, or ``None`` =
    :math:`I_N`) and ``feature_map`` :math:`F` as factors whose product is the M×M (or F×M) map."""

    name: str
    token_mixing: Optional[np.ndarray]
    feature_map: Tuple[np.ndarray, ...]


@dataclass(frozen=True)
class LayerParameters:
    r"""Layer :math:`k`'s Eq. 20 parameters :math:`\mathbf W'_{k,1..4}`, :math:`\mathbf b'_{k,2..4}` and the named
    Kronecker factors they are built from (attention heads :math:`H_h\otimes(W_{V,h}W_{O,h})^{\mathsf T}`, FFN maps
    :math:`I_N\otimes W^{\mathsf T}`)."""

    layer: int
    W1: LinearOperator
    W2: LinearOperator
    W3: LinearOperator
    W4: Optional[LinearOperator]
    b2: np.ndarray
    b3: np.ndarray
    b4: Optional[np.ndarray]
    factors: Tuple[KroneckerFactor, ...]


@dataclass(frozen=True)
class DynamicTerm:
    r"""Term :math:`j`: :math:`\tilde V_j`, :math:`\tilde\beta_j`, :math:`\tilde U_j` (gated: :math:`\tilde P_j`,
    :math:`\tilde\gamma_j`) and ``value`` :math:`= \tilde U_j\,\mathrm{app}_j` (length :math:`NM`)."""

    j: int
    V: LinearOperator
    beta: np.ndarray
    U: LinearOperator
    P: Optional[LinearOperator]
    gamma: Optional[np.ndarray]
    value: np.ndarray


def _layer(form: Any, layer: int) -> int:
    if not isinstance(layer, (int, np.integer)) or isinstance(layer, bool) or not 0 <= layer < form.depth:
        raise InvalidValueError(f"layer must be an int in [0, {form.depth}), got {layer!r}")
    return int(layer)


def attention(form: Any, layer: int, head: int) -> np.ndarray:
    r"""The N×N attention matrix :math:`H_h` of ``layer`` (0-based) and ``head`` (0-based) at the form's input."""
    k = _layer(form, layer)
    block = form.stack.blocks[k]
    H = block.attention.n_heads
    if not isinstance(head, (int, np.integer)) or isinstance(head, bool) or not 0 <= head < H:
        raise InvalidValueError(f"head must be an int in [0, {H}), got {head!r}")
    X = form.params.input(k)
    if form.stack.kind in ("pre_ln", "parallel", "sandwich"):  # attention sees N_1(X), as the evaluation builds it
        with trusted_operators():
            L1, beta1 = norm_operator(X, block.ln1)
        X = (L1._matvec(X.reshape(-1)) + beta1).reshape(X.shape)
    return HeadPlan(X, block.attention, form.attention_mask, f" in layer {k + 1}").head(int(head))  # this head only


def cross_attention(form: Any, layer: int, head: int) -> np.ndarray:
    r"""The :math:`N\times N_e` cross-attention matrix :math:`H_h(X, E)` of a decoder block ``layer`` and ``head``
    (0-based) at the form's input: queries from :math:`\mathrm N_c(h_1)`, :math:`h_1 = X + \mathrm{MHA}(\mathrm N_1X)`,
    keys from the encoder's output (``ext:cross-attention.mv-form``)."""
    k = _layer(form, layer)
    block = form.stack.blocks[k]
    if block.cross is None:
        raise UnsupportedError(f"layer {k} has no cross-attention (not an encoder–decoder's decoder block)")
    H = block.cross.attention.n_heads
    if not isinstance(head, (int, np.integer)) or isinstance(head, bool) or not 0 <= head < H:
        raise InvalidValueError(f"head must be an int in [0, {H}), got {head!r}")
    X = form.params.input(k)
    h1 = X + multi_head_attention(apply_norm(X, block.ln1), block.attention, form.attention_mask)
    return cross_heads(block.cross, apply_norm(h1, block.cross.norm), f" in layer {k + 1}")[int(head)]


def layer_parameters(form: Any, layer: int) -> LayerParameters:
    r""":class:`LayerParameters` of ``layer`` (0-based; the paper's :math:`k = ` ``layer + 1``)."""
    k = _layer(form, layer)
    p, block = form.params[k], form.stack.blocks[k]
    a, f = block.attention, block.ffn
    X = form.params.input(k)
    factors = [KroneckerFactor(f"attention head {h}", attention(form, k, h),
                               (a.W_O[a.head_slice(h), :].T, a.W_V[:, a.kv_slice(h)].T)) for h in range(a.n_heads)]
    maps = ((("FFN gate", f.W_gate), ("FFN up", f.W_up), ("FFN down", f.W_down)) if f.gated
            else (("FFN in", f.W1), ("FFN out", f.W2)))
    if hasattr(f, "router"):  # a mixture of experts: W'_2, W'_4 hold the selection S(u), W'_3 the routing gates D(u)
        maps = tuple((f"MoE {name[4:]} (stacked experts, "
                      f"{'after the routing gates D(u)' if 'down' in name else 'selected units only: S(u)'})", W)
                     for name, W in maps)
    factors += [KroneckerFactor(name, None, (W.T,)) for name, W in maps]
    del X
    return LayerParameters(k, p.W1, p.W2, p.W3, p.W4, p.b2, p.b3, p.b4, tuple(factors))


def _first(form: Any) -> Tuple[Optional[LinearOperator], np.ndarray]:
    n = form.X0.size
    if form.box0:
        return form.box0["W'_{0,1}"], form.box0["b'_{0,3}"]
    return None, np.zeros(n)


def _chain(ops: list, n: int) -> LinearOperator:
    ops = [o for o in ops if o is not None]
    if not ops:
        return IdentityOperator(n)
    return ops[0] if len(ops) == 1 else Compose(ops)


def A_tilde(form: Any, box: Optional[int] = None) -> LinearOperator:
    r""":math:`\tilde A_k` (default: the last box) as a lazy composition of the :math:`\mathbf W'_{i,1}`."""
    last = form.depth + (1 if form.final else 0)
    k = last if box is None else box
    W0, _ = _first(form)
    ops = [form.final["W'_{%d,1}" % (form.depth + 1)]] if (form.final and k == last) else []
    ops += [form.params[i].W1 for i in range(min(k, form.depth) - 1, -1, -1)] + [W0]
    return _chain(ops, form.X0.size)


def c_tilde(form: Any, box: Optional[int] = None) -> np.ndarray:
    r""":math:`\tilde c_k` (default: the last box; equals ``form.terms.bias_term`` there)."""
    last = form.depth + (1 if form.final else 0)
    k = last if box is None else box
    _, c = _first(form)
    for i in range(min(k, form.depth)):
        p = form.params[i]
        c = p.W1 @ c + p.b3
    if form.final and k == last:
        L = form.depth + 1
        c = form.final["W'_{%d,1}" % L] @ c + form.final["b'_{%d,3}" % L]
    return c


def dynamic_term(form: Any, j: int) -> DynamicTerm:
    r"""Term ``j`` (1-based, as in the paper) of Eq. 11 / 33 as a :class:`DynamicTerm` (module docstring)."""
    if not isinstance(j, (int, np.integer)) or isinstance(j, bool) or not 1 <= j <= form.depth:
        raise InvalidValueError(f"j must be an int in [1, {form.depth}], got {j!r}")
    p = form.params[j - 1]
    A_prev = A_tilde(form, j - 1)
    x0, x_prev = form.X0.reshape(-1), form.params.input(j - 1).reshape(-1)
    rest = x_prev - A_prev @ x0  # c~_{j-1} + R_{j-1}
    V, beta = Compose([p.W2, A_prev]), p.W2 @ rest + p.b2
    app = activation_function(p.activation)(V @ x0 + beta)
    P = gamma = None
    if p.W4 is not None:
        P, gamma = Compose([p.W4, A_prev]), p.W4 @ rest + p.b4
        app = app * (P @ x0 + gamma)
    later = [form.params[i].W1 for i in range(form.depth - 1, j - 1, -1)]
    if form.final:
        later = [form.final["W'_{%d,1}" % (form.depth + 1)]] + later
    U = _chain(later + [p.W3], x0.size) if later else p.W3
    return DynamicTerm(int(j), V, beta, U, P, gamma, U @ app)


def token_terms(form: Any) -> dict:
    r"""Every term of the form as an (N, M) array: ``"A~x0"``, ``"c~"``, ``"U~j app_j"`` (j = 1..L); they sum to
    ``form.output``."""
    N, M = form.X0.shape
    t = form.terms
    out = {"A~x0": t.linear_term.reshape(N, M), "c~": t.bias_term.reshape(N, M)}
    out.update({f"U~{j} app_{j}": s.reshape(N, M) for j, s in enumerate(t.sigma_terms, start=1)})
    return out


def summary_html(form: Any) -> str:
    r"""A small HTML table: the form's shape and each term's share :math:`\lVert t\rVert/\lVert\mathbf x'\rVert`."""
    N, M = form.X0.shape
    total = max(float(np.linalg.norm(form.terms.total)), 1e-300)
    rows = "".join(f"<tr><td>{name}</td><td>{np.linalg.norm(v) / total:.3e}</td></tr>"
                   for name, v in token_terms(form).items())
    return (f"<table><caption>DUAT form (Eq. 11): {form.depth} layers, N={N}, M={M}, kind {form.stack.kind!r}"
            f"</caption><tr><th>term</th><th>share of ||x'_out||</th></tr>{rows}</table>")
