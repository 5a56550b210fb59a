r"""The signal that a statement lies outside the fragment the all-sizes level decides."""

from __future__ import annotations

from ..errors import UnsupportedError

__all__ = ["OutsideFragment"]


class OutsideFragment(UnsupportedError):
    """Raised while tracing or normalising; the verdict becomes "outside the fragment: <reason>"."""
