r"""Attributions over a batch of forms (issue 32): one exact attribution per form, and their mean signed shares.

``model.duat_form(text=[...])`` gives one form per row (over that row's real tokens); :func:`attributions` runs
``form.attribution(by, ...)`` on each (a rich progress bar on a terminal) and :func:`mean_shares` averages the signed
shares :math:`\langle t, x\rangle/\lVert x\rVert^2` of each part over the batch — each form's shares sum to 1, so the
means do too.  Parts are matched by name; a part missing from some form (a source token past a shorter row) is
averaged over the forms that have it and counted in ``counts``.
"""

from __future__ import annotations

from typing import Any, Dict, Sequence, Tuple

from ..errors import InvalidValueError
from ._bar import bar

__all__ = ["attributions", "mean_shares"]


def attributions(forms: Sequence[Any], by: str = "term", quiet: bool = False, **options: Any) -> Tuple[Any, ...]:
    r"""``form.attribution(by, **options)`` of every form of ``forms`` (a tuple from ``model.duat_form``, or one
    form), in order."""
    if hasattr(forms, "attribution"):
        forms = (forms,)
    forms = tuple(forms)
    if not forms or not all(hasattr(f, "attribution") for f in forms):
        raise InvalidValueError("attributions: forms must be a non-empty sequence of DUAT forms")
    out = []
    with bar(quiet, f"attribution by {by}", len(forms)) as step:
        for i, form in enumerate(forms):
            out.append(form.attribution(by, **options))
            step(f"form {i}")
    return tuple(out)


def mean_shares(results: Sequence[Any]) -> Tuple[Dict[str, float], Dict[str, int]]:
    r"""``(means, counts)``: each part's signed share averaged over the attributions that have it."""
    if not results:
        raise InvalidValueError("mean_shares: no attributions given")
    sums: Dict[str, float] = {}
    counts: Dict[str, int] = {}
    for a in results:
        for name, v in a.shares().items():
            sums[name] = sums.get(name, 0.0) + v
            counts[name] = counts.get(name, 0) + 1
    return {k: sums[k] / counts[k] for k in sums}, counts
