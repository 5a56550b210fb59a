r"""The ``coq`` evidence level: an entry names the Coq theorem that states it (:class:`~symuat.ledger.entry.CoqLink`).

The Coq project is ``$SYMUAT_COQ_DIR``, else a ``coq/`` directory beside (or inside) the derivation root,
with a ``_CoqProject`` file that names its ``-Q`` path and its files in order (``coq/`` of this repository:
MathComp, docs/coq.md).  :func:`check_theorems` compiles the project once into a temporary directory
(``coqc``), then asks Coq, for every named theorem, whether it exists (``Locate``) and what it assumes
(``Print Assumptions``).  :func:`coq_evidence` turns the answer into evidence about the printed statement:

==============================================  =====================================================
Coq says                                        evidence
==============================================  =====================================================
theorem found, closed under the global context  holds (``negation``: fails — Coq refutes the statement)
``coqc`` not installed, no project              ``holds: null``, ``not run: …``
the project does not compile, theorem missing,  ``holds: null``, the reason
or it rests on an axiom
==============================================  =====================================================

For a denial the evidence is about the denied identity, like every other level's.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..evidence.verdict import Evidence, Level
from .entry import CoqLink
from .guard import die_with_parent
from .snapshot import claim_kind

__all__ = ["CoqProject", "CoqResult", "find_project", "coqc_version", "built_project", "check_theorems", "coq_evidence",
           "linked_evidence", "linked_evidence_later"]

_FLAGS = ("-w", "-notation-overridden", "-w", "-ambiguous-paths")
_CLOSED = "Closed under the global context"
#: Seconds one ``coqc`` run may take.
_TIMEOUT = 600


#: ``Load Name.`` in a Coq file: a file of section variables read into a section (coq/shared/DUATVariables.v).
_LOAD = re.compile(r"^\s*Load\s+(\w+)\s*\.", re.M)


@dataclass(frozen=True)
class CoqProject:
    r"""A Coq project: its directory, logical path (``-Q DIR Path``) and files in compile order.

    ``loaded`` are the files below ``root`` that a file of the project (or a loaded file) reads with ``Load Name.``,
    relative to ``root``: they are not compiled on their own but copied beside the compiled files.
    """

    root: Path
    logical: str
    files: tuple[str, ...]
    loaded: tuple[str, ...] = ()

    @classmethod
    def read(cls, root: Path) -> CoqProject:
        words = (root / "_CoqProject").read_text(encoding="utf-8").split()
        logical = words[words.index("-Q") + 2] if "-Q" in words and len(words) > words.index("-Q") + 2 else "Top"
        files = tuple(w for w in words if w.endswith(".v"))
        return cls(root, logical, files, _loaded(root, files))


def _loaded(root: Path, files: Iterable[str]) -> tuple[str, ...]:
    """The files ``Load``-ed by ``files``, transitively, relative to ``root`` (a name not found is coqc's error)."""
    todo, found = list(files), []
    while todo:
        text = (root / todo.pop()).read_text(encoding="utf-8", errors="replace")
        for name in _LOAD.findall(text):
            hits = sorted(str(p.relative_to(root)) for p in root.rglob(f"{name}.v"))
            for hit in hits[:1]:
                if hit not in found:
                    found.append(hit)
                    todo.append(hit)
    return tuple(sorted(found))


@dataclass(frozen=True)
class CoqResult:
    """What Coq said about one theorem: ``closed`` (found, no axiom) or ``None`` with the ``reason``."""

    closed: bool | None
    reason: str


def find_project(derivation_root: Path | None) -> CoqProject | None:
    r"""``$SYMUAT_COQ_DIR``, else ``coq/`` beside or inside ``derivation_root``, when it has a ``_CoqProject``."""
    env = os.environ.get("SYMUAT_COQ_DIR", "").strip()
    candidates = [Path(env)] if env else []
    if derivation_root is not None:
        candidates += [Path(derivation_root).parent / "coq", Path(derivation_root) / "coq"]
    for path in candidates:
        if (path / "_CoqProject").is_file():
            return CoqProject.read(path.resolve())
    return None


def coqc_version() -> str:
    r"""``coqc --version``'s first line, or ``"none"`` when ``coqc`` is not installed (part of the cache key)."""
    coqc = shutil.which("coqc")
    if coqc is None:
        return "none"
    try:
        done = subprocess.run([coqc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return "unusable"
    return (done.stdout.splitlines() or ["unknown"])[0]


def _run(coqc: str, project: CoqProject, built: Path, cwd: Path, name: str) -> subprocess.CompletedProcess:
    return subprocess.run([coqc, *_FLAGS, "-Q", str(built), project.logical, name], cwd=cwd, capture_output=True,
                          text=True, timeout=_TIMEOUT)


def _all(names: Iterable[str], result: CoqResult) -> dict[str, CoqResult]:
    return {n: result for n in names}


def _stamp(project: CoqProject) -> str:
    h = hashlib.sha256(repr((project.logical, project.files, project.loaded, coqc_version())).encode())
    for file in (*project.files, *project.loaded):
        h.update(hashlib.sha256((project.root / file).read_bytes()).digest())
    return h.hexdigest()[:32]


def _compile(coqc: str, project: CoqProject, work: Path) -> str:
    """Compile the project's files in order into ``work``; ``""`` on success, else why not."""
    for file in project.loaded:  # read by Load from the -Q path, never compiled alone
        (work / file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(project.root / file, work / file)
    for file in project.files:
        shutil.copyfile(project.root / file, work / file)
        try:
            done = _run(coqc, project, work, work, file)
        except subprocess.TimeoutExpired:
            return f"coq/{file} did not compile within {_TIMEOUT} s"
        if done.returncode != 0:
            return f"coq/{file} does not compile: {' '.join((done.stderr or done.stdout).split())[-300:]}"
    return ""


@contextmanager
def built_project(project: CoqProject) -> Iterator[tuple[Path | None, str]]:
    r"""``(directory, "")`` holding the compiled project, or ``(None, why not)``.

    Normally a temporary directory.  ``$SYMUAT_COQ_BUILD`` names a directory where compiled projects are kept by
    the hash of their files and ``coqc --version`` and reused (the test session shares one compile between its
    audit and ``tests/test_coq.py``); a build is complete only once renamed into place.
    """
    coqc = shutil.which("coqc")
    if coqc is None:
        yield None, "not run: coqc is not installed"
        return
    shared = os.environ.get("SYMUAT_COQ_BUILD", "").strip()
    if not shared:
        with tempfile.TemporaryDirectory(prefix="symuat-coq-") as tmp:
            why = _compile(coqc, project, Path(tmp))
            yield (None, why) if why else (Path(tmp), "")
        return
    final = Path(shared) / _stamp(project)
    if not final.is_dir():
        Path(shared).mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".building-", dir=shared))
        why = _compile(coqc, project, tmp)
        if why:
            shutil.rmtree(tmp, ignore_errors=True)
            yield None, why
            return
        try:
            os.rename(tmp, final)
        except OSError:  # another process finished first: use its build
            shutil.rmtree(tmp, ignore_errors=True)
    yield final, ""


def check_theorems(project: CoqProject | None, names: Iterable[str]) -> dict[str, CoqResult]:
    r"""Compile ``project`` once and report, for each ``"<File>.<name>"``, whether it is a closed theorem."""
    names = sorted(set(names))
    coqc = shutil.which("coqc")
    if coqc is None:
        return _all(names, CoqResult(None, "not run: coqc is not installed"))
    if project is None:
        return _all(names, CoqResult(None, "not run: no Coq project (a coq/ directory with a _CoqProject beside the "
                                           "derivations, or $SYMUAT_COQ_DIR)"))
    with built_project(project) as (built, why), tempfile.TemporaryDirectory(prefix="symuat-coq-check-") as tmp:
        if built is None:
            return _all(names, CoqResult(None, why))
        work = Path(tmp)
        modules = [f.removesuffix(".v") for f in project.files]
        header = "".join(f"From {project.logical} Require {m}.\n" for m in modules)
        (work / "SymuatLocate.v").write_text(header + "".join(f"Locate {n}.\n" for n in names))
        located = _run(coqc, project, built, work, "SymuatLocate.v")
        if located.returncode != 0:
            return _all(names, CoqResult(None, f"Locate failed: {' '.join(located.stderr.split())[-300:]}"))
        found = [n for n in names if re.search(rf"(Constant|Inductive|Constructor) {re.escape(project.logical)}"
                                                rf"\.{re.escape(n)}\b", located.stdout)]
        out = _all(set(names) - set(found), CoqResult(None, f"not found in the compiled project {project.root}"))
        if not found:
            return out
        (work / "SymuatAssumptions.v").write_text(header + "".join(f"Print Assumptions {n}.\nCheck tt.\n"
                                                                    for n in found))
        printed = _run(coqc, project, built, work, "SymuatAssumptions.v")
        blocks = re.split(r"^tt\s*:\s*unit\s*$", printed.stdout, flags=re.M)
        if printed.returncode != 0 or len(blocks) != len(found) + 1:
            return {**out, **_all(found, CoqResult(None, "Print Assumptions failed"))}
        for n, block in zip(found, blocks):
            closed = _CLOSED in block
            out[n] = CoqResult(True if closed else None,
                               "Print Assumptions: closed under the global context" if closed else
                               f"rests on assumptions: {' '.join(block.split())[:300]}")
        return out


def coq_evidence(link: CoqLink, result: CoqResult, denial: bool = False) -> Evidence:
    r"""The ``coq`` evidence of an entry linked to ``link``, from Coq's ``result``.

    >>> coq_evidence(CoqLink("DUAT.eq20"), CoqResult(True, "closed")).holds
    True
    >>> coq_evidence(CoqLink("Erratum.eq11_rule4_refuted", negation=True), CoqResult(True, "closed")).holds
    False
    >>> coq_evidence(CoqLink("DUAT.eq20"), CoqResult(None, "not run: coqc is not installed")).detail
    'not run: coqc is not installed (Coq theorem DUAT.eq20)'
    """
    if result.closed is None:
        return Evidence(Level.COQ, None, f"{result.reason} (Coq theorem {link.theorem})", theorem=link.theorem)
    file = link.theorem.split(".")[0]
    says = ("states the negation of the printed statement" if link.negation else "states the printed statement")
    return Evidence(Level.COQ, link.negation == denial,
                    f"Coq theorem {link.theorem} (coq/{file}.v) {says}; it compiles, {result.reason}, for every "
                    "size (MathComp)", theorem=link.theorem)


def linked_evidence(entries: Iterable, project: CoqProject | None) -> Mapping[str, Evidence]:
    r"""``{entry id: coq evidence}`` for the entries that name a theorem (one compile for all of them)."""
    linked = [e for e in entries if getattr(e, "coq", None) is not None]
    if not linked:
        return {}
    results = check_theorems(project, (e.coq.theorem for e in linked))
    return {e.id: coq_evidence(e.coq, results[e.coq.theorem], denial=claim_kind(e) == "denial") for e in linked}


def linked_evidence_later(entries: Iterable, project: CoqProject | None) -> Callable[..., Mapping[str, Evidence]]:
    r""":func:`linked_evidence` computed in a forked process while the caller audits; call the result to collect it
    (``cancel=True`` kills the process first).

    Coq compiles on its own core while the entries are audited (the compile takes about as long as a cold audit).
    Without ``fork``, or with nothing to compile, it is computed at once.
    """
    entries = [e for e in entries if getattr(e, "coq", None) is not None]
    if not entries or not hasattr(os, "fork") or shutil.which("coqc") is None or project is None:
        done = linked_evidence(entries, project)
        return lambda cancel=False: done
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_fd)
        die_with_parent()
        try:
            rows = {i: [ev.holds, ev.detail, ev.theorem] for i, ev in linked_evidence(entries, project).items()}
            data = json.dumps(rows).encode()
            while data:
                data = data[os.write(write_fd, data):]
        finally:
            os._exit(0)
    os.close(write_fd)

    def collect(cancel: bool = False) -> Mapping[str, Evidence]:
        if cancel:  # the audit failed: stop compiling
            os.kill(pid, signal.SIGKILL)
        with os.fdopen(read_fd, "rb") as fh:
            raw = fh.read()
        os.waitpid(pid, 0)
        try:
            rows = json.loads(raw)
        except ValueError:
            rows = {}
        lost = CoqResult(None, "the process checking the Coq project ended without an answer")
        return {e.id: Evidence(Level.COQ, rows[e.id][0], rows[e.id][1], theorem=rows[e.id][2]) if e.id in rows
                else coq_evidence(e.coq, lost) for e in entries}

    return collect
