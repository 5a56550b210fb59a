r"""Beyond the paper: block layouts of the 2024–2025 families as (gated) Eq. 20 boxes, with their tables proved
for every depth (ids ``ext:sandwich-norm.*``, ``ext:parallel-block.shared-norm*``).

* *Sandwich norms* (Gemma 2/3): a norm before *and after* each sublayer,
  :math:`h = x + N_3(\mathrm{MHA}(N_1x))`, :math:`y = h + N_4(\mathrm{FFN}(N_2h))`.  It is a layout: Eq. 20 with
  :math:`\mathbf W'_{i,1} = I + L_3AL_1`, :math:`\mathbf W'_{i,3} = L_4F_d`, and the post-norms' operators
  :math:`L_3, L_4` (dynamic) inside the other parameters.
* *Parallel blocks with one shared norm* (GPT-J, Phi-2, Cohere, Falcon-7B): :math:`x + \mathrm{MHA}(Nx) +
  \mathrm{FFN}(Nx)`, the parallel block of :mod:`symuat_paper.ext_duat_blocks` with :math:`N_2 = N_1`.  Their
  rotary is interleaved (GPT-J, Cohere) or partial (GPT-J, Phi-2): ``ext:rotary.interleaved``,
  ``ext:rotary.operator``; Cohere's norm is a LayerNorm without bias: ``ext:layernorm.no-bias``.

Blocks are written in opaque noncommutative symbols as in :mod:`symuat.expansion.blocks` (a norm at its input
:math:`L_kx + \beta'_k`, attention :math:`Ax + a`); evidence as in :mod:`symuat_paper.ext_duat_blocks` (the
gate encoded by σ for the exact and float levels, plain NumPy references written here).
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from symuat import Entry, OpaqueIdentity, Status
from symuat.expansion import INPUT, block_symbols, derive_table, gate, nc_symbol, sigma
from symuat.names import logistic as sig

from .ext_duat_blocks import enc, induction_claim, np_gate

__all__ = ["entries", "sandwich_term", "shared_norm_parallel_term", "sandwich_claims", "np_sandwich", "eq20_identity"]

X = nc_symbol("x'_{i-1}")
ONE = sympy.S.One


def _post_norms(i):
    return tuple((nc_symbol(f"W'_{{{i},N{k}}}"), nc_symbol(f"b'_{{{i},N{k}}}")) for k in (3, 4))


def _ffn(s, gated):
    (Fi, fi), (Fu, fu), (Fo, fo) = s["in"], s["up"], s["out"]

    def ffn(u):
        return Fo * (gate(Fi * u + fi, Fu * u + fu) if gated else sigma(Fi * u + fi)) + fo
    return ffn


@functools.cache
def sandwich_term(gated: bool):
    r"""The sandwich-norm block ``(i, x) -> expr``: :math:`h = x + L_3(A(L_1x + \beta_1) + a) + \beta_3`,
    :math:`y = h + L_4\,\mathrm{FFN}(L_2h + \beta_2) + \beta_4`."""
    def layer(i, x):
        s = block_symbols(i)
        (A, a), (L1, b1), (L2, b2) = s["HVO"], s["N1"], s["N2"]
        (L3, b3), (L4, b4) = _post_norms(i)
        h = x + L3 * (A * (L1 * x + b1) + a) + b3
        return h + L4 * _ffn(s, gated)(L2 * h + b2) + b4
    return layer


@functools.cache
def shared_norm_parallel_term(gated: bool):
    r"""The parallel block with one norm: :math:`x + A(L_1x + \beta_1) + a + \mathrm{FFN}(L_1x + \beta_1)`."""
    def layer(i, x):
        s = block_symbols(i)
        (A, a), (L1, b1) = s["HVO"], s["N1"]
        u = L1 * x + b1
        return x + A * u + a + _ffn(s, gated)(u)
    return layer


def sandwich_claims(layout: str) -> dict[str, sympy.Expr]:
    r"""Hand-written Eq. 20 parameters: ``W1``, ``b3``, ``W3`` and the FFN input map ``X x + Y``
    (:math:`W'_{i,2} = F_gX`, :math:`b'_{i,2} = F_gY + f_g`; gated: :math:`W'_{i,4} = F_uX`, :math:`b'_{i,4} =
    F_uY + f_u`)."""
    s = block_symbols("i")
    (A, a), (L1, b1), (L2, b2), (Fo, fo) = s["HVO"], s["N1"], s["N2"], s["out"]
    if layout == "sandwich":
        (L3, b3), (L4, b4) = _post_norms("i")
        P, p = ONE + L3 * A * L1, L3 * (A * b1 + a) + b3
        return {"W1": P, "b3": p + L4 * fo + b4, "W3": L4 * Fo, "X": L2 * P, "Y": L2 * p + b2}
    return {"W1": ONE + A * L1, "b3": A * b1 + a + fo, "W3": Fo, "X": L1, "Y": b1}


def _claimed(layout: str, gated: bool) -> sympy.Expr:
    c, s = sandwich_claims(layout), block_symbols("i")
    (Fi, fi), (Fu, fu) = s["in"], s["up"]
    u = Fi * c["X"] * X + Fi * c["Y"] + fi
    inner = gate(u, Fu * c["X"] * X + Fu * c["Y"] + fu) if gated else sigma(u)
    return c["W1"] * X + c["b3"] + c["W3"] * inner


def np_sandwich(a, layout: str, gated: bool, i, x: np.ndarray) -> np.ndarray:
    """One block in plain NumPy (names as in :func:`symuat.expansion.block_symbols`, plus ``N3``, ``N4``)."""
    def m(p):
        return a[f"W'_{{{i},{p}}}"]

    def v(p):
        return a[f"b'_{{{i},{p}}}"]

    def n(k, z):
        return m(f"N{k}") @ z + v(f"N{k}")

    def ffn(z):
        g = m("in") @ z + v("in")
        return m("out") @ (np_gate(a, g, m("up") @ z + v("up")) if gated else sig(g)) + v("out")

    if layout == "sandwich":
        h = x + n(3, m("HVO") @ n(1, x) + v("HVO"))
        return h + n(4, ffn(n(2, h)))
    u = n(1, x)
    return x + m("HVO") @ u + v("HVO") + ffn(u)


_TERMS = {"sandwich": sandwich_term, "shared-norm": shared_norm_parallel_term}
_CASES = (False, True)


def eq20_identity(layout: str) -> OpaqueIdentity:
    return OpaqueIdentity(lambda g: enc(_TERMS[layout](g)("i", X)), lambda g: enc(_claimed(layout, g)), _CASES,
                          reference=lambda a, g: np_sandwich(a, layout, g, "i", a["x'_{i-1}"]),
                          scope="The block in opaque symbols against the hand-written (gated) Eq. 20 parameters.")


def _table_identity(layout: str) -> OpaqueIdentity:
    def nested(gated, depth):
        x = INPUT
        for i in range(1, depth + 1):
            x = _TERMS[layout](gated)(i, x)
        return x

    def rhs(case):
        t = derive_table(case[1], _TERMS[layout](case[0])).table
        return enc(t.unfold(t.form()))

    def ref(a, case):
        x = a["x'_{0}"]
        for i in range(1, case[1] + 1):
            x = np_sandwich(a, layout, case[0], i, x)
        return x

    return OpaqueIdentity(lambda c: enc(nested(*c)), rhs, ((False, 1), (False, 2), (True, 1), (True, 2), (False, 3)),
                          reference=ref, check_case=(False, 2),
                          scope=r"The derived table's unfolded form against the nested network, plain and gated,"
                                r" depths 1--3 (the exact and float levels at depth 2, where the logistic $\sigma$ of"
                                r" the float level does not saturate on the block's products of five matrices).")


def _induction_identity(layout: str) -> OpaqueIdentity:
    return induction_claim(layout, _TERMS[layout])


_SANDWICH = (r"\mathbf W'_{i,1} = I + L_3AL_1,\ \mathbf W'_{i,2} = F_1L_2\mathbf W'_{i,1},\ "
             r"\mathbf W'_{i,3} = L_4F_2,\ \mathbf b'_{i,3} = L_3(A\beta'_1 + a) + \beta'_3 + L_4f_2 + \beta'_4")
_SHARED = (r"\mathbf W'_{i,1} = I + AL,\ \mathbf b'_{i,3} = A\beta' + a + f_2,\ \mathbf W'_{i,2} = F_1L,\ "
           r"\mathbf b'_{i,2} = F_1\beta' + f_1,\ \mathbf W'_{i,3} = F_2")
_EVERY = (r"x'_L = \tilde A_Lx'_0 + \tilde c_L + \textstyle\sum_{j\le L}\tilde U^{(L)}_j\sigma(\tilde V_jx'_0 +"
          r" \tilde\beta_j)\ \text{for every } L")


def entries() -> list[Entry]:
    P = Status.PROVED
    return [
        Entry("ext:sandwich-norm.eq20", "sandwich norms (Gemma 2/3) as Eq. 20", _SANDWICH, P,
              eq20_identity("sandwich"),
              note=r"The block $h = x + N_3(\mathrm{MHA}(N_1x))$, $y = h + N_4(\mathrm{FFN}(N_2h))$ is a layout, not a"
                   r" new kind of layer: the post-norms $L_3$, $L_4$ (dynamic, like every norm"
                   r" operator) multiply the sublayer outputs, so $\mathbf W'_{i,3} = L_4F_2$ and $\mathbf b'_{i,3}$"
                   r" are dynamic. The paper's merge $\mathbf W'_{i,2} = F_1L_2\mathbf W'_{i,1}$ still holds. Gated"
                   r" FFN: $\mathbf W'_{i,4} = F_uL_2\mathbf W'_{i,1}$."),
        Entry("ext:sandwich-norm.table", "sandwich norms, substitution table", _EVERY.replace(
              r"\ \text{for every } L", r"\ (L \le 3)"), P, _table_identity("sandwich"),
              note="Derived mechanically from the block written in opaque symbols; the rules are the paper's with"
                   " the parameters of ext:sandwich-norm.eq20."),
        Entry("ext:sandwich-norm.induction", "sandwich norms, every depth", _EVERY, P,
              _induction_identity("sandwich")),
        Entry("ext:parallel-block.shared-norm", "parallel block with one norm (GPT-J, Phi-2, Cohere, Falcon)",
              _SHARED, P, eq20_identity("shared-norm"),
              note=r"The block $x + \mathrm{MHA}(Nx) + \mathrm{FFN}(Nx)$: the parallel block of"
                   r" \texttt{ext:parallel-block.eq20} with $N_2 = N_1$; Falcon's"
                   r" \texttt{new\_decoder\_architecture} (two norms) is that entry itself. The rotary of these"
                   r" families is interleaved or partial (\texttt{ext:rotary.interleaved},"
                   r" \texttt{ext:rotary.operator}) and Cohere's norm a LayerNorm without bias"
                   r" (\texttt{ext:layernorm.no-bias})."),
        Entry("ext:parallel-block.shared-norm-induction", "parallel block with one norm, every depth", _EVERY, P,
              _induction_identity("shared-norm")),
    ]
