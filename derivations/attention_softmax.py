r"""Softmax attention: seed 001 Eq. 8 (steps 1–2), Eq. 35, the density claim of §4.2 / App. C;
seed 004 Eq. 7 and seed 000 Eq. 8 (the same display).

These identities contain :math:`\exp` and :math:`\sqrt{M}`, so they are checked
symbolically and in float64 (against :func:`symuat.numeric.attention.attention_weights`),
not in :math:`\mathbb{F}_p`.  Head :math:`i` sees the column slice
:math:`x_i\in\mathbb{R}^{N\times m}` of :math:`X\in\mathbb{R}^{N\times M}`, :math:`M = hm`,
with :math:`W_{Qi},W_{Ki}\in\mathbb{R}^{m\times d}` and head width :math:`d=m`.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from symuat import Entry, Evidence, Identity, Level, Prose, Readings, Status, dims_grid
from symuat.layers.attention import attention_matrix, softmax
from symuat.numeric.attention import AttentionWeights, attention_weights
from symuat.numeric.mha_operator import mha_operator

__all__ = ["entries", "density", "density_proxy", "eq35_step", "eq8_step2", "eq8_whole", "head_scale", "paper_scale",
           "scale_readings"]

_LEVELS = (Level.SYMBOLIC, Level.FLOAT)
_DIMS = dims_grid(h=(1, 2), N=(1, 2), m=(1, 2))
_SCOPE = ("exp and sqrt kept exact; $d = m$ (head width M/h); $F_p$ does not apply (exp, sqrt).")


_SHAPES = {"x": ("N", "m"), "WQ": ("m", "m"), "WK": ("m", "m"), "WV": ("m", "m")}


def paper_scale(h: int, m: int) -> sympy.Expr:
    r"""The printed scale :math:`1/\sqrt{M}` with :math:`M = hm` (seed Eq. 8)."""
    return 1 / sympy.sqrt(h * m)


def head_scale(h: int, m: int) -> sympy.Expr:
    r"""The usual scale :math:`1/\sqrt{d}` with head width :math:`d = m` (Vaswani et al.)."""
    return 1 / sympy.sqrt(m)


_SCALES = {"paper 1/sqrt(M)": paper_scale, "head 1/sqrt(d)": head_scale}


def _np_attention(scale):
    def ref(x, WQ, WK, WV, h, m):
        H = attention_weights(x, WQ, WK, scale=float(scale(h, m)))
        return (H @ (x @ WV)).reshape(-1)
    return ref


def _np_weights(x, WQ, WK, h, m):
    return attention_weights(x, WQ, WK, scale=float(paper_scale(h, m))).reshape(-1)


def _printed_eq8(x, WQ, WK, WV, h, m):
    r"""softmax(Q_i K_i^T / sqrt(M)) V_i with Q_i = x_i W_Qi, K_i = x_i W_Ki, V_i = x_i W_Vi, as printed."""
    Q, K, V = x * WQ, x * WK, x * WV
    return softmax(Q * K.T / sympy.sqrt(h * m)) * V


def _identity(lhs, rhs, reference) -> Identity:
    return Identity(shapes=_SHAPES, lhs=lhs, rhs=rhs, dims=_DIMS, reference=reference,
                    random_dims={"h": 2, "N": 3, "m": 2}, levels=_LEVELS, scope=_SCOPE)


def _attention(scale):
    def attention(x, WQ, WK, WV, h, m):
        return attention_matrix(x, WQ, WK, scale(h, m)) * (x * WV)
    return attention


@functools.cache
def scale_readings() -> Readings:
    r"""Eq. 8 step 1: Attention(Q,K,V) = softmax(QK^T/sqrt(M))V under each definition of Attention's scale."""
    return Readings("the softmax scale of Attention: 1/sqrt(M) as printed or 1/sqrt(d_head) (Vaswani et al.)",
                    {name: _identity(_attention(s), _printed_eq8, _np_attention(s)) for name, s in _SCALES.items()})


def _H(x, WQ, WK, h, m):
    return attention_matrix(x, WQ, WK, paper_scale(h, m))


def _end(x, WQ, WK, WV, h, m):
    return _H(x, WQ, WK, h, m) * (x * WV)


def eq8_whole() -> Readings:
    r"""Eq. 8 end to end: Attention(Q, K, V) = H_i[x_i W_Vi] under each definition of Attention's scale."""
    return Readings("the softmax scale of Attention: 1/sqrt(M) as printed or 1/sqrt(d_head) (Vaswani et al.)",
                    {name: _identity(_attention(s), _end, _np_attention(s)) for name, s in _SCALES.items()})


def eq8_step2() -> Identity:
    return _identity(_printed_eq8, _end, _np_attention(paper_scale))


def _eq35_product(x, WQ, WK, h, m):
    return softmax(x * WQ * WK.T * x.T * paper_scale(h, m))


def _eq35_merged(x, WQ, WK, h, m):
    return softmax(x * (WQ * WK.T) * x.T * paper_scale(h, m))


def eq35_step(step: int) -> Identity:
    r"""Eq. 35: softmax(x W_Q (x W_K)^T/√M) = softmax(x W_Q W_K^T x^T/√M) = softmax(x W_QK x^T/√M)."""
    lhs, rhs = (_H, _eq35_product) if step == 1 else (_eq35_product, _eq35_merged)
    return _identity(lhs, rhs, _np_weights)


def density(seed: int, N: int = 8, M: int = 8, n_heads: int = 2) -> dict[str, float]:
    r"""Fraction of non-zero entries of :math:`W'_{HVO}=\sum_h H_h\otimes(W_{V,h}W_{O,h})^T` with real softmax."""
    rng = np.random.default_rng([seed, 35])
    X = rng.standard_normal((N, M))
    W = {k: rng.standard_normal((M, M)) / np.sqrt(M) for k in ("W_Q", "W_K", "W_V", "W_O")}
    out = {}
    for causal in (False, True):
        op, _ = mha_operator(X, AttentionWeights(**W, n_heads=n_heads, causal=causal))
        dense = op.to_dense()
        out["causal" if causal else "generic"] = float(np.count_nonzero(dense) / dense.size)
    return out


def density_proxy(seed: int) -> tuple[Evidence, ...]:
    N, M = 8, 8
    got = density(seed, N, M)
    expect = (N + 1) / (2 * N)
    return (Evidence(Level.FLOAT, got["generic"] > 0.99,
                     f"density of W'_HVO (N={N}, M={M}, 2 heads, softmax attention, seed {seed}): "
                     f"generic {got['generic']:.4f}; causal mask {got['causal']:.4f} "
                     f"(block lower-triangular, (N+1)/(2N) = {expect:.4f})"),)


_EQ8_1 = (r"\text{Attention}(\mathbf{x}_{i}\mathbf{W}_{Qi} = \mathbf{Q}_{i}, \mathbf{x}_{i}\mathbf{W}_{Ki} = "
          r"\mathbf{K}_{i}, \mathbf{x}_{i}\mathbf{W}_{Vi} = \mathbf{V}_{i}) = \operatorname{softmax}\left("
          r"\frac{\mathbf{Q}_{i}\mathbf{K}_{i}^{T}}{\sqrt{M}}\right)\mathbf{V}_{i}")
_SCALE_NOTE = (r"$x_i$ has M/h columns; Vaswani et al. scale by the head width $d = M/h$, the paper by $\sqrt{M}$: "
               "equal only for one head (smallest counterexample $h = 2$, $N = 2$).")
_EQ35 = [r"\operatorname{softmax}\left(\frac{\mathbf{x}_{i} \mathbf{W}_{Qi}(\mathbf{x}_{i} \mathbf{W}_{Ki})^{T}}"
         r"{\sqrt{M}}\right)",
         r"\operatorname{softmax}\left(\frac{\mathbf{x}_{i} \mathbf{W}_{Qi} \mathbf{W}_{Ki}^{T} \mathbf{x}_{i}^{T}}"
         r"{\sqrt{M}}\right)",
         r"\operatorname{softmax}\left(\frac{\mathbf{x}_{i} \mathbf{W}_{QKi} \mathbf{x}_{i}^{T}}{\sqrt{M}}\right)"]


def entries() -> list[Entry]:
    eq35 = [Entry(f"duat:eq35.step{k}", f"App. C, Eq. 35, step {k}",
                  (r"\mathbf{H}_{i} = " if k == 1 else "") + f"{_EQ35[k - 1]} = {_EQ35[k]}", Status.PROVED,
                  eq35_step(k),
                  note=r"$H_i$ on the left is symuat's \texttt{attention\_matrix} with scale $1/\sqrt{M}$."
                  if k == 1 else
                  r"$W_{QKi}$ := $W_{Qi} W_{Ki}^T$ (App. A Fig. 1.a); as a free $m\times m$ matrix it would be more "
                  r"general (rank $\le$ d).")
            for k in (1, 2)]
    whole35 = _identity(_H, _eq35_merged, _np_weights)
    return [
        Entry("duat:eq8", "Eq. 8 (whole chain)",
              _EQ8_1 + r" = \mathbf{H}_{i}\mathbf{V}_{i} = \mathbf{H}_{i}[\mathbf{x}_{i}\mathbf{W}_{Vi}] = "
              r"\hat{\mathbf{H}}_{i}", Status.CONVENTION, eq8_whole(),
              note="End to end: " + _SCALE_NOTE + " Each equality is also its own .step entry."),
        Entry("duat:eq35", "App. C, Eq. 35 (whole chain)",
              r"\mathbf{H}_{i} = " + " = ".join(_EQ35), Status.PROVED, whole35,
              note="End to end; each equality is also its own .step entry. $W_{QKi}$ := $W_{Qi} W_{Ki}^T$."),
        Entry("duat:eq8.step1", "Eq. 8, first equality", _EQ8_1, Status.CONVENTION,
              scale_readings(), note=_SCALE_NOTE),
        Entry("duat:eq8.step2", "Eq. 8, second equality",
              r"\operatorname{softmax}\left(\frac{\mathbf{Q}_{i}\mathbf{K}_{i}^{T}}{\sqrt{M}}\right)\mathbf{V}_{i}"
              r" = \mathbf{H}_{i}\mathbf{V}_{i}", Status.PROVED, eq8_step2(),
              note=r"$H_i$ as defined by Eq. 35 (symuat.layers.attention.\texttt{attention\_matrix})."),
        *eq35,
        Entry("duat:sec4.2.claim1", "§4.2 and App. C (Figure 4.d)",
              r"\mathbf{W}'_{HVO} \text{ is a dense matrix (almost devoid of zero elements)}", Status.PROSE,
              Prose(r"Density is not an equation; the proxy measures the non-zero fraction of $\sum_h H_h "
                    r"\otimes(W_{Vh} W_{Oh})^T$ with real softmax attention: ~1 for generic inputs, but only "
                    "(N+1)/(2N) with a causal mask (decoder LLMs), where $W'_{HVO}$ is block lower-triangular.",
                    proxy=density_proxy)),
        Entry("uat-arxiv:eq7.step1", "§3.4, Eq. 7",
              r"\operatorname{Attention}(\mathbf{x}_{i}\mathbf{W}_{Qi}=\mathbf{Q}_{i},\mathbf{x}_{i}\mathbf{W}_{Ki}"
              r"=\mathbf{K}_{i},\mathbf{x}_{i}\mathbf{W}_{Vi}=\mathbf{V}_{i})=\operatorname{softmax}\left(\frac{"
              r"\mathbf{Q}_{i}\mathbf{K}_{i}^{T}}{\sqrt{M}}\right)\mathbf{V}_{i}", Status.CONVENTION,
              scale_readings(), note=_SCALE_NOTE),
        Entry("uat-aaai:eq8.step1", "§3.4, Eq. 8", _EQ8_1, Status.CONVENTION, scale_readings(),
              note="OCR is garbled ('softmax (Qz ¢ ) $VL'$); transcribed from the DUAT version Eq. 8. " + _SCALE_NOTE),
    ]
