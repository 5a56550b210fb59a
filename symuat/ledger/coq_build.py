r"""A Coq project compiled once and reused by content: :func:`built_project` (the ``coq`` level, docs/coq.md).

A build is the directory of the compiled files of a :class:`~symuat.ledger.coq_project.CoqProject`, named by its
:func:`~symuat.ledger.coq_project.build_stamp` (the project's files, the ``coqc`` that compiles them and the
installed Coq libraries).  It is reused only when its manifest — the SHA-256 of every file in it — verifies under
this user's signing key (:mod:`symuat.ledger.signing`) and every file still has its digest: a ``.vo`` this user's
symuat did not write is never loaded.  A new build compiles only what changed: a file whose own stamp
(:func:`~symuat.ledger.coq_project.unit_stamps`) the newest other verified build recorded is copied from that build,
each copied file checked against its digest there.  Builds are kept in ``$SYMUAT_COQ_BUILD`` (the test session's),
else in the directory the caller names (``symuat audit``: ``coq/`` in the audit cache directory), else in a
temporary directory.  One process compiles a given stamp at a time (a lock file); the others wait and reuse its
build.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from .coq_graph import run_in_order
from .coq_project import CoqProject, build_stamp, requirements_of, toolchain, unit_stamps
from .parallel import default_jobs
from .signing import sign, user_key, verify

#: POSIX file locks (one compile per stamp at a time); elsewhere concurrent compiles each keep their own result.
fcntl = importlib.import_module("fcntl") if os.name == "posix" else None

__all__ = ["built_project", "run_coqc"]

FLAGS = ("-w", "-notation-overridden", "-w", "-ambiguous-paths")
#: Seconds one ``coqc`` run may take.
TIMEOUT = 600
_MANIFEST = ".symuat-build"
#: What ``coqc`` writes for ``X.v`` (besides its ``.X.aux``), copied together when a kept build's is reused.
_OUTPUTS = (".vo", ".vos", ".vok", ".glob")
#: Builds kept in a build directory (the newest); a build of coq/ is about 1.5 MB.
_KEEP_BUILDS = 4


def run_coqc(coqc: str, project: CoqProject, built: Path, cwd: Path, name: str) -> subprocess.CompletedProcess:
    r"""``coqc`` on ``cwd/name`` with ``built`` as the project's ``-Q`` path."""
    return subprocess.run([coqc, *FLAGS, "-Q", str(built), project.logical, name], cwd=cwd, capture_output=True,
                          text=True, timeout=TIMEOUT)


def _copied(file: str, donor: Path, digests: dict[str, str], work: Path) -> bool:
    """Whether the outputs of ``file`` were copied from the kept build ``donor`` into ``work``, each with the digest
    that build's verified manifest lists (else nothing is left of them, and the file is compiled)."""
    names = [file[:-2] + ext for ext in _OUTPUTS if file[:-2] + ext in digests]
    try:
        for name in names:
            shutil.copyfile(donor / name, work / name)
            if hashlib.sha256((work / name).read_bytes()).hexdigest() != digests[name]:
                raise OSError(f"{name} changed in {donor}")
        return file[:-2] + ".vo" in names
    except OSError:
        for name in names:
            (work / name).unlink(missing_ok=True)
        return False


def _compile(coqc: str, project: CoqProject, work: Path, reuse: dict[str, tuple[Path, dict[str, str]]],
             copied: list[str] | None = None) -> str:
    """Compile the project's files into ``work``, each once the files it requires are compiled, independent files
    at the same time (:mod:`~symuat.ledger.coq_graph`; as many as the audit's worker processes,
    :func:`~symuat.ledger.parallel.default_jobs`); a file of ``reuse`` (``file → (kept build, its digests)``) is
    copied instead (:func:`_copied`) and appended to ``copied``; ``""`` on success, else why not."""
    for file in (*project.loaded, *project.files):  # loaded: read by Load from the -Q path, never compiled alone
        (work / file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(project.root / file, work / file)

    def one(file: str) -> str:
        if file in reuse and _copied(file, *reuse[file], work):
            if copied is not None:
                copied.append(file)
            return ""
        try:
            done = run_coqc(coqc, project, work, work, file)
        except subprocess.TimeoutExpired:
            return f"coq/{file} did not compile within {TIMEOUT} s"
        if done.returncode != 0:
            return f"coq/{file} does not compile: {' '.join((done.stderr or done.stdout).split())[-300:]}"
        return ""

    return run_in_order(project.files, requirements_of(project), one, default_jobs())


def _digests(build: Path) -> dict[str, str]:
    return {str(p.relative_to(build)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(build.rglob("*")) if p.is_file() and p.name != _MANIFEST}


def _seal(build: Path, stamp: str, key: bytes, units: dict[str, str], reused: list[str]) -> None:
    """The signed manifest: the build's stamp, the digest of every file, each source file's stamp
    (:func:`~symuat.ledger.coq_project.unit_stamps`) and the files copied from a kept build."""
    payload = json.dumps({"stamp": stamp, "files": _digests(build), "units": units, "reused": reused},
                         sort_keys=True).encode()
    (build / _MANIFEST).write_bytes(sign(key, payload).encode() + b"\n" + payload)


def _manifest(build: Path, key: bytes) -> dict | None:
    """The manifest of ``build`` when its signature verifies and ``build`` holds exactly the files it lists, each
    with its digest; else ``None``."""
    try:
        mac, _, payload = (build / _MANIFEST).read_bytes().partition(b"\n")
        if not verify(key, payload, mac.decode("ascii")):
            return None
        data = json.loads(payload)
        if not isinstance(data, dict) or data.get("files") != _digests(build):
            return None
        return data
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _intact(build: Path, stamp: str, key: bytes) -> bool:
    """Whether ``build`` is the verified build of ``stamp``."""
    data = _manifest(build, key)
    return data is not None and data.get("stamp") == stamp


def _reusable(store: Path, stamp: str, units: dict[str, str], key: bytes) -> dict[str, tuple[Path, dict[str, str]]]:
    """The files whose stamp the newest other verified build in ``store`` recorded: ``file → (that build, its
    digests)``."""
    builds = sorted((p for p in store.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != stamp),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    for build in builds:
        data = _manifest(build, key)
        if data is not None and data.get("stamp") == build.name and isinstance(data.get("units"), dict):
            return {f: (build, data["files"]) for f, u in units.items() if data["units"].get(f) == u}
    return {}


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    if fcntl is None:  # pragma: no cover - not POSIX
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _prune(keep: Path, current: Path) -> None:
    builds = sorted((p for p in keep.iterdir() if p.is_dir() and not p.name.startswith(".") and p != current),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    for old in builds[_KEEP_BUILDS - 1:]:
        shutil.rmtree(old, ignore_errors=True)
        with suppress(OSError):
            (keep / f".{old.name}.lock").unlink()


def _build_into(coqc: str, project: CoqProject, store: Path, key: bytes) -> tuple[Path | None, str]:
    """The verified build of ``project`` in ``store``, compiled now unless one is there; ``(None, why)`` if not."""
    tools = toolchain()
    stamp = build_stamp(project, tools)
    final = store / stamp
    with _locked(store / f".{stamp}.lock"):
        if final.is_dir() and _intact(final, stamp, key):
            return final, ""
        tmp = Path(tempfile.mkdtemp(prefix=".building-", dir=store))
        try:
            units = unit_stamps(project, tools)
            copied: list[str] = []
            why = _compile(coqc, project, tmp, _reusable(store, stamp, units, key), copied)
            if why:
                return None, why
            _seal(tmp, stamp, key, units, sorted(copied))
            shutil.rmtree(final, ignore_errors=True)  # a build whose manifest did not verify
            os.rename(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    _prune(store, final)
    return final, ""


@contextmanager
def built_project(project: CoqProject, keep: Path | None = None) -> Iterator[tuple[Path | None, str]]:
    r"""``(directory, "")`` holding the compiled project, or ``(None, why not)``.

    ``$SYMUAT_COQ_BUILD``, else ``keep``, names the directory where builds are kept by :func:`build_stamp` and
    reused when their signed manifest verifies; without either, or without a signing key, the project is compiled
    into a temporary directory.  A build is complete only once renamed into place.
    """
    coqc = shutil.which("coqc")
    if coqc is None:
        yield None, "not run: coqc is not installed"
        return
    shared = os.environ.get("SYMUAT_COQ_BUILD", "").strip() or (str(keep) if keep is not None else "")
    key = user_key(outside=Path(shared)) if shared else None
    if key is not None:
        try:
            Path(shared).mkdir(parents=True, exist_ok=True)
            kept = _build_into(coqc, project, Path(shared), key)
        except OSError:  # the build directory is not writable: compile into a temporary one
            kept = None
        if kept is not None:
            yield kept
            return
    with tempfile.TemporaryDirectory(prefix="symuat-coq-") as tmp:
        why = _compile(coqc, project, Path(tmp), {})
        yield (None, why) if why else (Path(tmp), "")
