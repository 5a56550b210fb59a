r"""Memory: what a DUAT evaluation needs, and a :class:`MemoryError` turned into a symuat error that says so.

:func:`form_bytes` estimates the peak working memory of :func:`~symuat.numeric.duat_form` beyond the
weights: one layer's attention matrices :math:`H_h` (:math:`HN^2`, twice: scores and probabilities), the FFN's
hidden activations (:math:`NF`, four arrays for a gated FFN) and :math:`L+6` vectors of length :math:`NM`
(the carried terms of the table and the layer input), all float64.
"""

from __future__ import annotations

from typing import Any

from ..errors import OutOfMemoryError

__all__ = ["form_bytes", "format_bytes", "out_of_memory"]


def format_bytes(n: float) -> str:
    """``n`` bytes in binary units.

    >>> format_bytes(3 * 2**30), format_bytes(512)
    ('3.0 GiB', '512 B')
    """
    for unit, size in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def form_bytes(stack: Any, tokens: int) -> int:
    r"""Estimated peak bytes of one :func:`~symuat.numeric.duat_form` evaluation at ``tokens`` tokens (module doc)."""
    N, M, L = int(tokens), stack.width, stack.depth
    heads = max(b.attention.n_heads for b in stack.blocks)
    hidden = max(b.ffn.hidden for b in stack.blocks)
    gated = any(b.ffn.gated for b in stack.blocks)
    return 8 * (2 * heads * N * N + (4 if gated else 2) * N * hidden + (L + 6) * N * M)


def out_of_memory(exc: BaseException, what: str, needed: int) -> OutOfMemoryError:
    r"""An :class:`OutOfMemoryError` for ``exc`` raised while doing ``what``, stating the estimate ``needed``."""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else "MemoryError"
    return OutOfMemoryError(f"out of memory {what}: about {format_bytes(needed)} needed ({detail})")
