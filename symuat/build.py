r"""The main job: audit the ledger, write ``latex/``, compile it when TeX is installed."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import OutputError
from .expansion.symbols import check_depth
from .latex.render import document_files, write_files
from .ledger.audit import AuditRecord, audit, ledger_json
from .ledger.registry import load_entries

__all__ = ["BuildResult", "latex_files", "build"]


@dataclass(frozen=True)
class BuildResult:
    """What :func:`build` wrote and whether the ledger and the PDF are sound."""

    records: tuple[AuditRecord, ...]
    files: tuple[Path, ...]
    pdf: Path | None
    compiler: str | None

    @property
    def disagreeing(self) -> tuple[str, ...]:
        return tuple(r.entry.id for r in self.records if not r.agrees)


def latex_files(records: tuple[AuditRecord, ...], depth: int = 3) -> dict[str, str | bytes]:
    """Every generated file, name → text (figures: PDF bytes); deterministic. ``depth``: depth of the DUAT table."""
    check_depth(depth)
    files = document_files(records, depth=depth)
    files["ledger.json"] = json.dumps(ledger_json(records), indent=2, ensure_ascii=False) + "\n"
    return files


def compile_pdf(directory: Path) -> tuple[Path | None, str | None]:
    """Compile ``main.tex`` with latexmk (or pdflatex twice); ``(None, None)`` when no TeX is installed."""
    if shutil.which("latexmk"):
        cmd, compiler = [["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "main.tex"]], "latexmk"
    elif shutil.which("pdflatex"):
        once = ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "main.tex"]
        cmd, compiler = [once, once], "pdflatex"
    else:
        return None, None
    for step in cmd:
        done = subprocess.run(step, cwd=directory, capture_output=True, text=True, encoding="utf-8", errors="replace")
        if done.returncode != 0:
            tail = "\n".join(done.stdout.splitlines()[-15:])
            raise OutputError(f"{compiler} failed on {directory / 'main.tex'}:\n{tail}")
    return directory / "main.pdf", compiler


def build(out: str | Path = "latex", seed: int = 0, pdf: bool = True, depth: int = 3) -> BuildResult:
    """Audit every entry, write the appendices and ``ledger.json`` to ``out``, compile if possible."""
    check_depth(depth)
    records = audit(load_entries(), seed=seed)
    written = write_files(out, latex_files(records, depth=depth))
    pdf_path, compiler = compile_pdf(Path(out)) if pdf else (None, None)
    return BuildResult(records, tuple(written), pdf_path, compiler)
