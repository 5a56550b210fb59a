r"""``symuat.models.load``: a checkpoint or module as a :class:`Model` whose DUAT form takes text or token ids.

A :class:`Model` is the imported :class:`~symuat.numeric.TransformerStack` plus what turns tokens into its input:
the word embeddings :math:`E` (Gemma: times its stored ``embed_scale``), the learned position table of the stack
(GPT-2, BERT) or the rotary tables (rows picked per position), the token-type table (BERT; GPT-2 adds ``wte`` rows
for token types), the tokenizer when the checkpoint has one, and its head (:mod:`symuat.models.heads`: LM,
masked-LM, classification heads with their transform, scale and cap; any other head is refused by name).

For one row of ids :math:`t_1..t_N`, with attention mask :math:`m`, position ids :math:`p` and token types
:math:`s`, the form is taken over the row's real tokens :math:`R = \{r : m_r = 1\}` (in order):
:math:`X = E[t_R] + T[s_R]` is the stack's ``inputs_embeds`` and the stack's positions are :math:`p_R`.  A pad
key is masked out by the library, so every real token sees exactly the real tokens; ``form.output`` is the
library's ``last_hidden_state[b, R]``.  Each form also carries the library's own output at that row
(``form.reference``: its last hidden state, and its logits on demand), so an attribution's ``error`` is measured
against the library, not against symuat's own sum.  Position ids default to the library's own: :math:`0..N-1` for
every row, pads counted (left padding shifts the real tokens' positions).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from ..errors import ArgumentTypeError, InvalidValueError, ShapeError, UnsupportedError
from ..numeric import DUATForm, Head, Rotary, TransformerStack, duat_form
from ..numeric.memory import check_memory, form_bytes, out_of_memory
from ..numeric.streamed import StreamedStack
from ._torch import array, library_base, require_torch, sharing
from .device import check_device, to_device
from .reference import _LibraryReference

__all__ = ["Model", "load"]


@dataclass(frozen=True, repr=False)
class Model:
    r"""A model symuat can evaluate from tokens (module docstring).

    Attributes
    ----------
    stack : TransformerStack
    word_embeddings : (V, M) array
        :math:`E`; ``word_scale`` multiplies it (Gemma's ``embed_scale``, else 1).
    token_type_embeddings : (T, M) array or None
        Added per token type (BERT; GPT-2: ``wte``).  BERT's row 0 is already in the stack's positions.
    library : torch.nn.Module
        The library's model (float64, eval mode); with :func:`load` from a path the stack shares its memory.
    tokenizer : transformers tokenizer or None
    head : Head or None
        The model's head (:class:`~symuat.numeric.Head`), None for a base model or a refused head.
    head_refusal : str or None
        Why the model's head is not imported (logit targets are then refused with this reason).
    device : str or None
        ``None``: forms are evaluated with NumPy (the default).  A torch device (``"cpu"``, ``"cuda"``): with the torch
        backend on that device, in float64 (:mod:`symuat.models.device`); the stack's weights are moved there once.
    encoder : TransformerStack or None
        An encoder–decoder's encoder (:mod:`symuat.models.seq2seq`); ``stack`` is then its decoder, whose
        cross-attentions read the encoder's output, bound per input.
    """

    stack: TransformerStack
    word_embeddings: np.ndarray
    word_scale: float
    token_type_embeddings: Optional[np.ndarray]
    token_type_offset: bool
    library: Any
    tokenizer: Any = None
    head: Optional[Head] = None
    head_refusal: Optional[str] = None
    device: Optional[str] = None
    encoder: Optional[TransformerStack] = None
    _moved: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @property
    def lm_head(self) -> Optional[np.ndarray]:
        """The head's output matrix :math:`U` (V, M), or None."""
        return None if self.head is None else self.head.U

    @property
    def family(self) -> str:
        return str(getattr(getattr(self.library, "config", None), "model_type", type(self.library).__name__))

    @property
    def out_of_core(self) -> bool:
        """Whether the layers are read from the checkpoint one at a time (:mod:`symuat.models.out_of_core`)."""
        return isinstance(self.stack, StreamedStack)

    @property
    def max_tokens(self) -> int:
        """Longest row the stack covers (its position table or rotary tables)."""
        limits = []
        if self.stack.position_embeddings is not None:
            limits.append(self.stack.position_embeddings.shape[0])
        if self.out_of_core:
            rot = self.stack.blocks.rotary
            if rot is not None and rot.cos is not None:
                limits.append(rot.cos.shape[0])
        else:
            for b in self.stack.blocks:  # every layer's tables (a NoPE first layer has none: SmolLM3, Llama 4)
                latent = b.attention.latent  # latent attention's decoupled rotary part (DeepSeek-V2/V3)
                for rot in (b.attention.rotary, None if latent is None else latent.rotary):
                    if rot is not None and rot.cos is not None:
                        limits.append(rot.cos.shape[0])
        return min(limits) if limits else 2 ** 31

    def __repr__(self) -> str:
        return (f"Model({self.family}, depth={self.stack.depth}, width={self.stack.width}, "
                f"vocab={self.word_embeddings.shape[0]}, tokenizer={self.tokenizer is not None}, "
                f"head={None if self.head is None else self.head.name})")

    # ---- inputs ------------------------------------------------------------------------------------------------
    def _encode(self, text: Any, text_pair: Any = None) -> dict:
        single = isinstance(text, str)
        if isinstance(text, tuple):
            raise ArgumentTypeError("text is a tuple, which is ambiguous: give a list of str for a batch, and "
                                    "text_pair= for the second segment of a sentence pair")
        if not single and not (isinstance(text, list) and text and all(isinstance(t, str) for t in text)):
            raise ArgumentTypeError(f"text must be a str or a non-empty list of str, got {type(text).__name__}")
        if text_pair is not None:
            pair_ok = isinstance(text_pair, str) if single else (
                isinstance(text_pair, list) and len(text_pair) == len(text) and all(isinstance(t, str)
                                                                                    for t in text_pair))
            if not pair_ok:
                raise ArgumentTypeError(f"text_pair must match text: a str for a str, a list of {len(text)} str for "
                                        f"a list of {len(text)}" if not single else
                                        f"text_pair must be a str like text, got {type(text_pair).__name__}")
        if self.tokenizer is None:
            raise InvalidValueError("this model has no tokenizer: give input_ids instead of text, or load(..., "
                                    "tokenizer=...)")
        if not single and self.tokenizer.pad_token is None:
            raise InvalidValueError("the tokenizer has no pad token: a batch of texts cannot be padded")
        enc = self.tokenizer(text, text_pair, padding=not single, return_attention_mask=True)
        out = {k: np.atleast_2d(np.asarray(enc[k], dtype=np.int64)) for k in ("input_ids", "attention_mask")}
        if "token_type_ids" in enc and self.token_type_embeddings is not None and self.token_type_offset:
            out["token_type_ids"] = np.atleast_2d(np.asarray(enc["token_type_ids"], dtype=np.int64))
        return {**out, "single": single}

    def _ids(self, name: str, value: Any, shape: Optional[tuple], low: int, high: int) -> np.ndarray:
        a = np.asarray(value)
        if a.dtype == object or a.dtype.kind not in "iub":
            raise ArgumentTypeError(f"{name} must be integers, got dtype {a.dtype}")
        if shape is not None and a.shape != shape:
            raise ShapeError(f"{name} has shape {a.shape}, input_ids {shape}")
        if a.size and (a.min() < low or a.max() >= high):
            raise InvalidValueError(f"{name} must lie in [{low}, {high}), got values in [{a.min()}, {a.max()}]")
        return a.astype(np.int64)

    def _rows(self, input_ids, attention_mask, token_type_ids, position_ids):
        try:
            ids = np.asarray(input_ids)
        except ValueError:  # numpy refuses a ragged nested list
            raise ShapeError("input_ids is ragged (rows of different lengths): pad the rows to one length and give "
                             "an attention_mask") from None
        if ids.ndim not in (1, 2) or ids.size == 0:
            raise ShapeError(f"input_ids must be a non-empty 1-D (one sequence) or 2-D (batch) array, got shape "
                             f"{ids.shape}")
        single = ids.ndim == 1
        ids = self._ids("input_ids", np.atleast_2d(ids), None, 0, self.word_embeddings.shape[0])
        B, N = ids.shape
        if N > self.max_tokens:
            raise ShapeError(f"input_ids has {N} tokens; the model covers at most {self.max_tokens} positions")

        def like(name, v, low, high, default):
            if v is None:
                return default
            v = np.asarray(v)
            v = np.atleast_2d(v) if v.ndim == 1 else v
            if v.shape == (1, N) and B > 1:
                v = np.broadcast_to(v, (B, N))
            return self._ids(name, v, (B, N), low, high)

        mask = like("attention_mask", attention_mask, 0, 2, np.ones((B, N), np.int64))
        empty = np.flatnonzero(mask.sum(axis=1) == 0)
        if empty.size:
            raise InvalidValueError(f"attention_mask row {int(empty[0])} has no real token")
        if token_type_ids is not None and self.token_type_embeddings is None:
            raise UnsupportedError(f"{self.family} has no token type embeddings; token_type_ids must be None")
        T = 1 if self.token_type_embeddings is None else self.token_type_embeddings.shape[0]
        types = like("token_type_ids", token_type_ids, 0, T, None)
        if self.family == "roberta":
            pos = self._roberta_positions(ids, mask, position_ids)
        elif self.family in _REAL_TOKEN_POSITIONS and position_ids is None:  # OPT: cumsum(mask) - 1
            pos = np.where(mask == 1, np.cumsum(mask, axis=1) - 1, 0)
        else:
            pos = like("position_ids", position_ids, 0, self.max_tokens, np.broadcast_to(np.arange(N), (B, N)))
        return single, ids, mask, types, pos

    def _roberta_positions(self, ids: np.ndarray, mask: np.ndarray, position_ids: Any) -> np.ndarray:
        r"""RoBERTa's own positions: ``pad + cumsum(ids != pad)`` (its table rows after the padding row)."""
        if position_ids is not None:
            raise UnsupportedError("roberta derives its positions from the pad id; explicit position_ids are not "
                                   "supported")
        pad = int(self.library.config.pad_token_id)
        real_pad = (ids == pad) & (mask == 1)
        if real_pad.any():
            raise UnsupportedError(f"a real token (attention_mask 1) has the pad id {pad}: roberta gives it the "
                                   "padding position, which the stack's position table does not hold")
        pos = np.cumsum(ids != pad, axis=1) - 1
        if pos.max() >= self.max_tokens:
            raise ShapeError(f"input_ids has {pos.max() + 1} tokens; the model covers at most {self.max_tokens}")
        return np.where(mask == 1, pos, 0)

    def inputs_embeds(self, ids: np.ndarray, types: Optional[np.ndarray]) -> np.ndarray:
        r""":math:`X = sE[t] + T[s] - T[0]` (BERT, whose :math:`T[0]` is in the stack) or :math:`+T[s]` (GPT-2)."""
        X = self.word_embeddings[ids]
        if self.word_scale != 1.0:
            X = X * self.word_scale
        if types is not None:
            tt = self.token_type_embeddings
            X = X + (tt[types] - tt[0] if self.token_type_offset else tt[types])
        return X

    def row_stack(self, positions: np.ndarray) -> TransformerStack:
        r"""The stack at the given position ids (learned rows :math:`P[p]`, rotary rows :math:`\cos/\sin[p]`)."""
        stack, n = self.stack, positions.shape[0]
        if np.array_equal(positions, np.arange(n)):
            return stack
        if self.out_of_core:
            raise UnsupportedError("an out-of-core model takes the default positions 0..N-1 only (no position_ids, "
                                   "no left padding)")
        P = None if stack.position_embeddings is None else stack.position_embeddings[positions]
        blocks, cache = [], {}
        for b in stack.blocks:
            rot = b.attention.rotary
            if rot is not None:
                if rot.cos is None:
                    raise UnsupportedError("explicit position ids need the rotary tables of an imported model")
                if id(rot) not in cache:
                    cache[id(rot)] = Rotary(rot.dim, rot.base, rot.style, rot.inv_freq, rot.cos[positions],
                                            rot.sin[positions])
                b = dataclasses.replace(b, attention=dataclasses.replace(b.attention, rotary=cache[id(rot)]))
            blocks.append(b)
        return dataclasses.replace(stack, blocks=tuple(blocks), position_embeddings=P)

    # ---- the form ------------------------------------------------------------------------------------------------
    def to_str_tokens(self, text: Any = None, input_ids: Any = None) -> list:
        r"""The token strings of ``text`` (as :meth:`duat_form` tokenizes it) or of ``input_ids`` (1-D).

        Raises :class:`~symuat.errors.InvalidValueError` for a model without a tokenizer.
        """
        if (text is None) == (input_ids is None):
            raise InvalidValueError("give exactly one of text and input_ids")
        if self.tokenizer is None:
            raise InvalidValueError("this model has no tokenizer: load(..., tokenizer=...) gives it one")
        if text is not None:
            if not isinstance(text, str):
                raise ArgumentTypeError(f"text must be a str, got {type(text).__name__}")
            input_ids = self._encode(text)["input_ids"][0]
        ids = self._ids("input_ids", np.asarray(input_ids), None, 0, self.word_embeddings.shape[0])
        if ids.ndim != 1:
            raise ShapeError(f"input_ids must be 1-D, got shape {ids.shape}")
        return list(self._tokens(ids))

    def _tokens(self, ids: np.ndarray) -> Optional[tuple]:
        if self.tokenizer is None:
            return None
        return tuple(str(t) for t in self.tokenizer.convert_ids_to_tokens([int(i) for i in ids]))

    def duat_form(self, text: Union[str, Sequence[str], None] = None, input_ids: Any = None,
                  attention_mask: Any = None, token_type_ids: Any = None,
                  position_ids: Any = None,
                  text_pair: Union[str, Sequence[str], None] = None, *, decoder_input_ids: Any = None,
                  decoder_attention_mask: Any = None,
                  decoder_text: Union[str, Sequence[str], None] = None) -> Union[DUATForm, tuple]:
        r"""The DUAT form (Eq. 11 / 33) of the model at ``text`` or ``input_ids``.

        A string or 1-D ids give one :class:`~symuat.numeric.DUATForm`; a list of strings or 2-D ids give a tuple
        of forms, one per row over that row's real tokens (``attention_mask == 1``).  ``text_pair`` is the second
        segment of a sentence pair (BERT: token type 1), a str for a str and a list for a list; a tuple as ``text``
        is refused (a batch is a list).  Position ids default to the library's (``0..N-1`` per row, pads counted);
        ``token_type_ids`` default to 0.  With a tokenizer each form keeps its ``tokens`` and ``token_ids``
        (:meth:`~symuat.numeric.DUATForm.to_str_tokens`).

        An encoder–decoder (T5) takes the encoder's input as ``text`` / ``input_ids`` / ``attention_mask`` and the
        decoder's as ``decoder_text`` / ``decoder_input_ids`` / ``decoder_attention_mask``, and gives the decoder's
        form, with the encoder's as ``form.encoder`` (:mod:`symuat.models.seq2seq`).
        """
        decoder = {"decoder_input_ids": decoder_input_ids, "decoder_attention_mask": decoder_attention_mask,
                   "decoder_text": decoder_text}
        if self.encoder is not None:
            from .seq2seq import seq2seq_forms

            for name, v in (("token_type_ids", token_type_ids), ("position_ids", position_ids),
                            ("text_pair", text_pair)):
                if v is not None:
                    raise UnsupportedError(f"{name} is not an input of {self.family}'s encoder–decoder; give None")
            return seq2seq_forms(self, text, input_ids, attention_mask, decoder_text, decoder_input_ids,
                                 decoder_attention_mask)
        given = [k for k, v in decoder.items() if v is not None]
        if given:
            raise InvalidValueError(f"{given[0]} is for an encoder–decoder; {self.family} is not one")
        if (text is None) == (input_ids is None):
            raise InvalidValueError("give exactly one of text and input_ids")
        if text_pair is not None and text is None:
            raise InvalidValueError("text_pair needs text (the first segment)")
        if text is not None:
            if attention_mask is not None or token_type_ids is not None:
                raise InvalidValueError("with text the tokenizer makes attention_mask and token_type_ids")
            enc = self._encode(text, text_pair)
            input_ids, attention_mask = enc["input_ids"], enc["attention_mask"]
            token_type_ids = enc.get("token_type_ids")
            if enc["single"]:
                input_ids, attention_mask = input_ids[0], attention_mask[0]
                token_type_ids = None if token_type_ids is None else token_type_ids[0]
        single, ids, mask, types, pos = self._rows(input_ids, attention_mask, token_type_ids, position_ids)
        reference = (None if self.out_of_core else
                     self._library_outputs(ids, mask, types, None if position_ids is None else pos))
        forms = []
        for b in range(ids.shape[0]):
            real = np.flatnonzero(mask[b])
            if real[-1] - real[0] + 1 != real.size and (self.family == "mpt" or any(
                    blk.attention.sliding_window is not None or blk.attention.position_bias is not None
                    for blk in self.stack.blocks)):
                what = ("MPT's ALiBi" if self.family == "mpt" else "a relative position bias (T5)" if
                        self.stack.blocks[0].attention.position_bias is not None else "a sliding window")
                raise UnsupportedError(f"attention_mask row {b} has pads between real tokens: {what} "
                                       "counts them, the form over the real tokens would not")
            X = self.inputs_embeds(ids[b, real], None if types is None else types[b, real])
            stack = self.row_stack(pos[b, real])
            if self.device is not None:  # the torch backend: weights moved once (cached), the input each time
                stack, X = to_device(stack, self.device, self._moved), to_device(X, self.device)
            form = self._evaluate(stack, X)
            row = ids[b, real].copy()
            row.setflags(write=False)
            form = dataclasses.replace(form, tokens=self._tokens(row), token_ids=row)
            forms.append(dataclasses.replace(form, unembedding=self.head if self.head is not None
                                             else self.head_refusal,
                                             reference=None if reference is None else reference(b, real)))
        if self.out_of_core:
            self.stack.blocks.release()  # the last layer read is not kept (its views read it again)
        return forms[0] if single else tuple(forms)

    def _evaluate(self, stack: TransformerStack, X: Any) -> DUATForm:
        """``duat_form(stack, X)``; a torch device's own out-of-memory error becomes :class:`OutOfMemoryError` too (a
        host MemoryError already does, in :func:`~symuat.numeric.duat_form`)."""
        if self.device is None or not self.device.startswith("cuda"):
            return duat_form(stack, X)
        torch = require_torch()
        try:
            return duat_form(stack, X)
        except torch.cuda.OutOfMemoryError as exc:
            raise out_of_memory(exc, f"evaluating the DUAT form at N={X.shape[0]} on {self.device}",
                                form_bytes(stack, X.shape[0])) from None

    def _library_outputs(self, ids, mask, types, pos):
        r"""A function ``(row, real) → reference``: the library's own last hidden state (its base model, one forward
        pass over the batch, float64 throughout, run when a reference is first read) and a function giving its logits
        at that row (the whole model run on that row when an attribution asks for them: the logits (N, V) are not
        held otherwise).  A form that is never compared with the library costs no library forward pass."""
        torch = require_torch()
        from .precision import library_float64

        kw = {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask)}
        if types is not None:
            kw["token_type_ids"] = torch.from_numpy(types)
        if pos is not None:
            kw["position_ids"] = torch.from_numpy(np.ascontiguousarray(pos))
        base = library_base(self.library)
        held: dict = {}

        def hidden() -> np.ndarray:
            if "hidden" not in held:
                with torch.no_grad(), library_float64():
                    held["hidden"] = base(**kw).last_hidden_state.detach().double().numpy()
            return held["hidden"]

        def logits(b: int, real: np.ndarray) -> tuple:
            with torch.no_grad(), library_float64():
                out = self.library(**{k: v[b:b + 1] for k, v in kw.items()})
            got = getattr(out, "prediction_logits", None)
            got = (out.logits if got is None else got)[0].detach().double().numpy()
            if self.head.reads == "every":
                return got[real], np.arange(real.size)
            row = 0 if self.head.reads == "first" else real.size - 1  # one row per sequence
            full = np.full((real.size, got.shape[-1]), np.nan)
            full[row] = got.reshape(-1)
            return full, np.array([row])

        def reference(b: int, real: np.ndarray) -> Mapping:
            return _LibraryReference(lambda: hidden()[b, real],
                                     None if self.head is None else (lambda: logits(b, real)))
        return reference


#: Families whose default positions count the real tokens only (``cumsum(attention_mask) - 1``), not the pads.
_REAL_TOKEN_POSITIONS = ("opt",)


def _tokenizer(path: Path) -> Any:
    if not any((path / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt")):
        return None
    import json

    import transformers

    cls = transformers.AutoTokenizer
    try:  # the class the checkpoint names (AutoTokenizer alone may pick the family's class over tokenizer.json)
        name = json.loads((path / "tokenizer_config.json").read_text()).get("tokenizer_class")
        named = getattr(transformers, name, None) if isinstance(name, str) else None
        if isinstance(named, type) and issubclass(named, transformers.PreTrainedTokenizerBase):
            cls = named
    except (OSError, ValueError, AttributeError):
        pass
    try:
        return cls.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - the tokenizer loaders' many failure types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidValueError(f"cannot load the tokenizer of {str(path)!r}: {first}") from None


def _embeddings(base: Any, family: str) -> tuple:
    """``(E, scale, T, offset)`` of the base model (module docstring)."""
    if family in ("gpt2", "gptj"):
        E = array("wte.weight", base.wte.weight)
        return E, 1.0, E, False
    if family in ("bert", "roberta"):
        emb = base.embeddings
        return (array("embeddings.word_embeddings.weight", emb.word_embeddings.weight), 1.0,
                array("embeddings.token_type_embeddings.weight", emb.token_type_embeddings.weight), True)
    if family == "distilbert":
        return array("embeddings.word_embeddings.weight", base.embeddings.word_embeddings.weight), 1.0, None, False
    emb = base.get_input_embeddings()  # embed_in (GPT-NeoX), word_embeddings (Falcon), embed_tokens (the others)
    scale = getattr(emb, "embed_scale", None)
    scale = 1.0 if scale is None else float(scale.detach().double().item())
    return array("embed_tokens.weight", emb.weight), scale, None, False


def _probe_embeddings(model: Model) -> None:
    """The library's embedding module at a few ids equals :math:`sE[t]` (else the module differs)."""
    torch = require_torch()
    base = library_base(model.library)
    module = base.get_input_embeddings()
    ids = np.unique(np.array([0, 1, model.word_embeddings.shape[0] - 1]))
    with torch.no_grad():
        got = module(torch.from_numpy(ids)).detach().double().numpy()
    want = model.inputs_embeds(ids, None)
    if not np.allclose(got, want, rtol=1e-15, atol=0):
        raise UnsupportedError(f"the word embedding module ({type(module).__name__}) does not compute scale * E[ids]")


def _given_tokenizer(tokenizer: Any, vocab: int) -> Any:
    """A tokenizer object, or a local directory holding one; refused when its ids exceed the embeddings."""
    if isinstance(tokenizer, (str, Path)):
        path = Path(tokenizer)
        found = _tokenizer(path) if path.is_dir() else None
        if found is None:
            raise InvalidValueError(f"tokenizer={str(tokenizer)!r} is not a local directory holding a tokenizer")
        tokenizer = found
    if not (callable(tokenizer) and hasattr(tokenizer, "convert_ids_to_tokens")):
        raise ArgumentTypeError(f"tokenizer must be a transformers tokenizer or a directory holding one, got "
                                f"{type(tokenizer).__name__}")
    if len(tokenizer) > vocab:
        raise InvalidValueError(f"the tokenizer has {len(tokenizer)} tokens, the model's embeddings {vocab}: its ids "
                                "would fall outside the vocabulary (another model's tokenizer?)")
    return tokenizer


def load(source: Any, tokenizer: Any = None, layers: Optional[int] = None, device: Any = None,
         out_of_core: Optional[bool] = None) -> Model:
    r"""A :class:`Model` from a local ``save_pretrained`` directory (safetensors; weights held once, shared with the
    library's model) or from a transformers module already in memory (its weights are copied).

    ``tokenizer`` (a transformers tokenizer, or a local directory holding one) replaces the checkpoint's own (a
    module in memory has none): :meth:`Model.duat_form` then takes ``text=`` and every form keeps its tokens.

    ``layers=k`` (a directory only): the library's base model cut to its first ``k`` layers, final norm kept, no LM
    head (:mod:`symuat.models.prefix`), to check a prefix of a model too big to load whole.

    ``device`` (``None``: NumPy, the default): a torch device such as ``"cpu"`` or ``"cuda"`` evaluates every form
    with the torch backend there, in float64 (:mod:`symuat.models.device`); the form's arrays are then torch tensors
    on that device, and the analyses that need NumPy refuse them by name (``form.to_numpy()`` converts).

    ``out_of_core`` (a directory only): ``True`` reads the layers from the checkpoint one at a time
    (:mod:`symuat.models.out_of_core`: the model's float64 weights are never all in memory; no LM head, no
    ``device``); ``False`` loads the library's float64 model; ``None`` (default) goes out of core when the float64
    model would not fit in the memory available now (:func:`~symuat.models.out_of_core.needs_out_of_core`, from the
    headers, before anything is allocated), and refuses a family that cannot with ``OutOfMemoryError``."""
    from .heads import probe_head, read_head
    from .importer import FAMILIES, from_module, load_library
    from .seq2seq import is_encoder_decoder, probe_seq2seq, seq2seq_stacks

    torch = require_torch()
    device = check_device(device)
    if layers is not None and not isinstance(source, (str, Path)):
        raise InvalidValueError(f"layers={layers!r} needs a checkpoint directory, got a {type(source).__name__}")
    encoder = None
    if out_of_core is not None and not isinstance(out_of_core, bool):
        raise ArgumentTypeError(f"out_of_core must be True, False or None, got {type(out_of_core).__name__}")
    if out_of_core and not isinstance(source, (str, Path)):
        raise InvalidValueError(f"out_of_core=True needs a checkpoint directory, got a {type(source).__name__}")
    if isinstance(source, (str, Path)) and not out_of_core:
        from .importer import _check_checkpoint
        from .out_of_core import float64_bytes, needs_out_of_core

        _check_checkpoint(source)
        if out_of_core is None and device is None:
            out_of_core = needs_out_of_core(source, layers)
        else:  # in memory: refused from the headers when the float64 weights alone exceed the memory available
            check_memory(float64_bytes(source, layers), f"loading {str(source)!r} in float64",
                         "load(..., out_of_core=True) reads a Llama checkpoint's layers one at a time")
    if out_of_core:
        return _load_out_of_core(Path(source), tokenizer, layers, device)
    if isinstance(source, (str, Path)):
        with sharing():
            if layers is None:
                library = load_library(source)
                if is_encoder_decoder(library):
                    encoder, stack = seq2seq_stacks(library)
                else:
                    stack = from_module(library)
            else:
                from .prefix import load_prefix

                library, stack = load_prefix(source, layers)
            own = _tokenizer(Path(source))
            base = library_base(library)
            parts = _embeddings(base, library.config.model_type)
            head, refusal = read_head(library)
    elif isinstance(source, torch.nn.Module) and getattr(getattr(source, "config", None), "model_type", None) \
            in FAMILIES:
        library, own = source, None
        if is_encoder_decoder(library):
            encoder, stack = seq2seq_stacks(library)
        else:
            stack = from_module(library)
        base = library_base(library)
        parts = _embeddings(base, library.config.model_type)
        head, refusal = read_head(library)
    else:
        raise UnsupportedError(f"load needs a checkpoint directory or a transformers model of a family in "
                               f"{sorted(FAMILIES)}, got {type(source).__name__}")
    tokenizer = own if tokenizer is None else _given_tokenizer(tokenizer, parts[0].shape[0])
    if encoder is not None and head is not None:
        probe_seq2seq(library, encoder, stack, head)
    elif head is not None:
        probe_head(library, head, stack)
    model = Model(stack, parts[0], parts[1], parts[2], parts[3], library, tokenizer, head, refusal, device,
                  encoder)
    _probe_embeddings(model)
    if device is not None:  # the weights moved once, now (a missing device fails here, not at the first form)
        to_device(stack, device, model._moved)
    return model


def _load_out_of_core(path: Path, tokenizer: Any, layers: Optional[int], device: Any) -> Model:
    """:func:`load` with ``out_of_core`` (:mod:`symuat.models.out_of_core`)."""
    from .out_of_core import load_out_of_core

    if device is not None:
        raise UnsupportedError(f"out_of_core with device={device!r}: an out-of-core model is evaluated with NumPy")
    stack, rows, base = load_out_of_core(path, layers)
    own = _tokenizer(path)
    tokenizer = own if tokenizer is None else _given_tokenizer(tokenizer, rows.shape[0])
    refusal = ("an out-of-core model has no LM head: its V×M table is not widened to float64 (logit targets need "
               "the model in memory; a direction in the residual stream works; symuat.models.out_of_core.lm_logits "
               "gives the logits in vocabulary chunks)")
    return Model(stack, rows, 1.0, None, False, base, tokenizer, None, refusal, None)
