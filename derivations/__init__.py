"""Derivation modules: one per paper derivation, each contributing ledger entries via ``entries()``."""
