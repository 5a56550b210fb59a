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
gets :math:`k`); an integer ``target`` keeps that token's logit, ``values`` (P, N); a ``direction`` (an array of
length M) keeps :math:`\langle t, w\rangle`.  ``output`` is the head's logits of the form's output.  A form made
by :func:`symuat.models.load` carries the library's own output (``form.reference``): :attr:`Attribution.error`
then measures against the library (``compared_with``).
``by="expert"``
    As ``"neuron"`` with a mixture of experts' units grouped by expert (``L{k}.E{e}``, ``L{k}.shared``), its routing
    diagonal :math:`D(u)` held; a dense FFN layer is one part ``L{k}.ffn``.

**One target at one token** (``position=n`` with a token id or a direction): every part at once by reverse mode,
one vector–Jacobian product through the held network (:mod:`symuat.analysis.pullback`): a few forward passes'
work instead of one pass per source; ``values`` (P,), ``rest`` and ``output`` numbers.  Through a head, the
pullback starts from the logit's direction at that token with the head held
(:func:`~symuat.numeric.head.direction`).  ``method="full"`` gives the same numbers (to rounding) from the full
(P, N, M) attribution.

**The full attribution** is computed in chunks of parts (a rich progress bar on a terminal); ``out="a.npz"``
(or ``out="a.zarr"``, a chunked Zarr store: ``pip install 'symuat[zarr]'``) streams it to that file instead of
memory, written atomically (:mod:`symuat.analysis.attribution_file`); ``values`` is then read from it lazily.
Every call first estimates its working memory and refuses with both numbers when it exceeds the memory available
now (:func:`symuat.numeric.memory.check_memory`; ``SYMUAT_MEMORY_LIMIT`` caps it).
"""

from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Tuple

import numpy as np

from ..errors import InvalidValueError, OutputError
from ..numeric.head import as_head, direction
from ..numeric.memory import check_memory, form_bytes, format_bytes, out_of_memory
from ..numeric.moe import MoEFFNWeights
from ._bar import bar
from .attribution_file import chunk_bytes, open_writer, read_attribution
from .frozen import frozen, held_bytes
from .pullback import pullback, pullback_bytes

__all__ = ["Attribution", "attribution", "attribution_bytes", "load_attribution", "BY"]

BY = ("term", "source", "layer", "head", "neuron", "expert")
#: working memory of one chunk of parts propagated together (sources, or routed units)
CHUNK_BYTES = 256 * 2 ** 20
_METHODS = ("auto", "reverse", "full")


def _experts(ffn: Any) -> int:
    if isinstance(ffn, MoEFFNWeights):
        return ffn.n_experts + (ffn.shared is not None)
    return 1


def _parts(form: Any, by: str) -> int:
    N, L = form.X0.shape[0], form.depth
    blocks = form.stack.blocks
    return {"term": L + 2, "source": N, "layer": L + 1, "head": 1 + sum(b.attention.n_heads + 1 for b in blocks),
            "neuron": 1 + sum(b.ffn.hidden + 1 for b in blocks),
            "expert": 1 + sum(_experts(b.ffn) + 1 for b in blocks)}[by]


def _tail(form: Any, target: Any) -> Tuple[int, ...]:
    if target is None:
        return (form.X0.shape[1],)
    if isinstance(target, str):
        return (as_head(form.unembedding).vocab,)
    return ()


def attribution_bytes(form: Any, by: str, target: Any = None, position: Any = None) -> int:
    """Bytes of the ``values`` of ``form.attribution(by, target, position)`` (float64, (P, N, ·)), plus ``rest``."""
    N = form.X0.shape[0]
    return 8 * (_parts(form, by) + 1) * (1 if position is not None else N) * int(np.prod(_tail(form, target)))


@dataclass(frozen=True)
class Attribution:
    r"""``values[p]`` is part ``parts[p]``'s exact contribution; ``values.sum(0) + rest`` is ``output``."""

    by: str
    parts: Tuple[str, ...]
    values: np.ndarray
    rest: np.ndarray
    output: np.ndarray
    target: Any = None
    position: Optional[int] = None
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
        total = _sum_parts(self.values) + np.asarray(self.rest)
        if self.reference is None:
            return float(np.max(np.abs(total - self.output)))
        reference = np.asarray(self.reference)
        if self.reference_rows is not None:  # the rows the library gives (a classification head: one)
            rows = list(self.reference_rows)
            total, reference = total[rows], reference[rows]
        return float(np.max(np.abs(total - reference)))

    def shares(self, token: Optional[int] = None) -> dict:
        r"""Signed shares :math:`\langle t_p, x\rangle / \lVert x\rVert^2` of every part and of ``rest``
        (over all tokens, or one ``token``); they sum to 1."""
        sel = (slice(None),) if token is None or self.position is not None else (token,)
        x = np.asarray(self.output)[sel].ravel()
        nn = float(x @ x)
        if nn == 0.0:
            raise InvalidValueError("shares: the output is 0, its shares are undefined")
        out = {p: float(np.asarray(self.values[i])[sel].ravel() @ x) / nn for i, p in enumerate(self.parts)}
        out["rest"] = float(np.asarray(self.rest)[sel].ravel() @ x) / nn
        return out

    def norms(self) -> np.ndarray:
        """``|values[p, n]|`` or ``‖values[p, n]‖`` per part (and token): a heat map."""
        v = self.values
        return np.abs(v) if v.ndim <= 2 else np.linalg.norm(v, axis=-1)


def _sum_parts(values: Any) -> np.ndarray:
    """``values.sum(0)`` of an array in memory, mapped, or in a Zarr store (read one chunk of parts at a time)."""
    if isinstance(values, np.ndarray):
        return values.sum(0)
    step = max(1, values.chunks[0])
    total = np.zeros(values.shape[1:])
    for lo in range(0, values.shape[0], step):
        total += np.asarray(values[lo:lo + step]).sum(0)
    return total


def load_attribution(path: Any, target: Any = None, position: Optional[int] = None) -> Attribution:
    """The attribution written by ``attribution(..., out=path)``, its ``values`` mapped from the file."""
    values, small = read_attribution(path)
    return Attribution(str(small["by"]), tuple(str(p) for p in small["parts"]), values, small["rest"],
                       small["output"], target, position)


def _groups(form: Any, by: str):
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
        elif by == "expert" and isinstance(b.ffn, MoEFFNWeights):
            first, f = len(parts), b.ffn.experts[0].hidden
            parts.extend(f"L{k}.E{e}" for e in range(b.ffn.n_experts))
            if b.ffn.shared is not None:
                parts.append(f"L{k}.shared")
            for n in range(F):
                index[("neuron", k, n)] = first + min(n // f, b.ffn.n_experts)
        else:
            parts.append(f"L{k}.ffn")
            for n in range(F):
                index[("neuron", k, n)] = len(parts) - 1
    return tuple(parts), index


@dataclass(frozen=True)
class _Projection:
    r"""A target as a map of a part :math:`t` (…, rows, M): ``apply(t)`` (linear) plus ``constant`` for ``rest``
    and ``output``.  A head is held at the output rows it reads (:meth:`~symuat.numeric.head.Head.held`); a
    direction :math:`w` is :math:`\langle t, w\rangle`.  ``scalar``: one number per row (a token id or a direction);
    ``w, c``: the target at one row as :math:`\langle t, w\rangle + c` (reverse mode)."""

    apply: Any
    constant: Any
    scalar: bool
    w: Optional[np.ndarray] = None
    c: float = 0.0


def _target_spec(form: Any, target: Any) -> Optional[tuple]:
    """The target, checked (nothing computed): None, ``("direction", w)`` or ``("head", head, vocab rows or
    None)``."""
    if target is None:
        return None
    M = form.X0.shape[1]
    if not isinstance(target, (str, int, np.integer)) or isinstance(target, bool):
        w = np.asarray(target, dtype=float) if not isinstance(target, bool) else None
        if w is None or w.shape != (M,) or not np.all(np.isfinite(w)):
            raise InvalidValueError(f"target must be 'logits', a token id or a finite direction of shape ({M},), "
                                    f"got {target!r}")
        return ("direction", w)
    head = as_head(getattr(form, "unembedding", None))  # a refused head raises its reason
    if head is None:
        raise InvalidValueError("target needs the model's head (an LM or classification head): form.unembedding "
                                "is None (the model has no LM head); give a direction of length M instead")
    if isinstance(target, str) and target == "logits":
        return ("head", head, None)
    if isinstance(target, (int, np.integer)) and 0 <= target < head.vocab:
        return ("head", head, np.array([int(target)]))
    raise InvalidValueError(f"target must be 'logits', a token id in [0, {head.vocab}) or a direction, "
                            f"got {target!r}")


def _projection(form: Any, spec: Optional[tuple], position: Optional[int]) -> Optional[_Projection]:
    """The target's map (:class:`_Projection`) held at the output rows (one row with a position): called after the
    memory check, since a head held at every row holds its (N, V) logits."""
    if spec is None:
        return None
    if spec[0] == "direction":
        w = spec[1]
        return _Projection(lambda t: t @ w, 0.0, True, w, 0.0)
    _, head, vocab = spec
    x = form.output if position is None else form.output[position:position + 1]
    L, k = head.held(x, vocab)
    if vocab is None:
        return _Projection(L, k, False)
    w = direction(head, x, int(vocab[0]))[0] if position is not None else None
    return _Projection(lambda t: L(t)[..., 0], k[..., 0], True, w, float(k[0, 0]) if position is not None else 0.0)


def _project(arr: np.ndarray, proj: Optional[_Projection], position: Optional[int], constant: bool) -> np.ndarray:
    """``arr`` (…, N, M) through the target, at ``position`` (its row only) or every row."""
    if position is not None:
        arr = arr[..., position:position + 1, :]
    if proj is None:
        out, vec = arr, True
    else:
        out, vec = proj.apply(arr), not proj.scalar
        if constant:
            out = out + proj.constant
    if position is not None:
        out = out[..., 0, :] if vec else out[..., 0]
    return out


def _reference(form: Any, target: Any, position: Optional[int]) -> tuple:
    """``(reference, rows)``: the library's own value of what the attribution sums to (``form.reference``), at the
    rows the library gives, or ``(None, None)`` when no library model was at hand (or for a direction)."""
    ref = getattr(form, "reference", None) or {}
    if target is None:
        reference, rows = ref.get("output"), None
    elif isinstance(target, (str, int, np.integer)) and not isinstance(target, bool):
        library_logits = ref.get("logits")  # a function: the library's logits and the rows it gives
        if library_logits is None:
            return None, None
        reference, rows = library_logits()
        if not isinstance(target, str):
            reference = reference[:, int(target)]
    else:
        return None, None
    if reference is None:
        return None, None
    if position is not None:
        if rows is not None and position not in set(int(r) for r in rows):
            return None, None
        return reference[position], None
    return reference, None if rows is None else tuple(int(r) for r in rows)


def _check_position(form: Any, position: Any) -> Optional[int]:
    if position is None:
        return None
    N = form.X0.shape[0]
    if isinstance(position, bool) or not isinstance(position, (int, np.integer)) or not -N <= position < N:
        raise InvalidValueError(f"position must be a token index in [0, {N}) (or from the end, -1 the last), "
                                f"got {position!r}")
    return int(position) % N


def _chunks(form: Any, by: str, quiet: bool):
    """``(parts, iterator of (lo, hi, values[lo:hi], rest))``: the full (P, N, M) attribution in chunks of parts
    (``rest`` is the same in every chunk)."""
    N, M = form.X0.shape
    if by == "term":
        terms = form.token_terms()
        return tuple(terms), iter([(0, len(terms), np.stack(list(terms.values())), np.zeros((N, M)))])
    F = frozen(form, "held")
    if by == "source":
        width = max(M, max(b.ffn.hidden for b in form.stack.blocks))
        chunk = max(1, min(N, CHUNK_BYTES // (8 * 4 * N * width)))
        parts, rest = tuple(f"tok{s}" for s in range(N)), F(np.zeros((N, M)))

        def run(lo, hi):
            Xs = np.zeros((hi - lo, N, M))
            Xs[np.arange(hi - lo), np.arange(lo, hi)] = form.X0[lo:hi]
            return F(Xs) - rest, rest
    else:
        parts, index = _groups(form, by)
        chunk = max(1, min(len(parts), CHUNK_BYTES // (8 * 4 * N * M)))
        reads = F.reads()

        def run(lo, hi):
            n = hi - lo

            def route(unit):  # the chunk's units to their slots, the others to slot n (dropped)
                i = index[unit]
                return i - lo if lo <= i < hi else n
            slots = F.direct(route, n + 2, reads=reads)
            return slots[:n], slots[-1]
    P = len(parts)
    bounds = [(lo, min(P, lo + chunk)) for lo in range(0, P, chunk)]

    def gen():
        with bar(quiet or len(bounds) == 1, f"attribution by {by}", len(bounds)) as step:
            for lo, hi in bounds:
                yield (lo, hi) + run(lo, hi)
                step(f"parts {lo}..{hi - 1}")
    return parts, gen()


def attribution(form: Any, by: str = "term", target: Any = None, position: Any = None, *, method: str = "auto",
                out: Any = None, quiet: bool = False) -> Attribution:
    """The exact attribution of ``form.output`` (module docstring).

    ``target``: None, ``"logits"``, a token id or a direction (length M); ``position``: one token (reverse mode
    when ``target`` is one number and ``method`` is ``"auto"`` or ``"reverse"``); ``out``: an ``.npz`` or ``.zarr``
    path to stream the full attribution to; ``quiet``: no progress bar.
    """
    if by not in BY:
        raise InvalidValueError(f"by must be one of {BY}, got {by!r}")
    if method not in _METHODS:
        raise InvalidValueError(f"method must be one of {_METHODS}, got {method!r}")
    position = _check_position(form, position)
    spec = _target_spec(form, target)
    scalar = spec is not None and (spec[0] == "direction" or spec[2] is not None)
    if method == "reverse" and (position is None or not scalar or by == "term"):
        raise InvalidValueError("method='reverse' needs one number: a token id or a direction as target, a position, "
                                f"and by one of {BY[1:]}, got target={target!r}, position={position!r}, by={by!r}")
    if method != "full" and position is not None and scalar and by != "term" and out is None:
        proj = _projection(form, spec, position)  # one row: the logit's direction there
        result = _reverse(form, by, proj.w, proj.c, target, position, quiet)
    else:
        result = _full(form, by, spec, target, position, out, quiet)
    reference, rows = _reference(form, target, position)
    return dataclasses.replace(result, reference=reference, reference_rows=rows)


def _reverse(form, by, w, b, target, position, quiet) -> Attribution:
    N, M = form.X0.shape
    need = pullback_bytes(form)
    check_memory(need, f"in the attribution by {by!r} of one target (reverse mode, N={N})", "use fewer tokens")
    try:
        pb = pullback(form, w, position, direct=by != "source", show=not quiet)
    except MemoryError as exc:
        raise out_of_memory(exc, f"in the attribution by {by!r}", need) from None
    rest = pb.rest + (0.0 if b is None else float(b))
    output = float(form.output[position] @ w) + (0.0 if b is None else float(b))
    if by == "source":
        return Attribution(by, tuple(f"tok{s}" for s in range(N)), pb.source, np.asarray(rest), np.asarray(output),
                           target, position)
    parts, index = _groups(form, by)
    values = np.zeros(len(parts))
    values[0] = pb.source.sum()
    for k, blk in enumerate(form.stack.blocks):
        heads = [index[("head", k, h)] for h in range(blk.attention.n_heads)]
        np.add.at(values, heads, pb.heads[k])
        units = [index[("neuron", k, n)] for n in range(blk.ffn.hidden)]
        np.add.at(values, units, pb.neurons[k])
    return Attribution(by, parts, values, np.asarray(rest), np.asarray(output), target, position)


def _full(form, by, spec, target, position, out, quiet) -> Attribution:
    N, M = form.X0.shape
    P = _parts(form, by)
    tail = _tail(form, target)
    shape = (P,) + (() if position is not None else (N,)) + tail
    values_bytes = 8 * int(np.prod(shape))
    work = 4 * min(CHUNK_BYTES, 8 * P * N * max(M, max(b_.ffn.hidden for b_ in form.stack.blocks)))
    need = (chunk_bytes(out, shape) if out is not None else values_bytes) + held_bytes(form) + work + \
        form_bytes(form.stack, N) // 4
    hint = "stream it to disk (out='….npz' or '….zarr'), use a coarser `by`, a position, or fewer tokens"
    if by == "term":
        need = 2 * values_bytes + 8 * form.depth * N * M
    if spec is not None and spec[0] == "head":  # the head held at the rows: its constant (rows, V), and gates
        need += (1 if spec[1].affine else 3) * 8 * (1 if position is not None else N) * int(np.prod(tail or (1,)))
    check_memory(need, f"in the attribution by {by!r} (full method, values {shape})", hint)
    if out is not None:
        free = shutil.disk_usage(Path(out).resolve().parent).free if Path(out).resolve().parent.is_dir() else None
        if free is not None and values_bytes > free:
            raise OutputError(f"cannot stream the attribution by {by!r} to {str(out)!r}: its values {shape} need "
                              f"{format_bytes(values_bytes)}, {format_bytes(free)} free on that disk")
    proj = _projection(form, spec, position)  # after the checks: a head held at every row holds (N, V) arrays
    writer = open_writer(out, shape) if out is not None else None
    try:
        parts, chunks = _chunks(form, by, quiet)
        values = None if writer is not None else np.empty(shape)
        for lo, hi, v, rest in chunks:
            v = _project(v, proj, position, False)
            if writer is not None:
                writer.write(v)
            else:
                values[lo:hi] = v
        rest = _project(rest, proj, position, True)
        output = _project(form.output, proj, position, True)
    except MemoryError as exc:
        if writer is not None:
            writer.abort()
        raise out_of_memory(exc, f"in the attribution by {by!r}", need) from None
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    if writer is not None:
        writer.close(parts, rest, output, by)
        return load_attribution(out, target, position)
    return Attribution(by, parts, values, rest, output, target, position)
