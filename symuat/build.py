r"""The main job: audit the ledger, write ``latex/``, compile it when TeX is installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from .errors import OutputError
from .expansion.symbols import check_depth
from .latex.render import document_files, write_files
from .ledger.audit import AuditRecord, check_seed, ledger_json
from .ledger.isolation import audit_isolated
from .ledger.stable import stable_records

__all__ = ["BuildResult", "latex_files", "check_writable", "output_directory", "build"]


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


def latex_files(records: tuple[AuditRecord, ...], depth: int = 3,
                derivations: str | Path | None = None) -> dict[str, str | bytes]:
    """Every generated file, name → text (figures: PDF bytes); deterministic. ``depth``: depth of the DUAT table;
    ``derivations``: the directory the records were loaded from, named in a user paper's document."""
    check_depth(depth)
    records = stable_records(records)  # machine-independent bounds for measured float digits
    files = document_files(records, depth=depth, derivations=derivations)
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


def check_writable(out: str | Path) -> Path:
    """Create ``out`` if needed and make sure a file can be written in it; :class:`OutputError` otherwise."""
    path = Path(out)
    if path.exists() and not path.is_dir():  # a file, /dev/null: mkdir's own answer would be "File exists"
        raise OutputError(f"output directory {str(path)!r} is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create output directory {str(path)!r}: {exc.strerror or exc}") from None
    try:
        fd, probe = tempfile.mkstemp(dir=path, prefix=".symuat-probe-", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputError(f"cannot write to output directory {str(path)!r}: {exc.strerror or exc}") from None
    return path


@contextmanager
def output_directory(out: str | Path) -> Iterator[Path]:
    """``out`` checked for writing (created if needed: :func:`check_writable`) for the work inside; when that work
    fails, a directory created here is removed again (if still empty), so that a failed command leaves nothing."""
    path = Path(out)
    created = not path.exists()
    check_writable(path)
    try:
        yield path
    except BaseException:
        if created:
            with suppress(OSError):
                path.rmdir()
        raise


def build(out: str | Path = "latex", seed: int = 0, pdf: bool = True, depth: int = 3, use_cache: bool = True,
          on_start: Callable[[int], None] | None = None, on_done: Callable[[str], None] | None = None,
          derivations: str | Path | None = None) -> BuildResult:
    """Audit every entry (from the audit cache when current), write the appendices and ``ledger.json`` to
    ``out``, compile if possible.  ``out`` is checked for writing before anything is audited.

    ``derivations``: a directory of derivation modules (``symuat build --derivations DIR``); the document is then
    that paper's appendix (:func:`~symuat.latex.render.document_files`), with its own title and errata.
    """

    check_depth(depth)
    check_seed(seed)
    with output_directory(out):
        records = audit_isolated(directory=derivations, seed=seed, use_cache=use_cache, on_start=on_start,
                                 on_done=on_done)
    written = write_files(out, latex_files(records, depth=depth, derivations=derivations))
    pdf_path, compiler = compile_pdf(Path(out)) if pdf else (None, None)
    return BuildResult(records, tuple(written), pdf_path, compiler)
