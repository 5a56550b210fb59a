r"""A Coq project and the names of its builds: :class:`CoqProject` (``_CoqProject``: its logical path and files in
compile order, the files they ``Load``), :func:`build_stamp` (the whole build: every file, ``coqc --version`` and the
installed Coq libraries) and :func:`unit_stamps` (one file: its content and the stamps of the files it requires).
Compiling and keeping builds: :mod:`symuat.ledger.coq_build`.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .coq_graph import requirements

__all__ = ["CoqProject", "coqc_version", "toolchain", "build_stamp", "requirements_of", "unit_stamps"]

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
            for hit in sorted(str(p.relative_to(root)) for p in root.rglob(f"{name}.v"))[:1]:
                if hit not in found:
                    found.append(hit)
                    todo.append(hit)
    return tuple(sorted(found))


def _coqc_line(*args: str) -> str:
    coqc = shutil.which("coqc")
    if coqc is None:
        return "none"
    try:
        done = subprocess.run([coqc, *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return "unusable"
    return (done.stdout.splitlines() or ["unknown"])[0]


def coqc_version() -> str:
    r"""``coqc --version``'s first line, or ``"none"`` when ``coqc`` is not installed (part of the cache key)."""
    return _coqc_line("--version")


def _libraries() -> str:
    """The installed Coq libraries (MathComp), by name, size and modification time of each ``.vo``."""
    where = _coqc_line("-where")
    contrib = Path(where) / "user-contrib"
    h = hashlib.sha256(where.encode())
    if contrib.is_dir():
        for path in sorted(contrib.rglob("*.vo")):
            info = path.stat()
            h.update(f"{path.relative_to(contrib)}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    return h.hexdigest()


def toolchain() -> tuple[str, str]:
    r"""``coqc --version`` and the installed libraries, what every stamp holds besides the project's files (two
    ``coqc`` runs and a walk of the libraries: asked once per build by :func:`~symuat.ledger.coq_build.built_project`
    and given to :func:`build_stamp` and :func:`unit_stamps`)."""
    return coqc_version(), _libraries()


def build_stamp(project: CoqProject, tools: tuple[str, str] | None = None) -> str:
    r"""The name of ``project``'s build: its files by content, ``coqc --version`` and the installed libraries
    (``tools``: :func:`toolchain`, asked now when not given)."""
    tools = toolchain() if tools is None else tools
    h = hashlib.sha256(repr((project.logical, project.files, project.loaded, *tools)).encode())
    for file in (*project.files, *project.loaded):
        h.update(hashlib.sha256((project.root / file).read_bytes()).digest())
    return h.hexdigest()[:32]


def requirements_of(project: CoqProject) -> dict[str, frozenset[str]]:
    """For each file of ``project``, the project files it requires (:func:`~symuat.ledger.coq_graph.requirements`)."""
    return {f: requirements((project.root / f).read_text(encoding="utf-8"), project.logical, project.files,
                            before=project.files[:i]) for i, f in enumerate(project.files)}


def unit_stamps(project: CoqProject, tools: tuple[str, str] | None = None) -> dict[str, str]:
    r"""Each file's own stamp: its content, every loaded file, ``coqc --version``, the installed libraries
    (``tools``: :func:`toolchain`, asked now when not given), and the stamps of the files it requires, so that a
    change reaches exactly the files that depend on it.  A file whose stamp a kept build recorded is copied from
    that build instead of compiled (:func:`~symuat.ledger.coq_build.built_project`)."""
    tools = toolchain() if tools is None else tools
    base = hashlib.sha256(repr((project.logical, *tools)).encode())
    for file in project.loaded:
        base.update(file.encode() + b"\0" + hashlib.sha256((project.root / file).read_bytes()).digest())
    needs, stamps = requirements_of(project), {}

    def stamp(file: str, path: frozenset[str]) -> str:
        if file not in stamps:
            h = base.copy()
            h.update(file.encode() + b"\0" + hashlib.sha256((project.root / file).read_bytes()).digest())
            for other in sorted(needs[file] - path):  # a cycle (coqc refuses it) is cut
                h.update(stamp(other, path | {file}).encode())
            stamps[file] = h.hexdigest()[:32]
        return stamps[file]

    return {f: stamp(f, frozenset()) for f in project.files}
