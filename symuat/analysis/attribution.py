r"""Exact attributions of a DUAT form's output: by term, source token, layer, head or neuron (issue 21).

Every attribution is ``values`` (P, N, M) with ``parts`` labels and a ``rest`` (N, M), and
``values.sum(0) + rest == form.output`` (to rounding, no error term).

``by="term"``
    The terms of Eq. 11 / 33: :math:`\tilde A x'_0`, :math:`\tilde c`, :math:`\tilde U_j\,\mathrm{app}_j`; rest 0.
``by="source"``
    Input token :math:`s`: with every dynamic parameter (:math:`H_h`, the norms' :math:`D(X)`) and every gate held
    (:mod:`symuat.numeric.frozen`, ``gates="held"``) the network is an affine map :math:`F(X) = \mathcal A X + F(0)`;
    part :math:`s` is :math:`\mathcal A` applied to row :math:`s` of :math:`X_0` alone, rest :math:`F(0)` (position
    embeddings, biases, norm shifts).  Causal attention gives token :math:`n` nothing from a token :math:`s > n`.
``by="layer"``, ``"head"``, ``"neuron"``
    Direct contributions of the residual-stream writers: the input embedding (``embed``), every head
    :math:`H_h(uW_{V,h} + b_{V,h})W_{O,h}` and every neuron :math:`\sigma(z_n)\,W_2[n]` (gated:
    :math:`a_n (u W_u + b_u)_n W_d[n]`), each propagated to the output along the residual path (the held
    norms on it, the final norm); the output biases :math:`b_O, b_2`, norm shifts :math:`\beta` and position
    embeddings go to ``rest``.  Every other writer's input is held at its actual value, so a writer's part is
    exactly what removing its write changes when nothing downstream re-reads it
    (:meth:`~symuat.numeric.frozen.Frozen.direct`).  ``"layer"`` groups heads and neurons of a layer,
    ``"head"`` keeps one FFN part per layer, ``"neuron"`` one attention part per layer.

With the model's head (:class:`~symuat.numeric.head.Head`: :math:`U`, bias, a transform such as masked-LM's
dense → act → LayerNorm, Cohere's logit scale, Gemma-2's soft cap), ``target="logits"`` maps every part through
the head held at the output (:meth:`~symuat.numeric.head.Head.held`: the transform's gates, its LayerNorm's
:math:`D` and the cap's gate fixed, as the form holds :math:`H_h`), an affine :math:`t \mapsto L(t) + k` (``rest``
gets :math:`k`); an integer ``target`` keeps that token's logit, ``values`` (P, N).  ``output`` is the head's
logits of the form's output.  A form made by :func:`symuat.models.load` carries the library's own output
(``form.reference``): :attr:`Attribution.error` then measures against the library (``compared_with``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from ..errors import InvalidValueError
from ..numeric.head import as_head
from ..numeric.memory import OutOfMemoryError, format_bytes, out_of_memory
from .frozen import frozen

__all__ = ["Attribution", "attribution", "attribution_bytes", "BY"]

BY = ("term", "source", "layer", "head", "neuron")
#: working memory of one batch of source tokens propagated together
CHUNK_BYTES = 256 * 2 ** 20


def _parts(form: Any, by: str) -> int:
    N, L = form.X0.shape[0], form.depth
    blocks = form.stack.blocks
    return {"term": L + 2, "source": N, "layer": L + 1, "head": 1 + sum(b.attention.n_heads + 1 for b in blocks),
            "neuron": 1 + sum(b.ffn.hidden + 1 for b in blocks)}[by]


def attribution_bytes(form: Any, by: str) -> int:
    """Bytes of the ``values`` array of ``form.attribution(by)`` (float64 ``(P, N, M)``) plus one more for rest."""
    N, M = form.X0.shape
    return 8 * (_parts(form, by) + 1) * N * M


def _physical_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - platforms without sysconf
        return 2 ** 62


@dataclass(frozen=True)
class Attribution:
    r"""``values[p]`` is part ``parts[p]``'s exact contribution; ``values.sum(0) + rest`` is ``output``."""

    by: str
    parts: Tuple[str, ...]
    values: np.ndarray
    rest: np.ndarray
    output: np.ndarray
    target: Any = None
    reference: Optional[np.ndarray] = None
    reference_rows: Optional[Tuple[int, ...]] = None

    @property
    def compared_with(self) -> str:
        """What :attr:`error` measures against: ``"library"`` (the library's own output, ``reference``) or
        ``"form"`` (symuat's own ``output``, when no library model was at hand)."""
        return "form" if self.reference is None else "library"

    @property
    def error(self) -> float:
        """Largest absolute entry of ``values.sum(0) + rest`` minus the library's own output (``reference``, at
        its ``reference_rows``) when the form came from a library model, else minus ``output`` (to rounding)."""
        total = self.values.sum(0) + self.rest
        if self.reference is None:
            return float(np.max(np.abs(total - self.output)))
        rows = slice(None) if self.reference_rows is None else list(self.reference_rows)
        return float(np.max(np.abs(total[rows] - self.reference[rows])))

    def shares(self, token: Optional[int] = None) -> dict:
        r"""Signed shares :math:`\langle t_p, x\rangle / \lVert x\rVert^2` of every part and of ``rest``
        (over all tokens, or one ``token``); they sum to 1."""
        sel = (slice(None),) if token is None else (token,)
        x = self.output[sel].ravel()
        nn = float(x @ x)
        if nn == 0.0:
            raise InvalidValueError("shares: the output is 0, its shares are undefined")
        out = {p: float(self.values[(i,) + sel].ravel() @ x) / nn for i, p in enumerate(self.parts)}
        out["rest"] = float(self.rest[sel].ravel() @ x) / nn
        return out

    def norms(self) -> np.ndarray:
        """``‖values[p, n]‖`` per part and token, shape (P, N) (a heat map)."""
        v = self.values
        return np.abs(v) if v.ndim == 2 else np.linalg.norm(v, axis=-1)


def _groups(form: Any, by: str):
    L = form.depth
    blocks = form.stack.blocks
    parts = ["embed"]
    index: dict = {("embed",): 0}
    for k, b in enumerate(blocks):
        H, F = b.attention.n_heads, b.ffn.hidden
        if by == "layer":
            parts.append(f"L{k}")
            for h in range(H):
                index[("head", k, h)] = len(parts) - 1
            for n in range(F):
                index[("neuron", k, n)] = len(parts) - 1
            continue
        if by == "head":
            for h in range(H):
                index[("head", k, h)] = len(parts)
                parts.append(f"L{k}.H{h}")
        else:
            parts.append(f"L{k}.attn")
            for h in range(H):
                index[("head", k, h)] = len(parts) - 1
        if by == "neuron":
            for n in range(F):
                index[("neuron", k, n)] = len(parts)
                parts.append(f"L{k}.N{n}")
        else:
            parts.append(f"L{k}.ffn")
            for n in range(F):
                index[("neuron", k, n)] = len(parts) - 1
    del L
    return tuple(parts), index


def _raw(form: Any, by: str):
    N, M = form.X0.shape
    if by == "term":
        terms = form.token_terms()
        return tuple(terms), np.stack(list(terms.values())), np.zeros((N, M))
    if by == "source":
        F = frozen(form, "held")
        rest = F(np.zeros((N, M)))
        values = np.empty((N, N, M))
        width = max(M, max(b.ffn.hidden for b in form.stack.blocks))
        chunk = max(1, min(N, CHUNK_BYTES // (8 * 4 * N * width)))  # sources propagated together (a batch)
        for lo in range(0, N, chunk):
            hi = min(N, lo + chunk)
            Xs = np.zeros((hi - lo, N, M))
            Xs[np.arange(hi - lo), np.arange(lo, hi)] = form.X0[lo:hi]
            values[lo:hi] = F(Xs) - rest
        return tuple(f"tok{s}" for s in range(N)), values, rest
    parts, index = _groups(form, by)
    slots = frozen(form, "held").direct(index.__getitem__, len(parts) + 1)
    return parts, slots[:-1], slots[-1]


def attribution(form: Any, by: str = "term", target: Any = None) -> Attribution:
    """The exact attribution of ``form.output`` (module docstring); ``target`` None, ``"logits"`` or a token id."""
    if by not in BY:
        raise InvalidValueError(f"by must be one of {BY}, got {by!r}")
    need = attribution_bytes(form, by)
    if need > _physical_memory():
        raise OutOfMemoryError(f"attribution by {by!r}: the (P, N, M) values alone need {format_bytes(need)}, more "
                               "than this machine's memory; use a coarser `by` or fewer tokens")
    try:
        parts, values, rest = _raw(form, by)
    except MemoryError as exc:
        raise out_of_memory(exc, f"in the attribution by {by!r}", need) from None
    output = form.output
    ref = getattr(form, "reference", None) or {}
    reference, rows = ref.get("output"), None
    if target is not None:
        head = as_head(getattr(form, "unembedding", None))
        if head is None:
            raise InvalidValueError("target needs the model's head (an LM or classification head): form.unembedding "
                                    "is None (the model has no LM head)")
        if isinstance(target, str) and target == "logits":
            vocab = None
        elif isinstance(target, (int, np.integer)) and not isinstance(target, bool) and 0 <= target < head.vocab:
            vocab = np.array([int(target)])
        else:
            raise InvalidValueError(f"target must be 'logits' or a token id in [0, {head.vocab}), got {target!r}")
        L, k = head.held(output, vocab)
        values, rest, output = L(values), L(rest) + k, L(output) + k
        library_logits = ref.get("logits")  # a function: the library's logits and the rows it gives
        reference, rows = library_logits() if library_logits is not None else (None, None)
        if reference is not None and vocab is not None:
            reference = reference[:, vocab]
        if vocab is not None:
            values, rest, output = values[..., 0], rest[..., 0], output[..., 0]
            reference = None if reference is None else reference[..., 0]
    return Attribution(by, parts, values, rest, output, target, reference,
                       None if rows is None else tuple(int(r) for r in rows))
