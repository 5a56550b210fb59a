r"""The DUAT form of a real Transformer stack (seed 001 Eq. 11 / Eq. 33), evaluated numerically.

For an input :math:`X_0`, every layer's Eq. 20 parameters are computed at the
layer's actual input (:func:`~symuat.numeric.residual_params.residual_params`,
structured operators, never an :math:`NM\times NM` matrix), bound to the symbols
of the *derived* substitution table (:func:`~symuat.expansion.substitution_table`),
and the table is evaluated term by term:

.. math::
    \mathbf x'_L = \tilde A_L\mathbf x'_0 + \tilde c_L
    + \sum_{j=1}^{L}\tilde U^{(L)}_j\,\sigma(\tilde V_j\mathbf x'_0 + \tilde\beta_j).

:func:`duat_relative_error` compares the result with the independent direct
forward pass :func:`~symuat.numeric.stack.forward`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidValueError, UnsupportedError
from ..expansion import FormTerms, SubstitutionTable, evaluate_form, layer_symbols, substitution_table
from .operators import unvec_r, vec_r
from .residual_params import ResidualParams, residual_params
from .stack import TransformerStack, activation_function, forward

__all__ = ["DUATForm", "duat_form", "duat_relative_error"]


@dataclass(frozen=True)
class DUATForm:
    r"""The Eq. 11 form of ``stack`` at input ``X0``: table, per-layer parameters and evaluated terms.

    Attributes
    ----------
    table : SubstitutionTable
        The derived substitution table of depth :math:`L` (symbolic).
    params : tuple of ResidualParams
        :math:`(W'_{i,1}, W'_{i,2}, W'_{i,3}, b'_{i,2}, b'_{i,3})` of each layer at its actual input.
    terms : FormTerms
        :math:`\tilde A_L x'_0`, :math:`\tilde c_L` and the :math:`L` sigma terms.
    """

    stack: TransformerStack
    X0: np.ndarray
    table: SubstitutionTable
    params: tuple[ResidualParams, ...]
    terms: FormTerms

    @property
    def depth(self) -> int:
        return self.table.depth

    @property
    def output(self) -> np.ndarray:
        """:math:`X_L` reshaped from :math:`\\mathbf x'_L` (row-major)."""
        N, M = self.X0.shape
        return unvec_r(self.terms.total, N, M)

    def parameter(self, name: str) -> Any:
        """The operator or vector bound to a layer symbol, e.g. ``"W'_{2,1}"``."""
        bindings = self.bindings()
        if name not in bindings:
            raise InvalidValueError(f"unknown parameter name {name!r}; expected one of {sorted(bindings)}")
        return bindings[name]

    def is_dynamic(self, name: str) -> bool:
        """Whether the layer parameter ``name`` depends on the input (block-kind rule, see ``DYNAMIC``)."""
        for i, p in enumerate(self.params, start=1):
            s = layer_symbols(i)
            for field, sym in (("W1", s.W1), ("W2", s.W2), ("W3", s.W3), ("b2", s.b2), ("b3", s.b3)):
                if sym.name == name:
                    return field in p.dynamic
        raise InvalidValueError(f"unknown parameter name {name!r}")

    def bindings(self) -> Mapping[str, Any]:
        out: dict[str, Any] = {"x'_{0}": vec_r(self.X0)}
        for i, p in enumerate(self.params, start=1):
            s = layer_symbols(i)
            out.update({s.W1.name: p.W1, s.W2.name: p.W2, s.W3.name: p.W3, s.b2.name: p.b2, s.b3.name: p.b3})
        return out


def duat_form(stack: TransformerStack, X0: Any, attention_mask: Any = None) -> DUATForm:
    """Compute every dynamic parameter of ``stack`` at ``X0`` and evaluate the derived Eq. 11 form."""
    if not isinstance(stack, TransformerStack):
        raise InvalidValueError(f"stack must be a TransformerStack, got {type(stack).__name__}")
    if (any(b.ffn.gated or b.ffn.activation not in (None, stack.activation) for b in stack.blocks)
            or stack.input_scale is not None or stack.position_embeddings is not None
            or stack.input_norm is not None or stack.final_norm is not None):
        raise UnsupportedError("duat_form: gated FFNs, per-block activations, input transforms and final norms "
                               "need the extended table (in progress)")
    params = tuple(residual_params(stack, X0, attention_mask))
    X0 = np.asarray(X0, dtype=float)
    table = substitution_table(len(params))
    partial = DUATForm(stack, X0, table, params, terms=None)  # type: ignore[arg-type]
    terms = evaluate_form(table, partial.bindings(), sigma=activation_function(stack.activation))
    return DUATForm(stack, X0, table, params, terms)


def duat_relative_error(form: DUATForm) -> float:
    r"""``‖x'_L(DUAT) − x'_L(forward)‖ / ‖x'_L(forward)‖`` against the direct forward pass."""
    direct = vec_r(forward(form.stack, form.X0)[-1])
    return float(np.linalg.norm(form.terms.total - direct) / max(np.linalg.norm(direct), np.finfo(float).tiny))
