r"""Symbolic DUAT expansion engine (seed 001, App. B.2-B.3, Eq. 11 / 20-27 / 33-34, Figure 2).

A depth-:math:`L` stack of residual terms (Eq. 20) with opaque, possibly
input-dependent weights is expanded into the DUAT form

.. math::
    \mathbf x'_L = \tilde A_L\mathbf x'_0 + \tilde c_L
    + \sum_{j=1}^{L}\tilde U^{(L)}_j\,\sigma(\tilde V_j\mathbf x'_0 + \tilde\beta_j)

via a mechanically derived substitution table of named, shared
sub-expressions (:func:`substitution_table`), proved by induction
(:func:`induction_proof`), checked locally at explicit depths
(:func:`verify_depth`) and evaluated numerically with matrix-free operators
(:func:`evaluate_form`).
"""

from .blocks import LAYOUTS, block_eq20, block_symbols, block_term, dynamic_from_symbols
from .collect import AffineParts, canonical_expand, split_affine, split_term
from .evaluate import FormTerms, TableEvaluator, evaluate_form
from .extended import (
    INPUT_TRANSFORM,
    ExtendedTable,
    P_name,
    affine_term,
    derive_table,
    encode_gate,
    gamma_name,
    gate,
    gated_residual_term,
    gated_symbols,
    is_gate,
    plain_residual_term,
)
from .extended_proof import ExtendedInduction, extended_induction
from .moe import derive_moe_table, expert_symbols, moe_application, moe_induction, moe_residual_term
from .paths import (
    KRON_SEPARATOR,
    KronPair,
    Path,
    PathTerm,
    attention_symbol,
    count_paths,
    encode_kron,
    extension_pairs,
    kron_multiply,
    layer_factor,
    mixed_product,
    ov_symbol,
    path_expansion,
    virtual_heads,
)
from .proof import (
    DepthVerification,
    IdentityCheck,
    InductionProof,
    LayerCheck,
    induction_proof,
    verify_depth,
    verify_depth_naive,
    verify_table,
)
from .residual import nested_form, residual_term
from .symbols import INPUT, LayerSymbols, layer_symbols, nc_symbol, sigma
from .table import (
    A_name,
    ClosedForm,
    R_name,
    SubstitutionTable,
    TableRow,
    U_name,
    V_name,
    beta_name,
    c_name,
    closed_forms,
    substitution_table,
)

__all__ = [
    "INPUT",
    "sigma",
    "nc_symbol",
    "LayerSymbols",
    "layer_symbols",
    "residual_term",
    "nested_form",
    "A_name",
    "c_name",
    "U_name",
    "V_name",
    "beta_name",
    "R_name",
    "TableRow",
    "SubstitutionTable",
    "substitution_table",
    "ClosedForm",
    "closed_forms",
    "AffineParts",
    "canonical_expand",
    "split_term",
    "split_affine",
    "IdentityCheck",
    "InductionProof",
    "LayerCheck",
    "DepthVerification",
    "induction_proof",
    "verify_table",
    "verify_depth",
    "verify_depth_naive",
    "FormTerms",
    "TableEvaluator",
    "evaluate_form",
    # path expansion (virtual attention heads)
    "Path",
    "PathTerm",
    "KronPair",
    "KRON_SEPARATOR",
    "attention_symbol",
    "ov_symbol",
    "layer_factor",
    "mixed_product",
    "kron_multiply",
    "encode_kron",
    "extension_pairs",
    "path_expansion",
    "virtual_heads",
    "count_paths",
    # beyond the paper: gated FFNs, block layouts, input and final boxes
    "gate", "is_gate", "P_name", "gamma_name", "gated_symbols", "gated_residual_term", "plain_residual_term",
    "affine_term", "INPUT_TRANSFORM", "ExtendedTable", "derive_table", "encode_gate", "ExtendedInduction",
    "extended_induction", "LAYOUTS", "block_symbols", "block_term", "block_eq20", "dynamic_from_symbols",
    # mixture of experts: one term family per expert
    "expert_symbols", "moe_residual_term", "moe_application", "derive_moe_table", "moe_induction",
]
