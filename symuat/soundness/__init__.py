r"""Soundness measurements: does the checker reject what is false?

:mod:`symuat.soundness.mutants` corrupts proved statements systematically;
:mod:`symuat.soundness.kill_rate` runs every evidence level on the corruptions
and reports, per level, the fraction rejected ("kill rate"), the mutants that
are accidentally equivalent, and any true statement a level wrongly rejects.
"""

from .kill_rate import (
    KillReport,
    LevelCount,
    Outcome,
    assess,
    assess_table,
    kill_rates,
    ledger_mutants,
    true_statement_sweep,
)
from .mutants import OPERATORS, Mutant, expr_sites, identity_mutants, mutate_expr, opaque_mutants, table_mutants

__all__ = [
    # mutants
    "OPERATORS", "Mutant", "identity_mutants", "opaque_mutants", "table_mutants", "mutate_expr", "expr_sites",
    # kill rates
    "Outcome", "LevelCount", "KillReport", "assess", "assess_table", "ledger_mutants", "kill_rates",
    "true_statement_sweep",
]
