"""Hostile kept Coq builds (symuat.ledger.coq_build): a build is loaded only while its signed manifest verifies.

Each case corrupts a sealed build of a tiny plain-Coq project in the kept directory, then asks for the project
again: the exact expected outcome is a fresh compile (the planted bytes are gone, the theorem is still found closed),
never a load of what was planted.  Skipped without ``coqc``; fails instead with ``SYMUAT_REQUIRE_COQ=1`` (CI).
"""

from __future__ import annotations

import pytest

from symuat.ledger.coq import CoqProject, check_theorems
from symuat.ledger.coq_build import build_stamp, built_project

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


@pytest.fixture
def kept(coqc, tmp_path, monkeypatch):
    monkeypatch.delenv("SYMUAT_COQ_BUILD", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = tmp_path / "coq"
    root.mkdir()
    (root / "_CoqProject").write_text("-Q . Tiny\nA.v\n")
    (root / "A.v").write_text("Lemma two : 1 + 1 = 2.\nProof. reflexivity. Qed.\n")
    project = CoqProject.read(root)
    with built_project(project, tmp_path / "keep") as (build, why):
        assert build is not None, why
    return project, tmp_path / "keep", build


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
