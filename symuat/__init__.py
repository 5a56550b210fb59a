r"""symuat: machine-checked audit of the Dynamic Universal Approximation Theory paper.

The public API, grouped as the architecture: symbolic algebra → layers →
DUAT expansion → evidence → ledger.  Two subpackages are public too:
:mod:`symuat.expansion` (the substitution-table engine), :mod:`symuat.numeric`
(structured NumPy operators and Transformer stacks, e.g. :func:`symuat.numeric.duat_form`) and
:mod:`symuat.analysis` (attribution, the held network, interventions, views, export and plots of a form).
"""

import importlib as _importlib
import os as _os

# SymPy keeps the last 1000 results of its cached constructors (SYMPY_CACHE_SIZE, read when SymPy is first
# imported); the layers' builders repeat many more sub-expressions, and a cold audit is about 15 % faster with
# 20000 for about 12 MB.  Set only when symuat is imported before SymPy, and never over a value of yours.
_os.environ.setdefault("SYMPY_CACHE_SIZE", "20000")

# registers the all-sizes evidence level
from . import allsizes  # noqa: E402, F401
from .algebra.diamond import CHAIN_READINGS, DiamondReading, chain, diamond
from .algebra.matrices import identity_matrix, kron, ones, symbolic_matrix, symbolic_vector, unvec_r, vec_r
from .errors import (
    ArgumentTypeError,
    DerivationError,
    InvalidValueError,
    LedgerError,
    OutOfMemoryError,
    OutputError,
    ShapeError,
    SymuatError,
    UnsupportedError,
)
from .evidence.fields import SIGMA
from .evidence.identity import Identity, dims_grid
from .evidence.opaque import OpaqueIdentity
from .evidence.pipeline import check_identity
from .evidence.protocol import InstanceCache
from .evidence.verdict import Evidence, Level, Verdict
from .expansion import (
    closed_forms,
    induction_proof,
    nested_form,
    residual_term,
    substitution_table,
    verify_depth,
)
from .layers.attention import (
    MultiHeadAttention,
    PaperMultiHeadAttention,
    attention_matrix,
    row_stochastic_matrix,
    softmax,
    split_columns,
)
from .layers.layernorm import LayerNorm
from .layers.linear import FFN, FeatureLinear, MatrixVectorForm, TokenLinear
from .ledger.audit import AuditRecord, audit, audit_entry, ledger_json, summary
from .ledger.entry import CoqLink, Correction, Denial, Entry, Prose, Readings, Source, Status
from .ledger.registry import load_entries
from .ledger.sources import Origin, Paper, origin, origins, paper, papers, register_source
from .ledger.steps import Expr, Step, StepTable, bind
from .numeric.analyses import add_loader as _add_loader


def _load_analysis():
    """Import :mod:`symuat.analysis`, which registers the analyses of a DUAT form (``form.attribution(...)``, …)."""
    return _importlib.import_module(f"{__name__}.analysis")


_add_loader(_load_analysis)  # on first use: ``import symuat`` and the CLI's audit need none of it


def __getattr__(name):
    """``symuat.analysis`` on first access (PEP 562)."""
    if name == "analysis":
        return _load_analysis()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    # algebra
    "vec_r", "unvec_r", "kron", "identity_matrix", "ones", "symbolic_matrix", "symbolic_vector",
    "diamond", "chain", "DiamondReading", "CHAIN_READINGS", "SIGMA",
    # layers
    "TokenLinear", "FeatureLinear", "FFN", "MatrixVectorForm",
    "MultiHeadAttention", "PaperMultiHeadAttention", "split_columns", "row_stochastic_matrix",
    "softmax", "attention_matrix", "LayerNorm",
    # DUAT expansion (seed 001 App. B)
    "residual_term", "nested_form", "substitution_table", "closed_forms", "induction_proof", "verify_depth",
    # evidence
    "Identity", "OpaqueIdentity", "check_identity", "dims_grid", "InstanceCache", "Evidence", "Level", "Verdict",
    # ledger
    "Entry", "Source", "Status", "Readings", "Denial", "Prose", "Correction", "CoqLink",
    "Expr", "Step", "StepTable", "bind",
    "Paper", "Origin", "register_source", "origin", "origins", "paper", "papers",
    "load_entries", "audit", "audit_entry", "AuditRecord", "ledger_json", "summary",
    # errors
    "SymuatError", "ShapeError", "InvalidValueError", "ArgumentTypeError", "UnsupportedError", "DerivationError",
    "LedgerError", "OutputError", "OutOfMemoryError",
]

__version__ = "0.1.0"
