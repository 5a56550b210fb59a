r"""The float64 level and its tolerance model, the same for every kind of claim.

The derived side (``rhs``) is evaluated in float64 with the logistic σ and compared,
entry by entry, with the claim's independent NumPy ``reference`` (or with ``lhs``).
Entry :math:`i` passes when

.. math:: |\text{derived}_i - \text{reference}_i| \le 8\,n\,\varepsilon\,m_i + \text{tiny},

where :math:`n` counts entries plus scalar inputs, :math:`\varepsilon` is the machine
epsilon of the reference's dtype (float32 references are only float32-accurate), and
:math:`m_i` is the larger of the entry's magnitude bound (every input and constant
replaced by its absolute value, :func:`~symuat.evidence.fields.magnitude`) and, for
polynomial entries of explicit-matrix identities, the same bound with every input as large
as the largest one (their hand-written references may form and cancel intermediates the
derived side never shows; the references of opaque claims are forward passes, and for deep
opaque tables that floor would exceed the values by orders of magnitude and hide mutations).  When
float64 overflows at the drawn point the inputs are scaled towards 0 and redrawn: a
true identity holds at every point.  Where float64 still cannot decide (an overflow at every scale, a function
it lacks, an entry above the tolerance), both sides are enclosed with mpmath interval arithmetic at the point:
disjoint enclosures refute with that point as the witness, enclosures that agree within the working precision
confirm, anything else is ``undecided`` — never a refutation without a witness.  An entry whose symbolic
magnitude is 0 (its sides cancel exactly) gets
the largest input or reference entry as its magnitude instead.  A reference that returns complex or
non-numeric values, or NaN/infinite entries where the derived side is finite, is refused (an
:class:`~symuat.errors.InvalidValueError`, reported by the audit as the entry's DerivationError).
See ``docs/evidence.md``.
"""

from __future__ import annotations

import mpmath
import numpy as np

from ..errors import InvalidValueError, ShapeError, UnsupportedError
from .fields import RealField
from .interval import disjoint
from .levels import Run, entry_label, instance_at, register_level, shape_failure, size_witness
from .protocol import Claim, Instance
from .verdict import Evidence, Level

__all__ = ["FLOAT_SAFETY", "SHRINK", "PRECISIONS", "float_level", "tolerance"]

#: Rounding-error safety factor in the float64 tolerance ``FLOAT_SAFETY * n * eps * magnitude``.
FLOAT_SAFETY = 8.0

#: Input scales tried by the float level when float64 overflows at the drawn point.
SHRINK = (1.0, 2.0 ** -4, 2.0 ** -8, 2.0 ** -16)


def tolerance(n_ops: int, mags: np.ndarray, ref_eps: float = 0.0) -> np.ndarray:
    r"""Per-entry tolerance :math:`8 n \varepsilon m_i + \text{tiny}`.

    >>> bool(tolerance(10, np.array([1.0]))[0] == 8 * 10 * np.finfo(float).eps + np.finfo(float).tiny)
    True
    """
    eps = max(np.finfo(float).eps, ref_eps)
    tiny = np.finfo(np.float32 if ref_eps >= np.finfo(np.float32).eps else float).tiny
    return FLOAT_SAFETY * n_ops * eps * mags + tiny


def _reference_runs_elsewhere(inst: Instance, fld: RealField, seed: int, tries: int = 3) -> bool:
    """Whether the reference runs at another random point (a float underflow at an extreme draw), or fails at every
    point (the claim's own code is broken)."""
    for k in range(1, tries + 1):
        try:
            inst.reference(inst.bind(fld, np.random.default_rng([seed, 7, k])))
            return True
        except (UnsupportedError, ZeroDivisionError, OverflowError):
            continue
    return False


class _ReferenceRaised(Exception):
    """The claim's reference function raised: its exception propagates (the audit names the entry), never read as
    a float64 overflow or a function float64 lacks."""


def _compare_at(inst: Instance, values, fld: RealField):
    """Derived side, reference, magnitudes, the reference's precision and its description at one point."""
    memo: dict = {}
    got = np.asarray(inst.side("rhs", values, fld, memo), dtype=float)
    ref_eps = 0.0
    try:
        raw = inst.reference(values)
    except (UnsupportedError, ZeroDivisionError) as exc:  # the claim's own code failed: not a float64 fact
        raise _ReferenceRaised() from exc  # (an OverflowError is float64's: the inputs are scaled down and retried)
    if raw is not None:
        raw = np.asarray(raw)
        if not (np.issubdtype(raw.dtype, np.floating) or np.issubdtype(raw.dtype, np.integer)
                or raw.dtype == np.bool_):
            raise InvalidValueError(f"the reference returned {raw.dtype} values at {inst.where}; a float reference "
                                    "must be real (a complex or non-numeric result is never cast to real)")
        if np.issubdtype(raw.dtype, np.floating):  # a float32 reference is only float32-accurate
            ref_eps = float(np.finfo(raw.dtype).eps)
        want = raw.astype(float).reshape(-1)
        source = "an independent NumPy implementation"
    else:
        want = np.asarray(inst.side("lhs", values, fld, memo), dtype=float)
        source = "the left-hand side"
    if want.size != got.size:
        return got, None, want.size, ref_eps, source
    return got, want, inst.magnitudes(values), ref_eps, source


def _floor(values, want: np.ndarray) -> float:
    r"""The magnitude of an entry whose symbolic magnitude is 0 (its sides cancel exactly, e.g. :math:`C_M 1 x`):
    the largest input or reference entry, since the reference still rounds the terms it cancels."""
    inputs = [float(np.max(np.abs(np.asarray(v, dtype=float)))) for v in values.values() if np.size(v)]
    return max([*inputs, float(np.max(np.abs(want))) if want.size else 0.0])


#: Working precisions (bits) of the interval fallback, tried in turn.
PRECISIONS = (128, 512)


def _interval(inst: Instance, values) -> tuple[str, int, object]:
    """Both sides enclosed entrywise by mpmath intervals at ``values`` (exact floats): ``("differ", i, witness)``,
    ``("agree", prec, None)`` (every pair overlaps within the working precision) or ``("undecided", 0, reason)``."""
    reason = "the enclosures are too wide"
    for prec in PRECISIONS:
        try:
            lhs, rhs = inst.enclosures(values, prec)
        except UnsupportedError as exc:
            return "undecided", 0, str(exc)
        except AttributeError:
            return "undecided", 0, "this kind of claim has no interval evaluation"
        for i, (a, b) in enumerate(zip(lhs, rhs)):
            if disjoint(a, b):
                return "differ", i, inst.real_witness(i, a, b, values, prec)
        tol = mpmath.mpf(2) ** (-(prec // 2))
        if all(_width(a, b) <= tol * (1 + abs(mpmath.mpf(a.a))) for a, b in zip(lhs, rhs)):
            return "agree", prec, None
    return "undecided", 0, reason


def _width(a, b):
    """The width of the hull of two overlapping intervals, as an mpmath number (at the enclosures' precision)."""
    with mpmath.workprec(PRECISIONS[-1]):
        lo = min(mpmath.mpf(a.a), mpmath.mpf(b.a))
        hi = max(mpmath.mpf(a.b), mpmath.mpf(b.b))
        return hi - lo


def _fallback(inst: Instance, values, why: str, seed: int) -> Evidence:
    """float64 could not decide (``why``): both sides in mpmath interval arithmetic at the unscaled point."""
    outcome, at, extra = _interval(inst, values)
    if outcome == "differ":
        label, entry = entry_label(inst, at)
        return Evidence(Level.FLOAT, False, f"{label} differs at {inst.where} (seed {seed}): {why}; mpmath intervals: "
                                            f"{extra.text}", {**inst.point, "seed": seed, "entry": entry},
                            witness=extra)
    if outcome == "agree":
        return Evidence(Level.FLOAT, True, f"at {inst.where} (seed {seed}) {why}; mpmath interval arithmetic at {at} "
                                           f"bits: both sides agree within 2^-{at // 2} relative, entry by entry")
    return Evidence(Level.FLOAT, None, f"undecided: {why} at {inst.where} (seed {seed}), and mpmath intervals cannot "
                                       f"decide ({extra})")


@register_level(Level.FLOAT)
def float_level(claim: Claim, run: Run) -> Evidence:
    """The derived side against the reference in float64, within :func:`tolerance`; where float64 cannot decide
    (overflow, a function it lacks, a difference above the tolerance), mpmath intervals decide, or ``undecided``."""
    point = claim.check_point
    try:
        inst = instance_at(claim, point, run)
    except ShapeError as exc:
        return shape_failure(Level.FLOAT, exc, point)
    fld = RealField()
    values = inst.bind(fld, np.random.default_rng([run.seed, 7]))
    failed = None  # the reference's own error at every scale so far
    for shrink in _shrinks(claim):
        scaled = {s: v * shrink for s, v in values.items()}
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            try:
                got, want, mags, ref_eps, source = _compare_at(inst, scaled, fld)
            except _ReferenceRaised as exc:  # e.g. a float underflow to 0 in a quotient: try smaller inputs
                failed = exc.__cause__
                continue
            except OverflowError:
                continue
            except (UnsupportedError, ZeroDivisionError) as exc:
                return _fallback(inst, values, f"float64 cannot evaluate it ({exc})", run.seed)
        if want is None:
            return Evidence(Level.FLOAT, False, f"reference has {mags} entries, derived side {got.size}",
                            {**inst.point, "reason": "size mismatch"}, witness=size_witness(inst, mags, got.size))
        if np.all(np.isfinite(got)) and np.all(np.isfinite(want)) and np.all(np.isfinite(mags)):
            break
        if np.all(np.isfinite(got)) and np.all(np.isfinite(mags)) and source != "the left-hand side":
            raise InvalidValueError(f"the reference returned NaN or infinite entries at {inst.where} (seed "
                                    f"{run.seed}) where the derived side is finite")
    else:
        if failed is not None:  # the reference raised at every scale
            if not _reference_runs_elsewhere(inst, fld, run.seed):
                raise failed  # at every point tried: the claim's own code fails (the audit names the entry)
            return _fallback(inst, values, f"the reference cannot be evaluated at this point in float64 "
                                           f"({type(failed).__name__}: {failed}; it can at other points)", run.seed)
        return _fallback(inst, values, f"float64 overflows even with inputs scaled by {SHRINK[-1]:g}", run.seed)
    mags = np.where(mags > 0, mags, _floor(scaled, want))
    tol = tolerance(got.size + inst.input_count(), mags, ref_eps)
    if shrink != 1:
        source += f" (inputs scaled by {shrink:g} to avoid float64 overflow)"
    err = np.abs(got - want)
    bad = np.flatnonzero(~(err <= tol))
    if bad.size:
        i = int(bad[0])
        label, entry = entry_label(inst, i)
        detail = (f"{label} differs from {source} by {err[i]:.3e} > tolerance {tol[i]:.3e} at {inst.where} "
                  f"(seed {run.seed})")
        outcome, at, extra = _interval(inst, scaled)
        if outcome == "differ":
            return Evidence(Level.FLOAT, False, detail,
                            {**inst.point, "seed": run.seed, "entry": entry, "derived": float(got[i]),
                             "reference": float(want[i]), "tolerance": float(tol[i])},
                            witness=extra)
        if outcome == "agree" and source.startswith("the left-hand side"):
            return Evidence(Level.FLOAT, True, f"{detail}, but mpmath interval arithmetic at {at} bits finds both "
                                               f"sides equal within 2^-{at // 2} relative: float64 rounding")
        why = ("both sides agree in mpmath intervals: the reference rounds more than the tolerance allows, or "
               "computes something else" if outcome == "agree" else f"mpmath intervals cannot decide ({extra})")
        return Evidence(Level.FLOAT, None, f"undecided: {detail}; {why}")
    rel = float(np.max(err / np.maximum(mags, np.finfo(float).tiny))) if err.size else 0.0
    return Evidence(
        Level.FLOAT, True,
        f"float64 at {inst.where} (seed {run.seed}) agrees with {source}: max error/magnitude {rel:.1e}, "
        f"tolerance {FLOAT_SAFETY:g}*n*eps*magnitude"
        + (f" with the reference's eps = {ref_eps:.1e}" if ref_eps > np.finfo(float).eps else ""),
    )


def _shrinks(claim) -> tuple[float, ...]:
    """Input scales tried against overflow; none for a claim with integer variables (scaling leaves them)."""
    hyp = getattr(claim, "hypotheses", None)
    return SHRINK if hyp is None or not hyp.integers else SHRINK[:1]
