r"""Former home of the numeric input validators, now in :mod:`symuat.validation` (kept for imports)."""

from ..validation import as_finite_array, check_positive_dim, check_real_number, check_shape

__all__ = ["as_finite_array", "check_shape", "check_positive_dim", "check_real_number"]
