r"""Render the LaTeX appendices with jinja2.

Templates live in ``symuat/latex/templates`` (shipped with the package).  They use
LaTeX-safe delimiters — ``\VAR{...}`` for values, ``\BLOCK{...}`` for statements,
``\#{...}`` for comments — so TeX braces never clash with jinja2.  Templates only
*arrange* strings: math arrives already printed, notes and prose reasons are LaTeX
text mode (printed verbatim), and other free text passes through the ``tex`` filter
(:func:`~symuat.latex.escape.escape_text`) or, when it may hold ASCII math such as a
reference ``'UAT^R_{i+1} = …'``, the ``ref``/``text`` filters (:func:`~symuat.latex.escape.text_with_math`).  Output is
deterministic: no timestamps, entries in ledger order.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import SimpleNamespace

import jinja2

from ..errors import OutputError
from ..evidence.verdict import Level
from ..ledger.audit import AuditRecord, computed_summary
from ..ledger.coverage import coverage
from ..ledger.snapshot import prose_reason
from . import figures as _figures
from .appendices import (
    attention_examples,
    chains,
    duat_boxes,
    duat_closed_forms,
    duat_proof,
    layer_equations,
    matrix_vector_examples,
)
from .cells import command_text, format_counterexample, level_marks, status_cell, verdict_words
from .display import LINE_BUDGET_PT, breakable_id, display, math_width, split_lines
from .escape import escape_text, text_with_math
from .front import (
    RELEASE_DATE,
    audited_papers,
    errata_records,
    is_own_paper,
    is_paper,
    paper_versions,
    summary_columns,
    symuat_version,
    version_name,
    version_summaries,
)

__all__ = ["environment", "render_audit", "render_matrix_vector", "render_duat", "render_beyond", "write_files",
           "render_document", "render_paper_document", "format_counterexample", "level_marks", "status_cell",
           "verdict_words", "paper_figures", "document_files", "paper_document_files"]

_PAPER_FIGURE = re.compile(r"(?<!paper )(?<!paper's )(?<!paper’s )\b(Figures?|Fig\.)(~|\s)*(\d+)")


def paper_figures(text: str) -> str:
    """References to the paper's figures as "paper Fig. N", so they cannot be read as this document's own.

    >>> paper_figures("§3.2, text before Figure 5; Fig. 6; the paper's Fig.~2")
    "§3.2, text before paper Fig. 5; paper Fig. 6; the paper's Fig.~2"
    """
    return _PAPER_FIGURE.sub(lambda m: f"paper Fig. {m.group(3)}", text)


def environment() -> jinja2.Environment:
    """The jinja2 environment with LaTeX-safe delimiters and the filters the templates use."""
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
    env.filters["note"] = paper_figures  # notes and prose reasons are LaTeX text mode already
    env.filters["text"] = lambda s: paper_figures(text_with_math(s))  # plain text with ASCII math
    env.filters["ref"] = lambda s: text_with_math(paper_figures(s))
    env.filters["display"] = display
    env.filters["breakid"] = lambda s: breakable_id(escape_text(s))
    env.filters["lines"] = split_lines
    env.tests["wide"] = lambda tex: math_width(tex) > LINE_BUDGET_PT + 60.0
    env.filters["counterexample"] = format_counterexample
    env.filters["marks"] = level_marks
    env.filters["reason"] = lambda r: prose_reason(r.entry)
    env.filters["version"] = version_name
    env.filters["status"] = status_cell
    env.filters["verdict"] = verdict_words
    env.filters["command"] = command_text
    env.filters["label"] = lambda s: "ledger:" + "".join(c if c.isalnum() or c in ".:-" else "-" for c in s)
    return env


def _records(records: Iterable[AuditRecord], beyond: bool) -> tuple[AuditRecord, ...]:
    return tuple(r for r in records if is_paper(r.entry.source.version) is not beyond)


def _summary(records: tuple[AuditRecord, ...]) -> dict[str, int]:
    """Computed status counts, the five statuses always, ``refuted``/``no status`` where any entry has them."""
    columns = summary_columns(records)
    return {k: v for k, v in computed_summary(records).items() if k in columns}


def render_audit(records: Iterable[AuditRecord], command: str = "") -> str:
    """The audit appendix: legend, the ledger table, every statement as printed, every erratum in full.

    ``command``: how a user's own paper is audited (``symuat audit --derivations DIR``); empty for the shipped
    ledger, whose entries ``tests/test_ledger.py`` checks one by one.
    """
    records = _records(records, beyond=False)
    return environment().get_template("audit.tex.j2").render(
        records=records, summary=_summary(records), levels=[level.value for level in Level],
        errata=errata_records(records), command=command,
        disagreeing=[r.entry.id for r in records if not r.agrees],
    )


def render_beyond(records: Iterable[AuditRecord], title: str = "", blurb: str = "") -> str:
    """The section of the sources that are not papers: by default version ``ext``, "Beyond the paper" (none yet is
    said so); ``title`` and ``blurb`` (LaTeX) name other sources."""
    records = _records(records, beyond=True)
    return environment().get_template("beyond.tex.j2").render(
        records=records, levels=[level.value for level in Level], errata=errata_records(records),
        title=title or "Beyond the paper: modern LLM blocks",
        blurb=blurb or (r"Ledger entries of version \texttt{ext}: statements about blocks of today's language models "
                        "that the paper does not treat, checked with the same levels of evidence."),
    )


def render_matrix_vector(equations, examples, figures: bool = True) -> str:
    """The matrix–vector appendix: closed forms of every layer and worked examples (with figures if ``figures``)."""
    return environment().get_template("appendix-matrix-vector.tex.j2").render(
        equations=equations, examples=examples, figures=figures)


def render_duat(depth: int, records: Iterable[AuditRecord], figures: bool = True) -> str:
    """The DUAT appendix: the Figure-2 boxes at ``depth``, closed forms, induction proof, chains, figures."""
    boxes, form, verified = duat_boxes(depth)
    table = SimpleNamespace(depth=depth, boxes=boxes, form=form, verified=verified)
    return environment().get_template("appendix-duat.tex.j2").render(
        table=table, closed=duat_closed_forms(depth), proof=duat_proof(),
        chains=chains(tuple(records)), figures=figures, model=_figures.ATTRIBUTION_MODEL,
    )


def _front(records: tuple[AuditRecord, ...]) -> dict:
    """What both title pages share: the summary table (computed statuses) and the errata."""
    statuses = summary_columns(records)
    return dict(summaries=version_summaries(records), statuses=statuses, errata=errata_records(records),
                total=len(records), agree=sum(r.agrees for r in records),
                totals=[sum(1 for r in records if (r.computed_status or "no status") == s) for s in statuses],
                version=symuat_version(), date=RELEASE_DATE)


def render_document(appendices: Iterable[str], records: Iterable[AuditRecord] = ()) -> str:
    """``main.tex``: title page, summary page, then each appendix ``\\input`` by file stem."""
    records = tuple(records)
    return environment().get_template("main.tex.j2").render(
        appendices=tuple(appendices), versions=paper_versions(), **_front(records))


def render_paper_document(appendices: Iterable[str], records: tuple[AuditRecord, ...], command: str) -> str:
    """``main.tex`` of a user's own paper: its title, authors and versions, the summary, errata and coverage."""
    cov = coverage(r.entry for r in records)
    missing = {version_name(k): [escape_text(q) for q in m] for k, m in cov.missing.items()}
    return environment().get_template("paper-main.tex.j2").render(
        appendices=tuple(appendices), papers=audited_papers(records),
        versions=paper_versions(r.entry.source.version for r in records), missing=missing,
        command=command_text(command), **_front(records))


def paper_document_files(records: tuple[AuditRecord, ...], command: str = "symuat audit") -> dict[str, str]:
    """The document of a user's own paper (:func:`~symuat.latex.front.is_own_paper`): ``main.tex`` with that
    paper's title page, summary, errata list and coverage, the audit appendix of its entries, and a section for
    the plain sources it uses; no DUAT appendix, no figure."""
    appendices = {"appendix-audit": render_audit(records, command=command)}
    others = [o for o in dict.fromkeys(r.entry.source.version for r in records) if not is_paper(o)]
    if others:
        names = ", ".join(version_name(o) for o in others)
        appendices["appendix-sources"] = render_beyond(
            records, title=names, blurb=("Ledger entries of a source that is not a paper" if len(others) == 1
                                         else "Ledger entries of sources that are not papers")
            + ", checked with the same levels of evidence.")
    files: dict[str, str] = {f"{name}.tex": text for name, text in appendices.items()}
    files["symuat-macros.tex"] = environment().get_template("symuat-macros.tex.j2").render()
    files["main.tex"] = render_paper_document(appendices, records, command)
    return files


def document_files(records: Iterable[AuditRecord], depth: int = 3,
                   derivations: str | os.PathLike | None = None) -> dict[str, str | bytes]:
    """Every file of the document except ``ledger.json``: name → text (``.tex``) or bytes (``.pdf`` figures).

    Figures are drawn when matplotlib is installed (:func:`~symuat.latex.figures.plot_available`);
    without it the document is complete but has no figures.  Records of a user's own paper
    (:func:`~symuat.latex.front.is_own_paper`) give that paper's document (:func:`paper_document_files`).
    """
    records = tuple(records)
    if is_own_paper(records):
        where = f" --derivations {derivations}" if derivations is not None else ""
        return dict(paper_document_files(records, command=f"symuat audit{where}"))
    figures = _figures.plot_available()
    examples = matrix_vector_examples(attention_examples())
    appendices = {
        "appendix-matrix-vector": render_matrix_vector(layer_equations(), examples, figures),
        "appendix-duat": render_duat(depth, records, figures),
        "appendix-audit": render_audit(records),
        "appendix-beyond": render_beyond(records),
    }
    files: dict[str, str | bytes] = {f"{name}.tex": text for name, text in appendices.items()}
    files["symuat-macros.tex"] = environment().get_template("symuat-macros.tex.j2").render()
    files["main.tex"] = render_document(appendices, records)
    if figures:
        for ex in examples:
            files[f"{ex.figure}.pdf"] = _figures.sparsity_figure(ex.pattern, ex.block, "")
        files["fig-attention.pdf"] = _figures.attention_figure()
        files["fig-attribution.pdf"] = _figures.attribution_figure()
    return files


def _file_mode() -> int:
    """0644 less the umask: what any file a user writes gets."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o644 & ~umask


def write_files(directory: str | Path, files: Mapping[str, str | bytes]) -> list[Path]:
    """Write ``files`` (name → text or bytes) into ``directory`` atomically, mode 0644 less the umask; raise
    :class:`OutputError` on failure, leaving no temporary file behind."""
    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create output directory {str(out)!r}: {exc.strerror or exc}") from None
    mode = _file_mode()
    written = []
    for name, text in files.items():
        target = out / name
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(dir=out, prefix=f".{name}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(text if isinstance(text, bytes) else text.encode("utf-8"))
            os.chmod(tmp, mode)
            os.replace(tmp, target)
            tmp = None
        except OSError as exc:
            raise OutputError(f"cannot write {str(target)!r}: {exc.strerror or exc}") from None
        finally:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
        written.append(target)
    return written
