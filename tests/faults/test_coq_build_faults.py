"""Hostile kept Coq builds (symuat.ledger.coq_build): a build is loaded only while its signed manifest verifies.

Each case corrupts a sealed build of a tiny plain-Coq project in the kept directory, then asks for the project
again: the exact expected outcome is a fresh compile (the planted bytes are gone, the theorem is still found closed),
never a load of what was planted.  The same corruptions of a kept build that a new build could copy unchanged files
from leave it nothing to copy, and a file replaced after its build was verified is compiled, not copied.  Skipped
without ``coqc``; fails instead with ``SYMUAT_REQUIRE_COQ=1`` (CI).
"""

from __future__ import annotations

import json

import pytest

from symuat.ledger.coq import CoqProject, check_theorems
from symuat.ledger.coq_build import _copied, built_project
from symuat.ledger.coq_project import build_stamp, unit_stamps

_MANIFEST = ".symuat-build"


def _append(path, data: bytes) -> None:
    path.write_bytes(path.read_bytes() + data)


#: name -> what is done to the sealed build directory
CASES = {
    "vo_edited": lambda b: _append(b / "A.vo", b"\0"),
    "vo_removed": lambda b: (b / "A.vo").unlink(),
    "file_planted": lambda b: (b / "Evil.vo").write_bytes(b"planted"),
    "manifest_removed": lambda b: (b / _MANIFEST).unlink(),
    "manifest_mac_forged": lambda b: (b / _MANIFEST).write_bytes(b"0" * 64 + (b / _MANIFEST).read_bytes()[64:]),
    "manifest_not_json": lambda b: (b / _MANIFEST).write_bytes((b / _MANIFEST).read_bytes()[:65] + b"{not json"),
    "manifest_binary": lambda b: (b / _MANIFEST).write_bytes(b"\xff\xfe\x00" * 50),
    "manifest_is_a_directory": lambda b: ((b / _MANIFEST).unlink(), (b / _MANIFEST).mkdir()),
}


def _kept_build(tmp_path, monkeypatch, files: dict[str, str]):
    """A plain-Coq project of ``files`` (in that order) under ``tmp_path``, built into its kept directory."""
    monkeypatch.delenv("SYMUAT_COQ_BUILD", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = tmp_path / "coq"
    root.mkdir()
    (root / "_CoqProject").write_text("-Q . Tiny\n" + "".join(f"{name}\n" for name in files))
    for name, text in files.items():
        (root / name).write_text(text)
    project = CoqProject.read(root)
    with built_project(project, tmp_path / "keep") as (build, why):
        assert build is not None, why
    return project, tmp_path / "keep", build


_A = "Lemma two : 1 + 1 = 2.\nProof. reflexivity. Qed.\n"


@pytest.fixture
def kept(coqc, tmp_path, monkeypatch):
    return _kept_build(tmp_path, monkeypatch, {"A.v": _A})


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_corrupted_kept_build_is_compiled_again_never_loaded(kept, case):
    project, keep, build = kept
    CASES[case](build)
    planted = (build / "A.vo").read_bytes() if (build / "A.vo").exists() else None
    assert check_theorems(project, ["A.two"], keep)["A.two"].closed is True
    assert build.name == build_stamp(project)
    assert (build / _MANIFEST).is_file() and not (build / "Evil.vo").exists()
    assert (build / "A.vo").is_file() and (case != "vo_edited" or (build / "A.vo").read_bytes() != planted)
    with built_project(project, keep) as (again, _):  # the fresh build verifies: reused as it is
        assert again == build


def test_an_unwritable_keep_directory_compiles_into_a_temporary_one(kept, tmp_path):
    project, _, _ = kept
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with built_project(project, blocker / "keep") as (build, why):
        assert build is not None and why == "" and not build.is_relative_to(blocker)
    assert blocker.read_text() == "not a directory"


def _manifest(build) -> dict:
    return json.loads((build / _MANIFEST).read_bytes().partition(b"\n")[2])


@pytest.fixture
def donor(coqc, tmp_path, monkeypatch):
    """A kept build of a two-file project (``B.v`` requires ``A.v``), and the project with ``B.v`` edited: a new
    build may copy ``A.v``'s compiled files from the kept one."""
    project, keep, build = _kept_build(tmp_path, monkeypatch, {
        "A.v": _A, "B.v": "From Tiny Require Import A.\nLemma four : 2 + 2 = 4.\nProof. reflexivity. Qed.\n"})
    (project.root / "B.v").write_text("From Tiny Require Import A.\nLemma five : 2 + 3 = 5.\n"
                                      "Proof. reflexivity. Qed.\n")
    return CoqProject.read(project.root), keep, build


def test_a_verified_kept_build_gives_the_unchanged_files(donor):
    project, keep, old = donor
    assert _manifest(old)["reused"] == []
    with built_project(project, keep) as (build, why):
        assert build != old and _manifest(build)["reused"] == ["A.v"], why
    assert all(r.closed is True for r in check_theorems(project, ["A.two", "B.five"], keep).values())


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_corrupted_kept_build_gives_nothing(donor, case):
    project, keep, old = donor
    CASES[case](old)
    with built_project(project, keep) as (build, why):
        assert build is not None and _manifest(build)["reused"] == [], why
        assert not (build / "Evil.vo").exists()
    assert check_theorems(project, ["A.two", "B.five"], keep)["B.five"].closed is True


def test_a_file_that_changed_after_its_build_was_verified_is_compiled_not_copied(donor, tmp_path):
    """The copy is checked against the digest the verified manifest lists (a file replaced in between)."""
    _, _, old = donor
    digests = _manifest(old)["files"]
    (tmp_path / "work").mkdir()
    assert _copied("A.v", old, digests, tmp_path / "work") is True
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["A.glob", "A.vo", "A.vok", "A.vos"]
    _append(old / "A.vo", b"\0")
    (tmp_path / "again").mkdir()
    assert _copied("A.v", old, digests, tmp_path / "again") is False
    assert list((tmp_path / "again").iterdir()) == []


def test_a_change_reaches_exactly_the_files_that_require_it(donor):
    project, _, _ = donor
    before = unit_stamps(project)
    (project.root / "A.v").write_text("Lemma two : 1 + 1 = 2.\nProof. simpl. reflexivity. Qed.\n")
    after = unit_stamps(project)
    assert before["A.v"] != after["A.v"] and before["B.v"] != after["B.v"]
    (project.root / "B.v").write_text("From Tiny Require Import A.\nLemma six : 3 + 3 = 6.\nProof. auto. Qed.\n")
    assert unit_stamps(project)["A.v"] == after["A.v"] and unit_stamps(project)["B.v"] != after["B.v"]
