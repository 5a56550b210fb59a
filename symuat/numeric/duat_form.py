r"""The DUAT form of a real Transformer stack (seed 001 Eq. 11 / Eq. 33, and its extensions), evaluated numerically.

For an input :math:`X` (what a library calls ``inputs_embeds``) the *derived* substitution table of the
stack's shape (:func:`~symuat.expansion.extended.derive_table`: plain or gated FFN, an input-transform
box 0, a final-norm box) is evaluated box by box (:class:`~symuat.numeric.duat_eval.StreamingEvaluator`);
each layer's Eq. 20 parameters are computed at the layer input the table produced, as structured
operators (never an :math:`NM\times NM` matrix):

.. math::
    \mathbf x'_{out} = \tilde A\,\mathbf x'_0 + \tilde c
    + \sum_{j=1}^{L}\tilde U_j\,\mathrm{app}_j,\qquad
    \mathrm{app}_j = \sigma_j(\tilde V_j\mathbf x'_0 + \tilde\beta_j)
    \ \text{or}\ \mathrm{act}_j(\tilde V_j\mathbf x'_0 + \tilde\beta_j)\odot(\tilde P_j\mathbf x'_0 + \tilde\gamma_j).

Inputs are validated once, here; operators built inside trust them
(:func:`~symuat.numeric.operators.trusted_operators`).
:func:`duat_relative_error` compares with the independent direct forward pass.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

import numpy as np

from ..errors import InvalidValueError, UnsupportedError
from ..expansion import FormTerms, SubstitutionTable, affine_term, derive_table, gated_residual_term
from ..expansion.extended import ExtendedTable, plain_residual_term
from .analyses import analysis
from .backend import backend_name, copy_array, is_numpy, namespace, on_backend, to_numpy, zeros_like_backend
from .duat_eval import BoxOperator, StreamingEvaluator
from .ffn import activation_function
from .layer_params import LayerParams
from .memory import check_memory, form_bytes, out_of_memory
from .norms import norm_operator
from .operators import IdentityOperator, Scaled, trusted_operators, unvec_r, vec_r
from .residual_params import ResidualParams, _layer_params
from .stack import TransformerStack, bind_memory, check_input, stack_output

__all__ = ["DUATForm", "duat_form", "duat_relative_error", "extended_table"]


@lru_cache(maxsize=64)
def extended_table(depth: int, gated: bool, input_transform: bool, final: bool) -> ExtendedTable:
    """The derived table of a stack's shape (cached)."""
    return derive_table(depth, gated_residual_term if gated else plain_residual_term, gated=gated,
                        input_transform=input_transform, final=affine_term if final else None)


@dataclass(frozen=True, repr=False)
class DUATForm:
    r"""The Eq. 11 form of ``stack`` at input ``X0``: table, per-layer parameters and evaluated terms.

    Attributes
    ----------
    stack : TransformerStack
    X0 : (N, M) array
        The input (``inputs_embeds``), before the stack's input transform.
    table : SubstitutionTable
        The derived substitution table (symbolic), boxes ``0..depth`` (+1 for a final norm).
    params : LayerParams
        The (gated) Eq. 20 parameters of each layer at its actual input, recomputed on demand from the layer
        inputs (the form holds no layer's attention matrices; :mod:`symuat.numeric.layer_params`).
    terms : FormTerms
        :math:`\tilde A\mathbf x'_0`, :math:`\tilde c` and the :math:`L` nonlinear terms, summed in ``total``.
    ext : ExtendedTable
        The table with its shape (gated, input transform, final box).
    box0, final : dict
        Bindings of the input-transform box (``W'_{0,1}``, ``b'_{0,3}``) and of the final-norm box.
    attention_mask : (N,) array or None
    unembedding : Head, (U (V, M), b (V,) or None), str or None
        The model's head (:class:`~symuat.numeric.head.Head`: transform, scale, cap), an affine ``(U, b)`` pair,
        or a str saying why the model's head is refused (:meth:`attribution` with ``target``).
    reference : dict or None
        The library's own output at this input when the form was made from a library model
        (:func:`symuat.models.load`): ``"output"`` (N, M) and, with a head, ``"logits"``: a function returning the
        library's logits (N, V) and the rows it gives (all, or the one a classification head reads).
        An attribution's ``error`` is measured against it.
    tokens : tuple of str or None
        The token strings of the input, one per row of ``X0``, when the form was made from text or ids by a model
        with a tokenizer (:meth:`symuat.models.Model.duat_form`); plots and part names use them.
    token_ids : (N,) int array or None
        The token ids of the input, when the form was made from ids or text.
    encoder : DUATForm or None
        An encoder–decoder's decoder form: the encoder's form, whose output every cross-attention of ``stack`` reads
        (:mod:`symuat.numeric.cross`, :mod:`symuat.models.seq2seq`).
    """

    stack: TransformerStack
    X0: np.ndarray
    table: SubstitutionTable
    params: Sequence[ResidualParams]
    terms: FormTerms
    ext: Optional[ExtendedTable] = None
    box0: Optional[dict] = None
    final: Optional[dict] = None
    attention_mask: Optional[np.ndarray] = None
    unembedding: Any = None
    reference: Optional[dict] = None
    tokens: Optional[tuple] = None
    token_ids: Optional[np.ndarray] = None
    encoder: Optional["DUATForm"] = None

    def __repr__(self) -> str:
        N, M = self.X0.shape
        return (f"DUATForm(depth={self.depth}, N={N}, M={M}, kind={self.stack.kind!r}, "
                f"gated={bool(self.ext and self.ext.gated)}, terms={len(self.terms.sigma_terms)})")

    @property
    def depth(self) -> int:
        """Number of Transformer layers :math:`L`."""
        return len(self.params)

    @property
    def output(self) -> np.ndarray:
        """The last hidden state (final norm included), reshaped from :math:`\\mathbf x'_{out}` (row-major), on the
        form's backend."""
        N, M = self.X0.shape
        if not is_numpy(self.terms.total):
            return copy_array(self.terms.total.reshape(N, M))
        return unvec_r(self.terms.total, N, M)

    @property
    def backend(self) -> str:
        """``"numpy"`` or the torch device the form was evaluated on, e.g. ``"torch:cuda:0"``
        (:mod:`symuat.numeric.backend`)."""
        return backend_name(self.terms.total)

    def to_numpy(self) -> "DUATForm":
        """This form on the NumPy backend: the stack and the input copied to the host and the form re-evaluated there
        (NumPy's own result, bit for bit; tokens, head, reference and an encoder–decoder's encoder form kept, the
        encoder re-evaluated first and its NumPy output bound to every cross-attention).  A NumPy form is returned as
        it is."""
        if self.backend == "numpy":
            return self
        stack = on_backend(self.stack, to_numpy)
        encoder = None if self.encoder is None else self.encoder.to_numpy()
        if encoder is not None:
            stack = bind_memory(stack, encoder.output)
        form = duat_form(stack, to_numpy(self.X0), self.attention_mask)
        return dataclasses.replace(form, unembedding=self.unembedding, reference=self.reference, tokens=self.tokens,
                                   token_ids=self.token_ids, encoder=encoder)

    # ---- named views as numbers (symuat.analysis.views) --------------------------------------------------------
    def attention(self, layer: int, head: int) -> np.ndarray:
        """The N×N attention matrix :math:`H_h` of ``layer`` and ``head`` (both 0-based), recomputed on demand."""
        return analysis("attention")(self, layer, head)

    def cross_attention(self, layer: int, head: int) -> np.ndarray:
        """The N×N_e cross-attention matrix of a decoder block ``layer`` and ``head`` (both 0-based): queries from the
        decoder stream, keys from the encoder's output (an encoder–decoder's form)."""
        return analysis("cross_attention")(self, layer, head)

    def parameters(self, layer: int) -> Any:
        """``W'_{k,1..4}``, ``b'_{k,2..4}`` of ``layer`` (0-based, k = layer + 1) with named Kronecker factors."""
        return analysis("layer_parameters", "parameters")(self, layer)

    def A_tilde(self) -> Any:
        r""":math:`\tilde A` (Eq. 11) as a lazy operator; ``form.A_tilde() @ vec_r(X0)`` is the linear term."""
        return analysis("A_tilde")(self)

    def c_tilde(self) -> np.ndarray:
        r""":math:`\tilde c` (Eq. 11), length :math:`NM`."""
        return analysis("c_tilde")(self)

    def dynamic(self, j: int) -> Any:
        r""":math:`\tilde V_j, \tilde\beta_j, \tilde U_j` (gated: :math:`\tilde P_j, \tilde\gamma_j`) of term ``j``
        (1-based, as in the paper)."""
        return analysis("dynamic_term", "dynamic")(self, j)

    def token_terms(self) -> dict:
        """Every term as an (N, M) array, keyed ``A~x0``, ``c~``, ``U~j app_j``; they sum to ``output``."""
        return analysis("token_terms")(self)

    # ---- attributions, interventions, export, pictures (issue 21) -------------------------------------------------
    def attribution(self, by: str = "term", target: Any = None, position: Any = None, **options: Any) -> Any:
        """Exact attribution by ``"term"``, ``"source"``, ``"layer"``, ``"head"``, ``"neuron"`` or ``"expert"``
        (:mod:`symuat.analysis.attribution`); ``target="logits"``, a token id or a direction; with ``position``,
        one target at one token by reverse mode."""
        return analysis("attribution")(self, by, target, position, **options)

    def frozen(self, gates: str = "held") -> Any:
        """The DUAT function with this input's dynamic parameters held (:mod:`symuat.analysis.frozen`)."""
        return analysis("frozen")(self, gates)

    def intervene(self, unit: tuple, scale: float = 0.0) -> Any:
        """Scale one head, neuron, source token or term, frozen and re-computed
        (:mod:`symuat.analysis.interventions`)."""
        return analysis("intervene")(self, unit, scale)

    def save(self, path: Any, tokens: Any = None, model: Any = None, overwrite: bool = False) -> Any:
        """Write ``path`` (.npz) and its ``.json`` metadata (:mod:`symuat.analysis.export`; read back with
        :func:`~symuat.analysis.export.load_saved`); a file no export wrote is replaced only with ``overwrite``."""
        return analysis("save")(self, path, tokens, model, overwrite)

    def graph(self, target: Any, tokens: Any = None, token_ids: Any = None, prompt: str = "", **options: Any) -> dict:
        """The attribution graph of ``target`` (a token id, or an output direction) at a position, in the JSON that
        circuit-tracer's viewer loads (:func:`symuat.analysis.export.attribution_graph`)."""
        return analysis("graph")(self, target, tokens, token_ids, prompt, **options)

    def plot(self, path: Any = None, tokens: Any = None, layer: int = 0, head: int = 0, target: Any = None) -> Any:
        """Term × layer, source × output token, head × layer and one attention matrix
        (:mod:`symuat.analysis.plot`, needs matplotlib); saved to ``path`` when given."""
        return analysis("plot")(self, path, tokens, layer, head, target)

    # ---- the run's activations and patching (symuat.analysis.cache, .patching; issue 32) ----------------------------
    def to_str_tokens(self) -> list:
        """The input's token strings (a form made from text or ids by a model with a tokenizer)."""
        if self.tokens is None:
            raise InvalidValueError("this form has no tokens: it was made from inputs_embeds or by a model without a "
                                    "tokenizer (Model.duat_form(text=...) or input_ids= with a tokenizer keeps them)")
        return list(self.tokens)

    def resid(self, layer: int) -> np.ndarray:
        """The residual stream entering block ``layer`` (0-based; ``layer = L``: the last block's output before the
        final norm), (N, M) (:func:`symuat.analysis.cache.resid`)."""
        return analysis("resid")(self, layer)

    def activations(self) -> Any:
        """Every named activation (``resid.l``, ``attn.l``, ``head.l``, ``ffn.l``, ``neurons.l``, ``expert.l``) as
        one value (:func:`symuat.analysis.cache.activations`)."""
        return analysis("activations")(self)

    def logit_lens(self, positions: Any = None) -> np.ndarray:
        """``(L+1, N, V)``: every layer's residual stream through the final norm and the LM head
        (:func:`symuat.analysis.cache.logit_lens`)."""
        return analysis("logit_lens")(self, positions)

    def patch(self, unit: Any, source: Any = None, *, value: Any = None, mode: str = "recomputed",
              gates: str = "held") -> Any:
        """Replace ``unit``'s output by its output in ``source`` (or by ``value``), recomputed or frozen
        (:func:`symuat.analysis.patching.patch`)."""
        return analysis("patch")(self, unit, source, value=value, mode=mode, gates=gates)

    def patch_sweep(self, source: Any, over: str = "resid", **kwargs: Any) -> Any:
        """Patch every (layer, position) or (layer, head) from ``source``
        (:func:`symuat.analysis.patching.patch_sweep`)."""
        return analysis("patch_sweep")(self, source, over, **kwargs)

    def _repr_html_(self) -> str:
        return analysis("summary_html", "_repr_html_")(self)

    def parameter(self, name: str) -> Any:
        """The operator or vector bound to a layer symbol, e.g. ``"W'_{2,1}"``."""
        bindings = self.bindings()
        if name not in bindings:
            raise InvalidValueError(f"unknown parameter name {name!r}; expected one of {sorted(bindings)}")
        return bindings[name]

    def is_dynamic(self, name: str) -> bool:
        """Whether the layer parameter ``name`` depends on the input (layout rule, see ``DYNAMIC``)."""
        for i, p in enumerate(self.params, start=1):
            for field in ("W1", "W2", "W3", "W4", "b2", "b3", "b4"):
                if name == f"{field[0]}'_{{{i},{field[1]}}}" and getattr(p, field) is not None:
                    return field in p.dynamic
        raise InvalidValueError(f"unknown parameter name {name!r}")

    def bindings(self) -> Mapping[str, Any]:
        if self.backend != "numpy":
            raise UnsupportedError(f"the bindings of a form on {self.backend} are not exported; form.to_numpy() "
                                   "re-evaluates it with NumPy first")
        out: dict[str, Any] = {"x'_{0}": vec_r(self.X0)}
        for i, p in enumerate(self.params, start=1):
            for field in ("W1", "W2", "W3", "W4", "b2", "b3", "b4"):
                if getattr(p, field) is not None:
                    out[f"{field[0]}'_{{{i},{field[1]}}}"] = getattr(p, field)
        out.update(self.box0 or {})
        out.update(self.final or {})
        return out


def _op(o) -> BoxOperator:
    return BoxOperator(None, o)


def duat_form(stack: TransformerStack, X0: Any, attention_mask: Any = None, *, on_box: Any = None) -> DUATForm:
    r"""Evaluate the derived DUAT form of ``stack`` at ``X0`` (``inputs_embeds``, shape ``(N, M)``).

    Parameters
    ----------
    stack : TransformerStack
    X0 : (N, M) array
    attention_mask : (N,) array of 0/1, optional
        Key-padding mask (1 = real token).
    on_box : callable, optional
        ``on_box(i, lin, bias, terms)`` after box ``i`` (``1..L``, then ``L+1`` for a final norm) with
        :math:`\tilde A_i\mathbf x'_0`, :math:`\tilde c_i` and the terms :math:`\tilde U^{(i)}_j\mathrm{app}_j`:
        box ``i`` is the DUAT form of the first ``i`` layers, so every depth is seen in one evaluation.

    Returns
    -------
    DUATForm
        ``form.output`` is the stack's last hidden state, final norm included.

    Raises
    ------
    ShapeError, InvalidValueError
        Wrong input width, non-finite input, bad mask, fully masked attention rows, overflow in attention
        (the message names the layer and head).
    UnsupportedError
        A stack mixing plain and gated FFNs.
    OutOfMemoryError
        The evaluation does not fit in the memory available now (or in ``SYMUAT_MEMORY_LIMIT``): refused before it
        starts, with the estimate of ``memory.form_bytes`` and the memory available.
    """
    X, mask = check_input(stack, X0, attention_mask)
    check_memory(form_bytes(stack, X.shape[0]), f"evaluating the DUAT form at N={X.shape[0]}",
                 "use fewer tokens")  # refused before anything is allocated (memory.py)
    try:
        return _evaluate(stack, X, mask, on_box)
    except MemoryError as exc:
        raise out_of_memory(exc, f"evaluating the DUAT form at N={X.shape[0]}", form_bytes(stack, X.shape[0])) from None


def _evaluate(stack: TransformerStack, X: np.ndarray, mask: Any, on_box: Any) -> DUATForm:
    kinds = set(stack.blocks_shape()[0])
    if len(kinds) > 1:
        raise UnsupportedError("duat_form: a stack mixing plain and gated FFNs has no single table")
    gated = kinds.pop()
    has_input = stack.input_scale is not None or stack.position_embeddings is not None or stack.input_norm is not None
    has_final = stack.final_norm is not None
    L = stack.depth
    ext = extended_table(L, gated, has_input, has_final)
    N, M = X.shape
    x0 = copy_array(X.reshape(-1))
    ev = StreamingEvaluator(ext, x0)
    box0 = final = None
    with trusted_operators():
        if has_input:
            s = 1.0 if stack.input_scale is None else stack.input_scale
            P = stack.position_embeddings
            p = zeros_like_backend(X, N * M) if P is None else P[:N].reshape(-1)
            W0, b0 = Scaled(s, IdentityOperator(N * M)), p
            if stack.input_norm is not None:
                Lin, beta = norm_operator((s * X + p.reshape(N, M)), stack.input_norm)
                W0, b0 = Scaled(s, Lin), Lin._matvec(p) + beta
            box0 = {"W'_{0,1}": W0, "b'_{0,3}": b0}
            ev.bind(0, {"W'_{0,1}": _op(W0)}, {"b'_{0,3}": b0})
        lin, bias, terms = ev.box_values(0)
        x = lin + bias
        inputs = []
        for i in range(1, L + 1):  # by index: no iterator keeps block i alive while block i + 1 is read
            block = stack.blocks[i - 1]
            act_name = stack.block_activation(i - 1)
            Xi = x.reshape(N, M)
            if is_numpy(Xi):
                Xi.setflags(write=False)
            inputs.append(Xi)
            p = _layer_params(block, stack.kind, act_name, Xi, mask, f" in layer {i}",
                              Px_fn=lambda P, i=i: ev.input_core(i, P))
            core, Y, G, G4 = p.factors
            ops = {f"W'_{{{i},1}}": BoxOperator(core, Y), f"W'_{{{i},2}}": BoxOperator(core, G),
                   f"W'_{{{i},3}}": _op(p.W3)}
            vecs = {f"b'_{{{i},2}}": p.b2, f"b'_{{{i},3}}": p.b3}
            if gated:
                ops[f"W'_{{{i},4}}"] = BoxOperator(core, G4)
                vecs[f"b'_{{{i},4}}"] = p.b4
            ev.bind(i, ops, vecs, activation_function(act_name))
            if core is not None:
                ev.input_core(i, core)  # every product P_i v of this box in one batched application
            lin, bias, terms = ev.box_values(i)
            ev.release(i)  # streaming: box i's operators (its H_h) are not needed by later boxes
            del p, core, Y, G, G4, ops, block  # a streamed stack's block is freed before the next is read
            x = lin + bias
            for t in terms:
                x = x + t
            if on_box is not None:
                on_box(i, lin, bias, terms)
        if has_final:
            Lf, beta = norm_operator(x.reshape(N, M), stack.final_norm)
            final = {f"W'_{{{L + 1},1}}": Lf, f"b'_{{{L + 1},3}}": beta}
            ev.bind(L + 1, {f"W'_{{{L + 1},1}}": _op(Lf)}, {f"b'_{{{L + 1},3}}": beta})
            lin, bias, terms = ev.box_values(L + 1)
            if on_box is not None:
                on_box(L + 1, lin, bias, terms)
    total = lin + bias
    for t in terms:
        total = total + t
    form_terms = FormTerms(lin, bias, tuple(terms), total)
    return DUATForm(stack, X, ext.table, LayerParams(stack, tuple(inputs), mask), form_terms, ext, box0, final, mask)


def duat_relative_error(form: DUATForm) -> float:
    r"""``‖x'_out(DUAT) − x'_out(forward)‖ / ‖x'_out(forward)‖`` against the direct forward pass.

    The forward pass includes the final norm (:func:`~symuat.numeric.stack.stack_output`).
    """
    if form.backend != "numpy":  # the same quotient on the form's backend (torch)
        direct = stack_output(form.stack, form.X0, form.attention_mask).reshape(-1)
        xp = namespace(direct)
        num, den = xp.linalg.vector_norm(form.terms.total - direct), xp.linalg.vector_norm(direct)
        return float(num) / max(float(den), float(np.finfo(float).tiny))
    direct = vec_r(stack_output(form.stack, form.X0, form.attention_mask))
    return float(np.linalg.norm(form.terms.total - direct) / max(np.linalg.norm(direct), np.finfo(float).tiny))
