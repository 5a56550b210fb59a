r"""The ``coq`` evidence level: an entry names the Coq theorem that states it (:class:`~symuat.ledger.entry.CoqLink`).

The Coq project is ``$SYMUAT_COQ_DIR``, else a ``coq/`` directory beside (or inside) the derivation root,
with a ``_CoqProject`` file that names its ``-Q`` path and its files in order (``coq/`` of this repository:
MathComp, docs/coq.md).  :func:`check_theorems` compiles the project once, or reuses its verified build
(:mod:`symuat.ledger.coq_build`), then asks Coq, for every named theorem, whether it exists (``Locate``) and
what it assumes (``Print Assumptions``).  :func:`coq_evidence` turns the answer into evidence about the printed
statement:

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

import json
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..evidence.verdict import Evidence, Level
from .coq_build import built_project, run_coqc
from .coq_project import CoqProject, coqc_version
from .entry import CoqLink
from .guard import die_with_parent
from .snapshot import claim_kind

__all__ = ["CoqProject", "CoqResult", "find_project", "coqc_version", "built_project", "check_theorems", "coq_evidence",
           "linked_evidence", "linked_evidence_later", "correction_key", "LEFT_OUT"]

_CLOSED = "Closed under the global context"
#: The reason of every Coq verdict of an audit that leaves the Coq level out (``audit_ledger(coq=False)``,
#: ``symuat audit --no-coq``): undecided, never a pass.
LEFT_OUT = "not run: the Coq level was left out (symuat audit --no-coq)"


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


def _all(names: Iterable[str], result: CoqResult) -> dict[str, CoqResult]:
    return {n: result for n in names}


def _blocks(coqc: str, project: CoqProject, built: Path, work: Path, name: str,
            commands: list[str]) -> list[str] | None:
    """Coq's output for each command of ``commands`` (one ``coqc`` run), or ``None`` when the run fails."""
    header = "".join(f"From {project.logical} Require {f.removesuffix('.v')}.\n" for f in project.files)
    (work / name).write_text(header + "".join(f"{c}\nCheck tt.\n" for c in commands))
    done = run_coqc(coqc, project, built, work, name)
    blocks = re.split(r"^tt\s*:\s*unit\s*$", done.stdout, flags=re.M)
    return blocks[:-1] if done.returncode == 0 and len(blocks) == len(commands) + 1 else None


def _located(project: CoqProject, name: str, said: str) -> bool:
    return re.search(rf"(Constant|Inductive|Constructor) {re.escape(project.logical)}\.{re.escape(name)}\b",
                     said) is not None


def _closed(block: str) -> CoqResult:
    if _CLOSED in block:
        return CoqResult(True, "Print Assumptions: closed under the global context")
    return CoqResult(None, f"rests on assumptions: {' '.join(block.split())[:300]}")


def check_theorems(project: CoqProject | None, names: Iterable[str], keep: Path | None = None) -> dict[str, CoqResult]:
    r"""Compile ``project`` once and report, for each ``"<File>.<name>"``, whether it is a closed theorem.

    ``keep``: where compiled projects are kept and reused (:func:`~symuat.ledger.coq_build.built_project`).
    One ``coqc`` run locates every name and prints the assumptions of the tuple of all of them, so that what they
    share (MathComp) is walked once; only when a name is missing or an assumption is found are the names asked about
    one by one, each with its own reason.
    """
    names = sorted(set(names))
    if not names:
        return {}
    coqc = shutil.which("coqc")
    if coqc is None:
        return _all(names, CoqResult(None, "not run: coqc is not installed"))
    if project is None:
        return _all(names, CoqResult(None, "not run: no Coq project (a coq/ directory with a _CoqProject beside the "
                                           "derivations, or $SYMUAT_COQ_DIR)"))
    with built_project(project, keep) as (built, why), tempfile.TemporaryDirectory(prefix="symuat-coq-check-") as tmp:
        if built is None:
            return _all(names, CoqResult(None, why))
        work = Path(tmp)
        together = _blocks(coqc, project, built, work, "SymuatAll.v",
                           [*(f"Locate {n}." for n in names),
                            f"Definition symuat_all := ({', '.join('@' + n for n in names)}).\n"
                            "Print Assumptions symuat_all."])
        if together is not None and all(_located(project, n, b) for n, b in zip(names, together)) \
                and _closed(together[-1]).closed:
            return _all(names, _closed(together[-1]))
        asks = [f"Locate {n}.\nPrint Assumptions {n}." for n in names]
        both = _blocks(coqc, project, built, work, "SymuatAsk.v", asks)
        if both is not None and all(_located(project, n, b) for n, b in zip(names, both)):
            return {n: _closed(b) for n, b in zip(names, both)}
        located = _blocks(coqc, project, built, work, "SymuatLocate.v", [f"Locate {n}." for n in names])
        if located is None:
            return _all(names, CoqResult(None, "Locate failed"))
        found = [n for n, b in zip(names, located) if _located(project, n, b)]
        out = _all(set(names) - set(found), CoqResult(None, f"not found in the compiled project {project.root}"))
        if not found:
            return out
        printed = _blocks(coqc, project, built, work, "SymuatAssumptions.v", [f"Print Assumptions {n}." for n in found])
        if printed is None:
            return {**out, **_all(found, CoqResult(None, "Print Assumptions failed"))}
        return {**out, **{n: _closed(b) for n, b in zip(found, printed)}}


def coq_evidence(link: CoqLink, result: CoqResult, denial: bool = False, what: str = "the printed statement"
                 ) -> Evidence:
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
    says = f"states the negation of {what}" if link.negation else f"states {what}"
    return Evidence(Level.COQ, link.negation == denial,
                    f"Coq theorem {link.theorem} (coq/{file}.v) {says}; it compiles, {result.reason}, for every "
                    "size", theorem=link.theorem)


def linked_evidence(entries: Iterable, project: CoqProject | None, keep: Path | None = None, run: bool = True
                    ) -> Mapping[str, Evidence]:
    r"""``{entry id: coq evidence}`` for the entries that name a theorem (one compile for all of them, reused from
    ``keep`` when it holds a verified build: :func:`check_theorems`).

    ``run=False`` leaves the Coq level out: every linked theorem is undecided with the reason :data:`LEFT_OUT`.
    """
    linked = [e for e in entries if getattr(e, "coq", None) is not None]
    fixed = [e for e in entries if _correction_link(e) is not None]
    if not linked and not fixed:
        return {}
    names = [e.coq.theorem for e in linked] + [e.correction.coq.theorem for e in fixed]
    results = check_theorems(project, names, keep) if run else _all(names, CoqResult(None, LEFT_OUT))
    out = {e.id: coq_evidence(e.coq, results[e.coq.theorem], denial=claim_kind(e) == "denial") for e in linked}
    out.update({correction_key(e.id): coq_evidence(e.correction.coq, results[e.correction.coq.theorem],
                                                   what="the corrected statement")
                for e in fixed})
    return out


def correction_key(entry_id: str) -> str:
    """The key of an entry's correction in :func:`linked_evidence`.

    >>> correction_key("duat:appB.fig2")
    'duat:appB.fig2 (correction)'
    """
    return f"{entry_id} (correction)"


def _correction_link(entry) -> CoqLink | None:
    return getattr(getattr(entry, "correction", None), "coq", None)


def linked_evidence_later(entries: Iterable, project: CoqProject | None, keep: Path | None = None,
                          run: bool = True) -> Callable[..., Mapping[str, Evidence]]:
    r""":func:`linked_evidence` computed in a forked process while the caller audits; call the result to collect it
    (``cancel=True`` kills the process first).

    Coq compiles on its own core while the entries are audited (the compile takes about as long as a cold audit).
    Without ``fork``, or with nothing to compile (``run=False`` included), it is computed at once.
    """
    entries = [e for e in entries if getattr(e, "coq", None) is not None or _correction_link(e) is not None]
    if not run or not entries or not hasattr(os, "fork") or shutil.which("coqc") is None or project is None:
        done = linked_evidence(entries, project, keep, run)
        return lambda cancel=False: done
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_fd)
        die_with_parent()
        try:
            rows = {i: [ev.holds, ev.detail, ev.theorem]
                    for i, ev in linked_evidence(entries, project, keep).items()}
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
        links = [(e.id, e.coq, e.id) for e in entries if getattr(e, "coq", None) is not None]
        links += [(correction_key(e.id), _correction_link(e), e.id) for e in entries if _correction_link(e) is not None]
        return {k: Evidence(Level.COQ, rows[k][0], rows[k][1], theorem=rows[k][2]) if k in rows
                else coq_evidence(link, lost, what="the corrected statement" if k != e_id else "the printed statement")
                for k, link, e_id in links}

    return collect
