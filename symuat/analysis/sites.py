r"""Named sites of a Transformer stack's forward pass: read every unit's output, or replace some, live or held.

A *site* is where a unit writes (every index 0-based; ``positions`` an int, a sequence of ints or ``None`` = all):

``("resid", l, positions)``
    The residual stream entering block ``l`` (``l = 0``: the input after the input transform; ``l = L``: the last
    block's output, before the final norm) — :math:`X_l` of :func:`~symuat.numeric.stack.forward`.
``("attn", l, positions)`` / ``("ffn", l, positions)``
    The attention / FFN sublayer's output (before a post-norm of the ``sandwich`` and ``sublayer_post_ln``
    layouts): what the library's output projection (``o_proj``, ``down_proj``) returns.
``("head", l, h, positions)``
    Head ``h``'s output :math:`z_h = H_h V_h` (N × d), before :math:`W_O`: the columns ``h·d … (h+1)·d`` of the
    output projection's input.
``("neuron", l, j, positions)``
    FFN hidden unit ``j`` (:math:`\sigma(z)_j`, gated: :math:`\mathrm{act}(g)_j\,u_j`): column ``j`` of the down
    projection's input (dense FFNs).
``("expert", l, e, positions)``
    Routed expert ``e``'s weighted output :math:`g_e(u)\,\mathrm{FFN}_e(u)` (mixture of experts,
    :mod:`symuat.numeric.moe`); zero where the router did not pick ``e``.

:func:`run_sites` runs the stack's layouts (the same ``_layout`` as the held network) with every dynamic parameter
either recomputed at the current state (``held=None``) or read from a :class:`~symuat.analysis.frozen.Frozen`'s
held values, records the sites asked for and replaces the ones given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from ..errors import InvalidValueError, UnsupportedError
from ..numeric.attention import _heads
from ..numeric.cross import cross_attention
from ..numeric.ffn import activation_function
from ..numeric.moe import MoEFFNWeights
from ..numeric.norms import apply_norm
from .frozen import _block_norm, _layout, _norm_const, _norm_lin

__all__ = ["Site", "SITE_KINDS", "site", "run_sites"]

#: site kind → (has a unit index, what the index counts)
SITE_KINDS = {"resid": None, "attn": None, "ffn": None, "head": "heads", "neuron": "neurons", "expert": "experts"}

Positions = Union[None, int, Sequence[int]]


@dataclass(frozen=True)
class Site:
    r"""One site (module docstring): ``kind``, ``layer``, ``index`` (head, neuron or expert; ``None`` for the
    residual stream and sublayers) and ``positions`` (a tuple of token positions, ``None`` = all)."""

    kind: str
    layer: int
    index: Optional[int] = None
    positions: Optional[Tuple[int, ...]] = None

    def __post_init__(self) -> None:
        if self.kind not in SITE_KINDS:
            raise InvalidValueError(f"site kind {self.kind!r} is not one of {sorted(SITE_KINDS)}")
        if (self.index is None) != (SITE_KINDS[self.kind] is None):
            raise InvalidValueError(f"a {self.kind!r} site {'needs' if self.index is None else 'takes no'} index")

    @property
    def key(self) -> tuple:
        """The position-free key ``(kind, layer)`` or ``(kind, layer, index)``."""
        return (self.kind, self.layer) if self.index is None else (self.kind, self.layer, self.index)

    def label(self, tokens: Optional[Sequence[str]] = None) -> str:
        """``"head L1.H0 @ 'cat'"``-style name (tokens, when given, name the positions)."""
        name = {"resid": "resid", "attn": "attn", "ffn": "ffn", "head": "H", "neuron": "N", "expert": "E"}[self.kind]
        base = f"{name} L{self.layer}" if self.index is None else f"L{self.layer}.{name}{self.index}"
        if self.positions is None:
            return base
        pos = [repr(tokens[p]) if tokens is not None else str(p) for p in self.positions]
        return f"{base} @ {','.join(pos)}"


def _positions(value: Positions, N: int, unit: Any) -> Optional[Tuple[int, ...]]:
    if value is None:
        return None
    items = [value] if isinstance(value, (int, np.integer)) else list(value) if isinstance(value, (list, tuple,
                                                                                                     range)) else None
    if not items or not all(isinstance(p, (int, np.integer)) and not isinstance(p, bool) for p in items):
        raise InvalidValueError(f"positions of {unit!r} must be an int or a non-empty sequence of ints, got {value!r}")
    out = tuple(int(p) + N if p < 0 else int(p) for p in items)
    bad = [p for p in out if not 0 <= p < N]
    if bad:
        raise InvalidValueError(f"position {bad[0]} of {unit!r} is outside the form's {N} tokens (0..{N - 1})")
    return out


def site(stack: Any, N: int, unit: Any) -> Site:
    r"""Validate ``unit`` — a :class:`Site` or a tuple ``(kind, layer[, index][, positions])`` — against ``stack``
    with ``N`` tokens; negative layers and positions count from the end.

    >>> import numpy as np
    >>> from symuat.numeric.random_stacks import random_stack
    >>> site(random_stack(np.random.default_rng(0), 2, 4, 2, 6), 3, ("head", 1, 0, -1))
    Site(kind='head', layer=1, index=0, positions=(2,))
    """
    if isinstance(unit, Site):
        unit = (unit.kind, unit.layer) + (() if unit.index is None else (unit.index,)) + (unit.positions,)
    if not isinstance(unit, tuple) or not unit or unit[0] not in SITE_KINDS:
        raise InvalidValueError(f"unknown unit {unit!r}: expected a tuple whose first item is one of "
                                f"{sorted(SITE_KINDS)}, e.g. ('resid', layer, position) or ('head', layer, h)")
    kind, L = unit[0], stack.depth
    n_index = 0 if SITE_KINDS[kind] is None else 1
    if len(unit) not in (2 + n_index, 3 + n_index):
        form = f"({kind!r}, layer{', index' if n_index else ''}[, positions])"
        raise InvalidValueError(f"unit {unit!r} must be {form}")
    top = L + 1 if kind == "resid" else L
    layer = unit[1]
    if not isinstance(layer, (int, np.integer)) or isinstance(layer, bool) or not -top <= layer < top:
        raise InvalidValueError(f"layer of {unit!r} must be an int in 0..{top - 1} (0-based), got {layer!r}")
    layer = int(layer) % top
    index = None
    if n_index:
        index, count = unit[2], _count(stack, kind, layer)
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool) or not 0 <= index < count:
            raise InvalidValueError(f"{kind} index of {unit!r} must be an int in 0..{count - 1} (layer {layer} has "
                                    f"{count} {SITE_KINDS[kind]}), got {index!r}")
        index = int(index)
    positions = _positions(unit[2 + n_index], N, unit) if len(unit) == 3 + n_index else None
    return Site(kind, layer, index, positions)


def _count(stack: Any, kind: str, layer: int) -> int:
    b = stack.blocks[layer]
    moe = isinstance(b.ffn, MoEFFNWeights)
    if kind == "head":
        return b.attention.n_heads
    if kind == "expert":
        if not moe:
            raise UnsupportedError(f"layer {layer} has a dense FFN: it has no experts (use 'neuron')")
        return b.ffn.n_experts
    if moe:
        raise UnsupportedError(f"layer {layer} is a mixture of experts: its hidden units are gated per token by the "
                               "router; patch an 'expert' (or the 'ffn' sublayer) instead")
    return b.ffn.hidden


class _Sites:
    """Records and replaces the site values of one run."""

    def __init__(self, patches: Dict[Site, np.ndarray], record: Optional[set]):
        self.patches: Dict[tuple, list] = {}
        for s, v in patches.items():
            self.patches.setdefault(s.key, []).append((s.positions, v))
        self.record, self.values = record, {}

    def __call__(self, key: tuple, value: np.ndarray) -> np.ndarray:
        for rows, v in self.patches.get(key, ()):
            value = np.array(value)
            if rows is None:
                value[...] = v
            else:
                value[list(rows)] = v
        if self.wants(key):
            self.values[key] = value
        return value

    def wants(self, key: tuple) -> bool:
        return self.record is None or key in self.record or (key[0],) in self.record


def _lin(X, W, b):
    Y = X @ W
    return Y if b is None else Y + b


def run_sites(stack: Any, X: np.ndarray, mask: Optional[np.ndarray] = None, *,
              patches: Optional[Dict[Site, np.ndarray]] = None, record: Optional[set] = None,
              held: Optional[Sequence[dict]] = None, gates: str = "held",
              start: Optional[Tuple[int, np.ndarray]] = None) -> Tuple[np.ndarray, dict]:
    r"""The stack's output (final norm included) at ``X`` (``inputs_embeds``) and the recorded site values.

    Parameters
    ----------
    patches : {Site: array}
        Each site's value replaced (at its positions) by the array (broadcast to the selected rows).
    record : set of keys, optional
        Keys ``(kind, layer[, index])`` or kinds ``(kind,)`` to record; ``None`` records every site.
    held : the ``held`` values of a :class:`~symuat.analysis.frozen.Frozen`, optional
        Hold every attention matrix, norm diagonal and (``gates="held"``) activation gate at those values.
    start : (layer, X_layer), optional
        Begin at block ``layer`` with the residual stream ``X_layer`` (earlier blocks are not run).
    """
    S = _Sites(patches or {}, record)
    N = X.shape[0]
    if start is None:
        k0, x = 0, _input(stack, X, None if held is None else held[-1])
    else:
        k0, x = start
    for k in range(k0, stack.depth):
        b, hd = stack.blocks[k], None if held is None else held[k]
        act = activation_function(stack.block_activation(k))
        x = S(("resid", k), x)

        def n(i, V, key, b=b, hd=hd):
            norm = _block_norm(b, i)
            if hd is None:
                return apply_norm(V, norm)
            c = _norm_const(norm)
            return _norm_lin(V, norm, hd[key]) + (0.0 if c is None else c)

        def mha(U, k=k, b=b, hd=hd):
            a = b.attention
            Hs = _heads(U, a, mask, f" in layer {k + 1}") if hd is None else hd["H"]
            V = _lin(U, a.W_V, a.b_V)
            concat = np.empty((N, a.n_heads * a.head_dim))
            for h, H in enumerate(Hs):
                concat[:, a.head_slice(h)] = S(("head", k, h), H @ np.ascontiguousarray(V[:, a.kv_slice(h)]))
            return S(("attn", k), _lin(concat, a.W_O, a.b_O))

        def ffn(U, k=k, b=b, hd=hd, act=act):
            return S(("ffn", k), _ffn(S, k, b.ffn, act, U, hd, gates))

        def cross(h, k=k, b=b, hd=hd):  # a decoder block's cross-attention: live, or held at the form's input
            return cross_attention(b.cross, h, f" in layer {k + 1}") if hd is None else hd["C"]

        x = _layout(stack.kind, x, mha, ffn, n, None if b.cross is None else cross)
    x = S(("resid", stack.depth), x)
    if stack.final_norm is not None:
        if held is None:
            x = apply_norm(x, stack.final_norm)
        else:
            c = _norm_const(stack.final_norm)
            x = _norm_lin(x, stack.final_norm, held[-1]["final"]) + (0.0 if c is None else c)
    return x, S.values


def _input(stack: Any, X: np.ndarray, box: Optional[dict]) -> np.ndarray:
    N = X.shape[0]
    x = X if stack.input_scale is None else stack.input_scale * X
    if stack.position_embeddings is not None:
        x = x + stack.position_embeddings[:N]
    if stack.input_norm is not None:
        if box is None:
            x = apply_norm(x, stack.input_norm)
        else:
            c = _norm_const(stack.input_norm)
            x = _norm_lin(x, stack.input_norm, box["in"]) + (0.0 if c is None else c)
    return x


def _ffn(S: Callable, k: int, f: Any, act: Callable, U: np.ndarray, hd: Optional[dict], gates: str) -> np.ndarray:
    if isinstance(f, MoEFFNWeights):
        return _moe(S, k, f, act, U, hd, gates)
    if f.gated:
        g = hd["a"] if hd is not None and gates == "held" else act(_lin(U, f.W_gate, f.b_gate))
        A, W2, b2 = g * _lin(U, f.W_up, f.b_up), f.W_down, f.b_down
    else:
        z = _lin(U, f.W1, f.b1)
        A = hd["g"] * z + hd["r"] if hd is not None and gates == "held" else act(z)
        W2, b2 = f.W2, f.b2
    patched = sorted(key[2] for key in S.patches if key[:2] == ("neuron", k))
    if patched:
        A = np.array(A)
        for j in patched:
            A[:, j] = S(("neuron", k, j), A[:, j])
    if S.wants(("neurons", k)):  # every hidden unit of the layer at once (N, F)
        S.values[("neurons", k)] = A
    return _lin(A, W2, b2)


def _moe(S: Callable, k: int, f: MoEFFNWeights, act: Callable, U: np.ndarray, hd: Optional[dict],
         gates: str) -> np.ndarray:
    r"""Each routed expert's weighted output (a site), plus the shared expert: live, or with the routing diagonal
    :math:`D` (and, ``gates="held"``, the gate branch) held where the held network holds them (``hd["D"]``)."""
    if hd is not None and "D" not in hd:
        raise UnsupportedError(f"layer {k} is a mixture of experts whose routing gates this held network does not "
                               "hold: patch it re-computed (mode='recomputed')")
    F = f.experts[0].hidden
    pre = _lin(U, f.W_gate, f.b_gate)
    if f.input_scaled:  # Llama 4: the gate's input times the routing weight (live, or held with the routing)
        pre = (f.input_scales(U) if hd is None else hd["S"]) * pre
    live = act(pre) if hd is None or gates != "held" else None
    D, gate = (f.gates(U), live) if hd is None else (hd["D"], hd["a"] if gates == "held" else live)
    A = D * gate * _lin(U, f.W_up, f.b_up)
    out = np.zeros_like(U)
    for e in range(f.n_experts):
        cols = slice(e * F, (e + 1) * F)
        out = out + S(("expert", k, e), A[:, cols] @ f.W_down[cols])
    if f.shared is not None:
        cols = slice(f.n_experts * F, A.shape[1])
        out = out + A[:, cols] @ f.W_down[cols]
    return out
