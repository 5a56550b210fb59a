r"""What one audited record prints in the LaTeX document: its status cell and heading words, a mark per evidence
level, its counterexample in words and display math; and a shell command as ``\texttt`` text.

These are the filters of :func:`symuat.latex.render.environment`; they print, the templates only arrange.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

from ..evidence.verdict import Level
from ..ledger.audit import AuditRecord
from ..ledger.snapshot import claim_kind
from .display import LINE_BUDGET_PT, split_lines
from .escape import escape_text

__all__ = ["status_cell", "verdict_words", "level_marks", "format_counterexample", "command_text"]

#: Macro printed for a level whose checks all hold, all fail, partly hold (readings) or do not apply.
_MARKS = {"all": r"\yes", "none": r"\no", "some": r"\some", "n/a": r"\na", "undecided": r"\undecided"}
_SIDES = (("lhs", "left-hand side"), ("rhs", "right-hand side"), ("difference", "difference (left $-$ right)"))


def status_cell(record: AuditRecord) -> str:
    r"""The table's status: the *computed* one (``proved (grid n ≤ 2)``, ``refuted``, …), and the recorded one
    below it where they differ; LaTeX text."""
    cell = escape_text(record.computed_label)
    return cell if record.agrees else cell + r" \newline (recorded " + escape_text(record.entry.status.value) + ")"


def verdict_words(record: AuditRecord) -> str:
    """A statement's heading words: the computed status, and the recorded one where they differ."""
    words = escape_text(record.computed_status or "no status")
    return words if record.agrees else f"{words}, recorded {escape_text(record.entry.status.value)}"


def level_marks(record: AuditRecord) -> tuple[str, ...]:
    r"""One mark per evidence level (then one for the correction): ``\yes``, ``\no``, ``\some``, ``\na`` or
    ``\undecided``, relative to the statement *as printed*: for a denial ("… does not hold") the evidence is
    about the denied identity, so a level that refutes it confirms the denial (as in ``symuat audit``)."""
    denial = claim_kind(record.entry) == "denial"

    def mark(evidence, invert: bool = False) -> str:
        held = [ev.holds != invert for ev in evidence if ev.holds is not None]
        if evidence and not held:
            return _MARKS["undecided"]
        key = "n/a" if not held else "all" if all(held) else "none" if not any(held) else "some"
        return _MARKS[key]

    per_level = tuple(mark([ev for ev in record.evidence if ev.level is level], denial) for level in Level)
    return per_level + (mark(record.correction_evidence),)


def _sizes(value) -> str:
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return escape_text(value)
    if isinstance(value, Mapping):
        return "$" + ", ".join(f"{k}={v}" for k, v in value.items()) + "$"
    if isinstance(value, (list, tuple)):
        return "$(" + ",".join(str(v) for v in value) + ")$"
    return escape_text(str(value))


def format_counterexample(cx: Mapping | None) -> str:
    r"""A counterexample in words: where it lives, then both sides and their difference as display math.

    >>> print(format_counterexample({"dims": "{'m': 2}", "entry": "[1, 1]", "lhs": "a", "rhs": "b",
    ...                              "difference": "a - b"}))
    At sizes $m=2$, entry $(1,1)$:
    \begin{align*}
    \text{left-hand side:}\quad & a\\
    \text{right-hand side:}\quad & b\\
    \text{difference (left $-$ right):}\quad & a - b
    \end{align*}
    """
    if not cx:
        return "none recorded."
    if "refuted_by" in cx:
        proof = escape_text(str(cx.get("proof", ""))).rstrip(".")
        return f"The paper denies this identity, but it holds: {proof}."
    where = []
    if "reading" in cx:
        where.append(f"reading \\emph{{{escape_text(str(cx['reading']))}}}")
    if "case" in cx:
        case = str(cx["case"])
        where.append(f"depth $L={case}$" if case.isdigit() else "general depth $i$")
    if "dims" in cx:
        where.append(f"sizes {_sizes(cx['dims'])}")
    if "entry" in cx:
        where.append(f"entry {_sizes(cx['entry'])}")
    head = ("At " + ", ".join(where) + ":") if where else "Counterexample:"
    if "reason" in cx:
        reason = re.sub(r" at dims \{.*\}$", "", str(cx["reason"]))
        return f"{head} {escape_text(reason)}."
    rows = []
    for key, words in _SIDES:
        if key in cx:
            for n, line in enumerate(split_lines(str(cx[key]), LINE_BUDGET_PT - 80.0)):
                rows.append((rf"\text{{{words}:}}\quad & " if n == 0 else r"&\qquad ") + line)
    if not rows:
        return head
    return head + "\n\\begin{align*}\n" + "\\\\\n".join(rows) + "\n\\end{align*}"


def command_text(command: str) -> str:
    r"""A shell command as LaTeX text for ``\texttt``: ``--`` stays two hyphens (no en-dash ligature).

    >>> command_text("symuat audit --derivations my_paper")
    'symuat audit -{}-derivations my\\_paper'
    """
    return escape_text(command).replace("--", "-{}-")
