r"""Memory: what a DUAT evaluation needs, and a :class:`MemoryError` turned into a symuat error that says so.

:func:`form_bytes` estimates the peak working memory of :func:`~symuat.numeric.duat_form` beyond the
weights: one layer's attention matrices :math:`H_h` and their scores (:math:`2HN^2`; :math:`3N^2` when they are
computed one head at a time inside the operator, :func:`lazy_heads`), the FFN's hidden arrays
(:math:`4NF`) and :math:`5(L+8)` arrays of :math:`NM` (each layer's input, its term and the streaming table's
carried vectors), all float64.  Fitted as an upper bound of the traced peak (``tracemalloc``) on random stacks
of 2–6 layers, widths 64–384, N = 64–512, plain and gated: the traced peak is 0.6–0.8 of it.

:func:`available_bytes` is the memory available *now* (``MemAvailable`` of ``/proc/meminfo``, the kernel's estimate
that ``psutil.virtual_memory().available`` also reports; elsewhere the free pages), capped by the environment variable
``SYMUAT_MEMORY_LIMIT`` (bytes, or a number with ``K``, ``M``, ``G`` or ``T``: ``SYMUAT_MEMORY_LIMIT=4G``), a budget
a user can set for symuat on a shared machine.  :func:`check_memory` refuses a computation whose estimate exceeds
it, with both numbers, *before* anything is allocated: the kernel never has to kill the process.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any, Tuple

from ..errors import InvalidValueError, OutOfMemoryError

__all__ = ["HEADS_BUDGET", "lazy_heads",
           "form_bytes", "format_bytes", "out_of_memory", "available_bytes", "check_memory", "LIMIT_VARIABLE"]

#: the environment variable that caps the memory symuat plans with
LIMIT_VARIABLE = "SYMUAT_MEMORY_LIMIT"
_UNITS = {"": 1, "K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}


def format_bytes(n: float) -> str:
    """``n`` bytes in binary units.

    >>> format_bytes(3 * 2**30), format_bytes(512)
    ('3.0 GiB', '512 B')
    """
    for unit, size in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


#: One layer's attention matrices (:math:`HN^2` float64) above this many bytes are computed inside each application
#: of the attention operator, one head at a time, instead of being held (issue 30;
#: :class:`~symuat.numeric.mha_operator.LazyMHAOperator`).
HEADS_BUDGET = 2 ** 30


def lazy_heads(n_heads: int, tokens: int) -> bool:
    """Whether one layer's ``n_heads`` attention matrices at ``tokens`` tokens exceed :data:`HEADS_BUDGET`.

    >>> lazy_heads(16, 2048), lazy_heads(16, 4096)
    (False, True)
    """
    return 8 * n_heads * tokens * tokens > HEADS_BUDGET


def form_bytes(stack: Any, tokens: int) -> int:
    r"""Estimated peak bytes of one :func:`~symuat.numeric.duat_form` evaluation at ``tokens`` tokens (module doc;
    with lazy heads, :func:`lazy_heads`, one head's matrix and its scores instead of the layer's)."""
    N, M, L = int(tokens), stack.width, stack.depth
    _, heads, hidden = stack.blocks_shape()
    held = 3 if lazy_heads(heads, N) else 2 * heads
    return 8 * (held * N * N + 4 * N * hidden + 5 * (L + 8) * N * M)


def out_of_memory(exc: BaseException, what: str, needed: int) -> OutOfMemoryError:
    r"""An :class:`OutOfMemoryError` for ``exc`` raised while doing ``what``, stating the estimate ``needed``."""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else "MemoryError"
    return OutOfMemoryError(f"out of memory {what}: about {format_bytes(needed)} needed ({detail})")


def _limit() -> Any:
    raw = os.environ.get(LIMIT_VARIABLE, "").strip()
    if not raw:
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?", raw, flags=re.IGNORECASE)
    if m is None or float(m.group(1)) <= 0:
        raise InvalidValueError(f"{LIMIT_VARIABLE}={raw!r}: expected a positive number of bytes, optionally with K, "
                                "M, G or T (e.g. 4G)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


#: set while this thread reads the kernel's memory figures (:func:`probing`)
_PROBE = threading.local()


def probing() -> bool:
    r"""Whether this thread is reading the memory available now.

    Such a read is a probe, never a source of a result: a computation it refuses raises :class:`OutOfMemoryError`,
    which no evidence level catches (an audit that meets one stops), and a computation it lets run does not see the
    number.  The audit's read tracking (:mod:`symuat.ledger.reads`) therefore skips it; a derivation that reads
    ``/proc/meminfo`` itself is still live kernel state, and its audit is not cached.
    """
    return getattr(_PROBE, "active", False)


def _system_available() -> Tuple[int, str]:
    _PROBE.active = True
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "available now"
    except OSError:  # pragma: no cover - not Linux
        pass
    finally:
        _PROBE.active = False
    try:  # pragma: no cover - no /proc
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_AVPHYS_PAGES")), "free now"
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return 2 ** 62, "available (unknown)"


def available_bytes() -> Tuple[int, str]:
    """``(bytes, how)``: the memory available now, or ``SYMUAT_MEMORY_LIMIT`` when that is smaller (module doc).

    >>> n, how = available_bytes(); n > 0
    True
    """
    n, how = _system_available()
    cap = _limit()
    if cap is not None and cap < n:
        return cap, f"allowed by {LIMIT_VARIABLE}"
    return n, how


def check_memory(needed: int, what: str, hint: str = "") -> int:
    """Refuse ``what`` with an :class:`OutOfMemoryError` stating both numbers when ``needed`` bytes exceed
    :func:`available_bytes`; returns the bytes available otherwise.

    >>> check_memory(1024, "a tiny step") > 1024
    True
    """
    avail, how = available_bytes()
    if needed > avail:
        raise OutOfMemoryError(f"out of memory {what}: about {format_bytes(needed)} needed, {format_bytes(avail)} "
                               f"{how}" + (f"; {hint}" if hint else ""))
    return avail
