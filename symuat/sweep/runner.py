r"""One worker of a sweep: a loaded model that turns a prompt into its row (Ray Data's callable-class shape).

For a prompt with token ids :math:`t_1..t_N` the worker evaluates the model's DUAT form, the library's own
float64 forward pass (:func:`~symuat.models.library_float64`), and the exact attribution of the target by
``options.by`` at the last position :math:`N`:

- with an LM head, the target is one logit :math:`z_v = U_v x_N + b_v` (``v`` the prompt's ``target``, the
  option's token id, or the library's top token), and the parts :math:`z_v^{(p)}` satisfy
  :math:`\sum_p z_v^{(p)} + \text{rest} = z_v`;
- without one, the target is the output's own direction :math:`u = x_N/\lVert x_N\rVert`: the parts are
  :math:`\langle t_p, u\rangle` and the value is :math:`\lVert x_N\rVert`.

``error`` is the largest relative difference with the library (every token's last hidden state, and the target
value); a row whose error exceeds ``options.tolerance`` has status ``"inexact"``.  A prompt that fails (too long,
an unknown token, no tokenizer, a malformed line) is an error row with its reason: the sweep goes on.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import numpy as np

from ..analysis.patching import patch_sweep
from ..analysis.sites import Site
from ..errors import InvalidValueError, SymuatError
from ..models import library_outputs, load, quiet_library
from ..numeric.head import as_head
from .options import SweepOptions
from .prompts import Prompt

__all__ = ["PromptRunner", "error_row", "encode_prompt", "decode_prompt"]


def encode_prompt(key: str, prompt: Prompt) -> str:
    """One work item as JSON (what crosses process boundaries)."""
    return json.dumps({"key": key, "index": prompt.index, **prompt.content()}, ensure_ascii=False)


def decode_prompt(payload: str) -> tuple[str, Prompt]:
    d = json.loads(payload)
    ids, bad = d.get("input_ids"), d.get("corrupt_ids")
    return d["key"], Prompt(d["index"], text=d.get("text"), input_ids=None if ids is None else tuple(ids),
                            target=d.get("target"), problem=d.get("problem"), corrupt=d.get("corrupt"),
                            corrupt_ids=None if bad is None else tuple(bad))


def error_row(key: str, prompt: Prompt, reason: str, ids: Optional[list] = None, tokens: Optional[list] = None) -> dict:
    """The row of a prompt that failed: its reason, and the tokens when they were known."""
    return {"key": key, "index": prompt.index, "status": "error", "reason": reason,
            "n_tokens": None if ids is None else len(ids), "token_ids": ids, "tokens": tokens, "target_id": None,
            "value": None, "library_value": None, "error": None, "parts": None, "values": None, "other": None,
            "rest": None, "corrupt_token_ids": None, "corrupted_value": None}


def _lm_head(form: Any) -> bool:
    """Whether the form's head gives a logit at every token (an LM head); a classification head, a refused head
    or none: the row attributes the output direction."""
    try:
        head = as_head(form.unembedding)
    except SymuatError:  # a refused head (its reason is model.head_refusal)
        return False
    return head is not None and head.reads == "every"


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    """Largest per-token relative difference ‖a_n − b_n‖ / max(‖b_n‖, 1)."""
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    return float(np.max(np.linalg.norm(a - b, axis=-1) / np.maximum(np.linalg.norm(b, axis=-1), 1.0)))


class PromptRunner:
    r"""A loaded model that computes rows (module docstring); ``runner(batch)`` is Ray Data's ``map_batches`` form.

    Parameters
    ----------
    directory : path
        A ``save_pretrained`` checkpoint directory (:func:`symuat.models.load`).
    options : SweepOptions or dict
    """

    def __init__(self, directory: str, options: Any):
        quiet_library()
        self.options = options if isinstance(options, SweepOptions) else SweepOptions(**options)
        self.model = load(directory)

    # ---- one prompt ----------------------------------------------------------------------------------------------
    def _ids(self, prompt: Prompt, corrupt: bool = False) -> list:
        given, text = (prompt.corrupt_ids, prompt.corrupt) if corrupt else (prompt.input_ids, prompt.text)
        what = "the corrupted " if corrupt else "the "
        which = "corrupted " if corrupt else ""
        if given is not None:
            ids = [int(i) for i in given]
        else:
            tok = self.model.tokenizer
            if tok is None:
                raise InvalidValueError(f"the model has no tokenizer: give {'corrupt_ids' if corrupt else 'input_ids'}"
                                        f" instead of {'corrupt' if corrupt else 'text'}")
            ids = list(tok(text)["input_ids"])
        if not ids:
            raise InvalidValueError(f"{what}prompt has no tokens")
        vocab = self.model.word_embeddings.shape[0]
        bad = [i for i in ids if not 0 <= i < vocab]
        if bad:
            raise InvalidValueError(f"{which}token id {bad[0]} is outside the vocabulary [0, {vocab})")
        return ids

    def _tokens(self, ids: list) -> list:
        tok = self.model.tokenizer
        return [str(t) for t in tok.convert_ids_to_tokens(ids)] if tok is not None else [str(i) for i in ids]

    def row(self, key: str, prompt: Prompt) -> dict:
        """The row of ``prompt`` (module docstring); never raises for a bad prompt."""
        if prompt.problem is not None:
            return error_row(key, prompt, prompt.problem)
        ids: Optional[list] = None
        tokens: Optional[list] = None
        try:
            ids = self._ids(prompt)
            tokens = self._tokens(ids)
            if len(ids) > self.model.max_tokens:
                raise InvalidValueError(f"{len(ids)} tokens, more than the model's {self.model.max_tokens}")
            if self.options.patch is not None:
                return self._patch(key, prompt, ids, tokens)
            if prompt.has_corrupt:
                raise InvalidValueError("the prompt has a corrupted run, but the sweep is an attribution: give "
                                        "--patch for a patching sweep")
            return self._attribute(key, prompt, ids, tokens)
        except SymuatError as exc:
            return error_row(key, prompt, str(exc), ids, tokens)
        except Exception as exc:  # noqa: BLE001 - the library's many failure types: the row says which
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            return error_row(key, prompt, f"{type(exc).__name__}: {first}", ids, tokens)

    def _attribute(self, key: str, prompt: Prompt, ids: list, tokens: list) -> dict:
        opts = self.options
        form = self.model.duat_form(input_ids=ids)
        hidden, logits = library_outputs(self.model, ids)
        error = _relative(form.output, hidden)
        if _lm_head(form) and logits is not None and logits.ndim == 2:
            target = self._target(prompt, logits)
            att = form.attribution(opts.by, target=target, position=-1, quiet=True)  # reverse mode: one pullback
            values, rest, value = att.values, float(att.rest), float(att.output)
            library_value = float(logits[-1, target])
        else:
            if prompt.target is not None or opts.target != "top":
                raise InvalidValueError("a target token needs an LM head; this model has none (or a head that is "
                                        "not per token): its rows attribute the last token's output direction")
            target = None
            x = form.output[-1]
            norm = float(np.linalg.norm(x))
            if norm == 0.0:
                raise InvalidValueError("the last token's output is 0: it has no direction to attribute")
            u = x / norm
            att = form.attribution(opts.by, target=u, position=-1, quiet=True)
            values, rest, value = att.values, float(att.rest), float(att.output)
            library_value = float(hidden[-1] @ u)
        error = max(error, abs(value - library_value) / max(abs(library_value), 1.0))
        parts, vals, other = list(att.parts), [float(v) for v in values], 0.0
        if opts.top and opts.top < len(parts):
            order = sorted(range(len(parts)), key=lambda p: (-abs(vals[p]), p))
            keep = order[:opts.top]
            other = float(sum(vals[p] for p in order[opts.top:]))
            parts, vals = [parts[p] for p in keep], [vals[p] for p in keep]
        return self._row(key, prompt, ids, tokens, target, value, library_value, error, parts, vals, other, rest)

    def _target(self, prompt: Prompt, logits: np.ndarray) -> int:
        """The target token id: the prompt's, the option's, or the library's top token at the last position."""
        vocab = logits.shape[-1]
        opts = self.options
        target = prompt.target if prompt.target is not None else (
            int(np.argmax(logits[-1])) if opts.target == "top" else opts.target)
        if not 0 <= target < vocab:
            raise InvalidValueError(f"target token id {target} is outside the vocabulary [0, {vocab})")
        return target

    def _patch(self, key: str, prompt: Prompt, ids: list, tokens: list) -> dict:
        """A patching sweep's row (module docstring)."""
        opts = self.options
        if not prompt.has_corrupt:
            raise InvalidValueError("a patching sweep needs each prompt's corrupted run: 'corrupt' (a text) or "
                                    "'corrupt_ids' (token ids)")
        bad = self._ids(prompt, corrupt=True)
        if len(bad) != len(ids):
            raise InvalidValueError(f"the clean run has {len(ids)} tokens and the corrupted run {len(bad)}: "
                                    "patching needs the same length")
        clean, corrupted = self.model.duat_form(input_ids=ids), self.model.duat_form(input_ids=bad)
        if not _lm_head(clean):
            raise InvalidValueError("a patching sweep's target is a logit: this model has no LM head")
        (hidden, logits), (hidden_bad, logits_bad) = library_outputs(self.model, ids), library_outputs(self.model, bad)
        target = self._target(prompt, logits)
        grid = patch_sweep(corrupted, clean, opts.patch, target=target, position=-1, mode=opts.patch_mode,
                           quiet=True)
        error = max(_relative(clean.output, hidden), _relative(corrupted.output, hidden_bad),
                    abs(grid.clean - logits[-1, target]) / max(abs(float(logits[-1, target])), 1.0),
                    abs(grid.corrupted - logits_bad[-1, target]) / max(abs(float(logits_bad[-1, target])), 1.0))
        rows, cols = grid.values.shape
        parts = [(Site("head", r, c) if opts.patch == "head" else Site(opts.patch, r, None, (c,))).label()
                 for r in range(rows) for c in range(cols)]
        vals = [float(v) for v in grid.values.ravel()]
        if opts.top and opts.top < len(parts):  # the K patches that move the target most; no sum of the others
            order = sorted(range(len(parts)), key=lambda p: (-abs(vals[p] - grid.corrupted), p))[:opts.top]
            parts, vals = [parts[p] for p in order], [vals[p] for p in order]
        return self._row(key, prompt, ids, tokens, target, grid.clean, float(logits[-1, target]), error, parts,
                         vals, None, None, corrupt_ids=bad, corrupted_value=grid.corrupted)

    def _row(self, key: str, prompt: Prompt, ids: list, tokens: list, target: Any, value: float,
             library_value: float, error: float, parts: list, vals: list, other: Any, rest: Any,
             corrupt_ids: Any = None, corrupted_value: Any = None) -> dict:
        """A computed row: ``ok`` when finite and within the tolerance, ``inexact`` otherwise."""
        opts = self.options
        finite = np.isfinite(error) and np.isfinite(value) and all(np.isfinite(vals))
        status = "ok" if finite and error <= opts.tolerance else "inexact"
        return {"key": key, "index": prompt.index, "status": status,
                "reason": None if status == "ok" else f"error {error:.3g} against the library exceeds "
                                                      f"{opts.tolerance:g}" if finite else "a value is not finite",
                "n_tokens": len(ids), "token_ids": ids, "tokens": tokens, "target_id": target, "value": value,
                "library_value": library_value, "error": float(error), "parts": parts, "values": vals,
                "other": other, "rest": rest, "corrupt_token_ids": corrupt_ids, "corrupted_value": corrupted_value}

    # ---- Ray Data ------------------------------------------------------------------------------------------------
    def __call__(self, batch: dict) -> dict:
        """``{"payload": [json, …]}`` → ``{"row": [json, …]}`` (:func:`encode_prompt`; rows as JSON keep every bit)."""
        rows = []
        for payload in batch["payload"]:
            key, prompt = decode_prompt(str(payload))
            rows.append(json.dumps(self.row(key, prompt), allow_nan=True))
        return {"row": rows}
