r"""Rank the parts of a sweep across its prompts (``symuat summary OUT``).

For each part :math:`p` over the rows with status ``ok`` that list it: the number of rows, the mean contribution
:math:`\bar z^{(p)}`, the mean magnitude :math:`\overline{|z^{(p)}|}` and the largest magnitude.  Parts are ranked
by mean magnitude.  In a patching sweep (rows with a ``corrupted_value``) a part's number is its patch's effect on
the target, :math:`z^{(p)} - z_\text{corrupted}`.  (With ``--top K`` a row lists only its K largest parts: a part
missing from a row counts 0 there in the means, and ``rows`` says in how many rows it was listed.)

The same from the dataset in one pyarrow/pandas line::

    pd.read_parquet("OUT/data").query("status == 'ok'").explode(["parts", "values"]).groupby("parts")["values"]
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidValueError

__all__ = ["PartRank", "summary", "summary_text"]


@dataclass(frozen=True)
class PartRank:
    """One part's statistics across the ``ok`` rows of a sweep (module docstring)."""

    part: str
    rows: int
    mean: float
    mean_abs: float
    max_abs: float


def summary(out: Any, top: int = 20) -> tuple[tuple[PartRank, ...], dict]:
    """The ``top`` parts by mean magnitude, and the row counts by status."""
    import pyarrow.parquet as pq

    data = Path(out) / "data"
    files = sorted(data.glob("part-*.parquet")) if data.is_dir() else []
    if not files:
        raise InvalidValueError(f"{str(out)!r} holds no finished sweep (no {str(data)}/part-*.parquet)")
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise InvalidValueError(f"top must be an integer >= 1, got {top!r}")
    rows = [r for f in files
            for r in pq.read_table(f, columns=["status", "parts", "values", "corrupted_value"]).to_pylist()]
    counts: dict = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    ok = [r for r in rows if r["status"] == "ok"]
    stats: dict = {}
    for r in ok:
        base = r["corrupted_value"] or 0.0  # a patching sweep ranks each patch's effect
        for part, value in zip(r["parts"], r["values"]):
            value -= base
            n, s, a, m = stats.get(part, (0, 0.0, 0.0, 0.0))
            stats[part] = (n + 1, s + value, a + abs(value), max(m, abs(value)))
    total = max(len(ok), 1)
    ranked = sorted((PartRank(p, n, s / total, a / total, m) for p, (n, s, a, m) in stats.items()),
                    key=lambda r: (-r.mean_abs, r.part))
    return tuple(ranked[:top]), counts


def summary_text(out: Any, top: int = 20) -> str:
    """The ranking as an aligned text table."""
    ranked, counts = summary(out, top)
    lines = [f"{sum(counts.values())} rows: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
             f"{'part':<16} {'rows':>6} {'mean':>12} {'mean |.|':>12} {'max |.|':>12}"]
    lines += [f"{r.part:<16} {r.rows:>6} {r.mean:>12.4g} {r.mean_abs:>12.4g} {r.max_abs:>12.4g}" for r in ranked]
    return "\n".join(lines)
