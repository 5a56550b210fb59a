r"""Beyond the paper: T5's relative position buckets (T5, mT5, UMT5), a static additive bias inside the softmax
(ids ``ext:relative-bias.*``).

Head :math:`h` of T5's attention adds :math:`B_{h,nm} = b_h(\mathrm{bucket}(m - n))` to its *unscaled* scores
:math:`S_h = Q_hK_h^T`, then masks and normalises: :math:`H_h = \mathrm{softmax}(S_h + B_h + \mathrm{mask})`.  The bias
does not depend on the input, so it changes :math:`H_h` only and Eq. 10's closed form
:math:`W'_{HVO} = \sum_h H_h\otimes(W_{V,h}W_{O,h})^T` holds as for ALiBi (``ext:alibi.closed-form``):

* ``ext:relative-bias.encoder`` — bidirectional (T5's encoder), right padding;
* ``ext:relative-bias.decoder`` — causal (the decoder's self-attention), left padding;
* ``ext:relative-bias.buckets`` — the bucket function itself (:func:`symuat.layers.attention_scores.
  relative_position_bucket`, exact and logarithmic regions, bidirectional and causal) against the exact threshold
  form written here: distance :math:`k \ge E` (:math:`E` half the buckets) falls in bucket
  :math:`E + \#\{j \ge 1 : \theta_j \le k\}` with :math:`\theta_j = \lceil E\,(D/E)^{j/(B-E)}\rceil`.

In the closed-form identities the bias :math:`B_h` is a free :math:`N\times N` matrix per head (any static bias,
T5's Toeplitz one among them), so the all-sizes level decides them; the normalisers :math:`z_{h,n}` are free and σ
stands for exp.  The library's bucket function is compared with :func:`~symuat.layers.attention_scores.
relative_position_bias` through the attention module's public ``compute_bias`` in
``tests/test_derivations_ext_positions.py``.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy

from symuat import Entry, Identity, Status
from symuat.algebra.families import family_member, family_shapes
from symuat.evidence.fields import SIGMA, logistic
from symuat.layers.attention_scores import (
    masked_weights,
    relative_position_bias,
    sliding_window_mask,
    symmetric_window_mask,
)

from ._coq_links import linked
from .ext_attention_variants import _closed_form, _head_shapes, _library, _np_library

__all__ = ["entries", "relative_bias_identity", "bucket_identity", "threshold_bucket", "np_bucket", "BUCKETS",
           "MAX_DISTANCE"]

Matrix = sympy.ImmutableMatrix

#: the bucket parameters of the bucket entry's grid: 8 buckets (bidirectional: 4 per side), max distance 16
BUCKETS, MAX_DISTANCE = 8, 16


# --- the bias inside the softmax ------------------------------------------------------------------

def _mask(d, causal: bool):
    N, p = d["N"], d["N"] - d["r"]
    return sliding_window_mask(N, N, p) if causal else symmetric_window_mask(N, N, p)


def _weights(e, d, causal: bool):
    r""":math:`\sigma(S_h + B_h)\,z_h` on the allowed keys (T5: unscaled scores)."""
    allowed = _mask(d, causal)

    def weights(j, Q, K):
        return masked_weights(Q * K.T + family_member(e, "B", j), allowed, family_member(e, "z", j), SIGMA)
    return weights


def _np_allowed(d, causal: bool) -> np.ndarray:
    N, r = d["N"], d["r"]
    n, m = np.indices((N, N))
    if causal:
        p = N - r
        return np.where(n < p, n == m, (m <= n) & (m >= p))
    return np.where(n >= r, n == m, m < r)


def _reference(causal: bool):
    def ref(a, d):
        allowed = _np_allowed(d, causal)
        return _np_library(a, d, lambda j, Q, K: np.where(allowed, logistic(Q @ K.T + a[f"B{j + 1}"]), 0.0)
                           * a[f"z{j + 1}"])
    return ref


_DIMS = tuple({"h": h, "N": N, "d": 1, "r": r} for h, N in ((1, 1), (1, 2), (1, 3), (2, 2)) for r in (N, N - 1)
              if r >= 1)


@functools.cache
def relative_bias_identity(causal: bool) -> Identity:
    r"""MHA with scores :math:`S_h + B_h` (unscaled, masked) = :math:`\sum_h H_h\otimes(W_{V,h}W_{O,h})^Tx'`."""
    side = "left" if causal else "right"
    return Identity(shapes=lambda d: _head_shapes(d, family_shapes("B", d["h"], d["N"], d["N"])),
                    lhs=lambda e, d: _library(e, d, _weights(e, d, causal)),
                    rhs=lambda e, d: _closed_form(e, d, _weights(e, d, causal)),
                    dims=_DIMS, reference=_reference(causal), random_dims={"h": 2, "N": 4, "d": 2, "r": 3},
                    scope=r"The bias $B_h$ (any static $N\times N$ matrix per head: T5's $b_h(\mathrm{bucket}(m -"
                          r" n))$ among them) and the normalisers $z_{h,n}$ are free symbols; "
                          + (r"causal mask" if causal else r"bidirectional mask")
                          + rf" with $N - r$ padded tokens on the {side}. Up to 2 heads, $N = 3$.")


# --- the bucket function --------------------------------------------------------------------------

def threshold_bucket(k: int, bidirectional: bool, num_buckets: int, max_distance: int) -> int:
    r"""T5's bucket of :math:`k = m - n` from exact thresholds (no floating-point logarithm): the distance
    :math:`\delta` (:math:`|k|`, causal :math:`\max(-k, 0)`) is its own bucket below :math:`E = B'/2`, else
    :math:`E + \#\{1 \le j < B' - E : \theta_j \le \delta\}` with :math:`\theta_j = \lceil E\,(D/E)^{j/(B'-E)}\rceil`
    (:math:`B'` the buckets of one side, :math:`D` the maximal distance)."""
    side = num_buckets // 2 if bidirectional else num_buckets
    offset = side if bidirectional and k > 0 else 0
    delta = abs(k) if bidirectional else max(-k, 0)
    E = side // 2
    if delta < E:
        return offset + delta
    ratio = sympy.Rational(max_distance, E)
    thresholds = (sympy.ceiling(E * ratio ** sympy.Rational(j, side - E)) for j in range(1, side - E))
    return offset + E + sum(1 for t in thresholds if t <= delta)


def np_bucket(k: np.ndarray, bidirectional: bool, num_buckets: int, max_distance: int) -> np.ndarray:
    """The bucket of every entry of ``k`` in NumPy, vectorised as the T5 code writes it."""
    out = np.zeros_like(k)
    if bidirectional:
        num_buckets //= 2
        out += (k > 0) * num_buckets
        k = np.abs(k)
    else:
        k = np.maximum(-k, 0)
    exact = num_buckets // 2
    with np.errstate(divide="ignore"):
        large = exact + (np.log(np.maximum(k, 1) / exact) / np.log(max_distance / exact)
                         * (num_buckets - exact)).astype(int)
    return out + np.where(k < exact, k, np.minimum(large, num_buckets - 1))


def _bias_pair(table, N: int, bucket) -> Matrix:
    """The bidirectional bias over the causal one, each from the first resp. second column of ``table``."""
    def side(col, bidirectional):
        return Matrix(N, N, lambda n, m: table[bucket(m - n, bidirectional, BUCKETS, MAX_DISTANCE), col])
    return Matrix.vstack(side(0, True), side(1, False))


def _np_bias_pair(a, d):
    n, m = np.indices((d["N"], d["N"]))
    t = a["t"]
    return np.vstack([t[np_bucket(m - n, True, BUCKETS, MAX_DISTANCE), 0],
                      t[np_bucket(m - n, False, BUCKETS, MAX_DISTANCE), 1]])


@functools.cache
def bucket_identity() -> Identity:
    r"""T5's bias matrices (bidirectional over causal) from :func:`relative_position_bias` = the threshold form."""
    def lhs(e, d):
        t = e["t"]
        return Matrix.vstack(relative_position_bias(t[:, 0], d["N"], True, MAX_DISTANCE),
                             relative_position_bias(t[:, 1], d["N"], False, MAX_DISTANCE))
    return Identity(shapes=lambda d: {"t": (BUCKETS, 2)}, lhs=lhs,
                    rhs=lambda e, d: _bias_pair(e["t"], d["N"], threshold_bucket),
                    dims=({"N": 1}, {"N": 2}, {"N": 3}, {"N": 8}, {"N": 20}), reference=_np_bias_pair,
                    random_dims={"N": 24},
                    scope=rf"The bucket tables (one bidirectional, one causal) are free symbols; {BUCKETS} buckets,"
                          rf" maximal distance {MAX_DISTANCE}: every relative position up to $N = 20$ covers the exact"
                          r" region, the logarithmic one and the last bucket on both sides. For every relative"
                          r" position, every $B$ and every $D > B'/2$, the printed form (its floor of the logarithm"
                          r" read as the largest $j$ with $D^jE^c \le \delta^cE^j$, $c = B' - E$) equals the threshold"
                          r" form: Coq theorem \texttt{Buckets.bucket\_log\_threshold}; the library's float"
                          r" logarithm is compared on the grid only.")


# --- the entries ----------------------------------------------------------------------------------

_CF = (r"\operatorname{vec}_r\,\mathrm{MHA}(\mathbf X) = \textstyle\sum_h \mathbf H_h\otimes(\mathbf W_{V,h}"
       r"\mathbf W_{O,h})^T\,\mathbf x',\ \mathbf H_h = \mathrm{softmax}\big(\mathbf Q_h\mathbf K_h^T + \mathbf B_h"
       r" + \mathrm{mask}\big),\ (\mathbf B_h)_{nm} = b_h(\mathrm{bucket}(m - n))")
_BUCKET = (r"\mathrm{bucket}(k) = o + \begin{cases}\delta & \delta < E\\ \min\big(E + \lfloor\frac{\log(\delta/E)}"
           r"{\log(D/E)}(B' - E)\rfloor,\ B' - 1\big) & \delta \ge E\end{cases}")


def entries() -> list[Entry]:
    """The three entries, the closed forms with their Coq theorem (docs/coq.md)."""
    P = Status.PROVED
    return linked([
        Entry("ext:relative-bias.encoder", "T5 relative position buckets, encoder (bidirectional)",
              _CF + r",\ \text{bidirectional}", P, relative_bias_identity(False),
              note=r"The bias is static and additive inside the softmax: it changes $H_h$ only, so $W'_{HVO}$ keeps"
                   r" Eq. 10's closed form and the block is the Eq. 20 box of its layout (pre-LN, T5's RMSNorm)."
                   r" T5 does not scale its scores; the table is layer 0's, passed on to every layer (UMT5: each"
                   r" layer its own)."),
        Entry("ext:relative-bias.decoder", "T5 relative position buckets, decoder self-attention (causal)",
              _CF + r",\ \text{causal}", P, relative_bias_identity(True),
              note=r"As the encoder, with the causal mask and the decoder's unidirectional buckets."),
        Entry("ext:relative-bias.buckets", "T5's bucket function, bidirectional and causal", _BUCKET, P,
              bucket_identity(),
              note=r"$\delta = |k|$ and $o = B/2\,[k > 0]$ with $B' = B/2$ (bidirectional), $\delta = \max(-k, 0)$,"
                   r" $o = 0$, $B' = B$ (causal); $E = B'/2$, $D$ the maximal distance. The float logarithm of the"
                   r" library's formula against exact thresholds $\lceil E(D/E)^{j/(B'-E)}\rceil$; the library's"
                   r" own \texttt{compute\_bias} is compared in the tests (default $B = 32$, $D = 128$)."),
    ])
