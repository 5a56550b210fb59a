r"""Render the LaTeX appendices with jinja2.

Templates live in ``symuat/latex/templates`` (shipped with the package).  They use
LaTeX-safe delimiters — ``\VAR{...}`` for values, ``\BLOCK{...}`` for statements,
``\#{...}`` for comments — so TeX braces never clash with jinja2.  Templates only
*arrange* strings: math arrives already printed, and free text passes through the
``tex`` filter (:func:`~symuat.latex.escape.escape_text`).  Output is
deterministic: no timestamps, entries in ledger order.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import SimpleNamespace

import jinja2

from ..errors import OutputError
from ..ledger.audit import AuditRecord, summary
from .appendices import chains, duat_boxes, duat_closed_forms, duat_proof
from .escape import escape_text

__all__ = ["environment", "render_audit", "render_matrix_vector", "render_duat", "write_files", "render_document",
           "format_counterexample"]

#: Counterexample fields that hold LaTeX math; every other field is free text.
_MATH_FIELDS = ("lhs", "rhs", "difference")


def environment() -> jinja2.Environment:
    """The jinja2 environment with LaTeX-safe delimiters and the ``tex`` escaping filter."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("symuat.latex", "templates"),
        block_start_string=r"\BLOCK{", block_end_string="}",
        variable_start_string=r"\VAR{", variable_end_string="}",
        comment_start_string=r"\#{", comment_end_string="}",
        line_statement_prefix="%%", line_comment_prefix="%#",
        trim_blocks=True, lstrip_blocks=True, autoescape=False,
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
    )
    env.filters["tex"] = escape_text
    env.filters["counterexample"] = format_counterexample
    env.filters["label"] = lambda s: "ledger:" + "".join(c if c.isalnum() or c in ".:-" else "-" for c in s)
    return env


def format_counterexample(cx: Mapping | None) -> str:
    """A counterexample as LaTeX: free text escaped on one line, each math field on its own fitted line."""
    if not cx:
        return "none recorded"
    parts, maths = [], []
    for key, value in cx.items():
        if key in _MATH_FIELDS:
            maths.append(rf"\par\noindent {escape_text(key)}:\fiteq{{{value}}}")
        elif isinstance(value, Mapping):
            parts.append(f"{escape_text(key)}: " + escape_text(", ".join(f"{k}={v}" for k, v in value.items())))
        elif isinstance(value, (list, tuple)):
            parts.append(f"{escape_text(key)}: (" + escape_text(", ".join(map(str, value))) + ")")
        else:
            parts.append(f"{escape_text(key)}: " + escape_text(str(value)))
    return "; ".join(parts) + "".join(maths)


def render_audit(records: Iterable[AuditRecord]) -> str:
    """The audit appendix: the ledger table and every erratum with its counterexample."""
    records = tuple(records)
    return environment().get_template("audit.tex.j2").render(
        records=records, summary=summary(records),
        errata=[r for r in records if r.entry.status.value == "erratum"],
    )


def render_matrix_vector(equations, examples) -> str:
    """The matrix–vector appendix: closed forms of every layer and worked examples."""
    return environment().get_template("appendix-matrix-vector.tex.j2").render(equations=equations, examples=examples)


def render_duat(depth: int, records: Iterable[AuditRecord]) -> str:
    """The DUAT appendix: Figure-2 boxes for depths 1..``depth``, closed forms, induction proof, chains."""
    tables = []
    for d in range(1, depth + 1):
        boxes, form, verified = duat_boxes(d)
        tables.append(SimpleNamespace(depth=d, boxes=boxes, form=form, verified=verified))
    return environment().get_template("appendix-duat.tex.j2").render(
        tables=tables, closed=duat_closed_forms(depth), closed_depth=depth, proof=duat_proof(),
        chains=chains(tuple(records)),
    )


def render_document(appendices: Iterable[str]) -> str:
    """``main.tex``: a standalone document that ``\\input``s each appendix (by file stem)."""
    return environment().get_template("main.tex.j2").render(appendices=tuple(appendices))


def write_files(directory: str | Path, files: Mapping[str, str]) -> list[Path]:
    """Write ``files`` (name → text) into ``directory`` atomically; raise :class:`OutputError` on failure."""
    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create output directory {str(out)!r}: {exc.strerror or exc}") from None
    written = []
    for name, text in files.items():
        target = out / name
        try:
            fd, tmp = tempfile.mkstemp(dir=out, prefix=f".{name}.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
            os.replace(tmp, target)
        except OSError as exc:
            raise OutputError(f"cannot write {str(target)!r}: {exc.strerror or exc}") from None
        written.append(target)
    return written
