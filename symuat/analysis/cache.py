r"""Named activations of a form's run as a value, and the exact logit lens (issue 32).

:func:`activations` runs the stack once (:func:`~symuat.analysis.sites.run_sites`) and keeps every site by name
(0-based layers, as every Python index of symuat):

======================  ==========  ===========================================================================
name                    shape       value
======================  ==========  ===========================================================================
``resid.{l}``           (N, M)      the residual stream entering block ``l``; ``resid.{L}`` is the last block's
                                    output before the final norm (:func:`~symuat.numeric.stack.forward`)
``attn.{l}``            (N, M)      the attention sublayer's output (what the output projection returns)
``head.{l}``            (H, N, d)   each head's output :math:`z_h = H_h V_h`, before :math:`W_O`
``ffn.{l}``             (N, M)      the FFN sublayer's output
``neurons.{l}``         (N, F)      the FFN hidden units (dense FFNs)
``expert.{l}``          (E, N, M)   each routed expert's weighted output (mixtures of experts)
``output``              (N, M)      the last hidden state, final norm included (``form.output``)
======================  ==========  ===========================================================================

Like TransformerLens's ``ActivationCache``, but exact: ``resid.{l+1}`` is ``resid.{l}`` plus the block's writes as
its layout adds them, and ``output`` equals ``form.output`` to rounding.  :func:`logit_lens` sends every
``resid.{l}`` through the *actual* final norm (its own statistics at that stream) and the LM head; its last row is
the library's ``.logits``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..errors import InvalidValueError
from ..numeric.head import as_head
from ..numeric.norms import apply_norm
from .sites import run_sites

__all__ = ["Activations", "activations", "resid", "logit_lens"]


@dataclass(frozen=True)
class Activations:
    r"""Every named activation of one run (module docstring); ``cache["resid.2"]`` or ``cache.resid(2)``."""

    values: Mapping[str, np.ndarray]
    depth: int
    tokens: Optional[Tuple[str, ...]] = None

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.values:
            raise InvalidValueError(f"no activation named {name!r}; valid names: {sorted(self.values, key=_order)}")
        return self.values[name]

    def keys(self) -> list:
        """The names, layer by layer."""
        return sorted(self.values, key=_order)

    def resid(self, layer: int) -> np.ndarray:
        """``resid.{layer}`` (0..L; negative counts from the end)."""
        return self[f"resid.{_layer(layer, self.depth + 1)}"]

    def stack(self, kind: str = "resid") -> np.ndarray:
        """Every layer's ``kind`` (``"resid"``, ``"attn"``, ``"ffn"``) stacked: ``(L+1 or L, N, M)``."""
        n = self.depth + 1 if kind == "resid" else self.depth
        return np.stack([self[f"{kind}.{k}"] for k in range(n)])


def _order(name: str) -> tuple:
    kind, _, layer = name.partition(".")
    return (int(layer) if layer else 10 ** 9, ["resid", "attn", "head", "ffn", "neurons", "expert"].index(kind)
            if kind in ("resid", "attn", "head", "ffn", "neurons", "expert") else 9)


def _layer(layer: Any, top: int) -> int:
    if not isinstance(layer, (int, np.integer)) or isinstance(layer, bool) or not -top <= layer < top:
        raise InvalidValueError(f"layer must be an int in 0..{top - 1} (0-based), got {layer!r}")
    return int(layer) % top


def activations(form: Any) -> Activations:
    r"""Run ``form``'s stack once and name every site (module docstring)."""
    out, rec = run_sites(form.stack, form.X0, form.attention_mask)
    L = form.depth
    values: dict = {"output": out}
    for k in range(L + 1):
        values[f"resid.{k}"] = rec[("resid", k)]
    for k, b in enumerate(form.stack.blocks):
        values[f"attn.{k}"] = rec[("attn", k)]
        values[f"ffn.{k}"] = rec[("ffn", k)]
        values[f"head.{k}"] = np.stack([rec[("head", k, h)] for h in range(b.attention.n_heads)])
        if ("neurons", k) in rec:
            values[f"neurons.{k}"] = rec[("neurons", k)]
        experts = [rec[key] for key in sorted(key for key in rec if key[:2] == ("expert", k))]
        if experts:
            values[f"expert.{k}"] = np.stack(experts)
    for v in values.values():
        v.setflags(write=False)
    tokens = getattr(form, "tokens", None)
    return Activations(values, L, None if tokens is None else tuple(tokens))


def resid(form: Any, layer: int) -> np.ndarray:
    r"""The residual stream entering block ``layer`` (0-based; ``layer = L``: the last block's output before the
    final norm), (N, M)."""
    layer = _layer(layer, form.depth + 1)
    _, rec = run_sites(form.stack, form.X0, form.attention_mask, record={("resid", layer)})
    return rec[("resid", layer)]


def logit_lens(form: Any, positions: Optional[Sequence[int]] = None) -> np.ndarray:
    r"""``(L+1, N, V)``: each ``resid.{l}`` through the final norm (applied at that stream) and the LM head;
    row ``L`` is the model's logits.  ``positions`` keeps only those tokens."""
    if form.unembedding is None:
        raise InvalidValueError("the logit lens needs an LM head: this form has none (form.unembedding is None)")
    _, rec = run_sites(form.stack, form.X0, form.attention_mask, record={("resid",)})
    R = np.stack([rec[("resid", k)] for k in range(form.depth + 1)])
    if positions is not None:
        N = form.X0.shape[0]
        pos = [int(p) for p in np.atleast_1d(positions)]
        if not all(-N <= p < N for p in pos):
            raise InvalidValueError(f"positions must lie in 0..{N - 1}, got {list(positions)}")
        R = R[:, pos]
    if form.stack.final_norm is not None:
        R = np.stack([apply_norm(r, form.stack.final_norm) for r in R])
    head = as_head(form.unembedding)  # transform, scale and cap as the model's head applies them
    return np.stack([head.logits(r) for r in R])
