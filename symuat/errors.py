r"""Exceptions raised by symuat.

Policy: every error a user can trigger (bad shapes, bad values, a malformed
derivation module, an unwritable output path) is a :class:`SymuatError`.
Subclasses also derive from the matching builtin so that ``except ValueError``
keeps working.  Messages name the offending argument, its value and what was
expected.
"""

from __future__ import annotations

__all__ = [
    "SymuatError",
    "ShapeError",
    "InvalidValueError",
    "ArgumentTypeError",
    "UnsupportedError",
    "DerivationError",
    "LedgerError",
    "OutputError",
    "OutOfMemoryError",
]


class SymuatError(Exception):
    """Base class of every error symuat raises on purpose."""


class ShapeError(SymuatError, ValueError):
    """Shapes that do not fit, a dimension <= 0, heads not dividing the width."""


class InvalidValueError(SymuatError, ValueError):
    """A value that is not allowed: NaN/inf weights, an unknown name, depth < 1."""


class ArgumentTypeError(SymuatError, TypeError):
    """An argument of the wrong type: a tuple of ints where dicts are expected, a non-callable builder."""


class UnsupportedError(SymuatError, NotImplementedError):
    """A request symuat recognises but does not implement."""


class DerivationError(SymuatError):
    """A derivation module that fails to import, raises, or returns malformed entries."""


class LedgerError(SymuatError):
    """An inconsistent ledger: unknown status, duplicate id, malformed entry id."""


class OutputError(SymuatError, OSError):
    """An output path that cannot be written."""


class OutOfMemoryError(SymuatError, MemoryError):
    """An evaluation that does not fit in memory; the message says how much it needed."""
