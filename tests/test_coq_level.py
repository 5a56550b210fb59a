"""The ``coq`` evidence level (symuat.ledger.coq): a tiny Coq project for each outcome, and the shipped ledger's
links, every one of them decided by the session's audit when coqc is installed (required in CI)."""

from __future__ import annotations

import dataclasses
import shutil

import pytest
from click.testing import CliRunner

from symuat import CoqLink, Correction, Entry, Evidence, Identity, Level, Source, Status, dims_grid
from symuat.cli import main
from symuat.errors import LedgerError
from symuat.ledger.audit import AuditRecord, audit_entry, with_correction_coq
from symuat.ledger.cache import audit_ledger
from symuat.ledger.coq import LEFT_OUT, CoqProject, CoqResult, built_project, check_theorems, coq_evidence, find_project
from symuat.ledger.text import explain


@pytest.fixture(scope="module")
def tiny(coqc, tmp_path_factory):
    """A plain-Coq project: a closed lemma, one resting on an axiom, and a second file importing the first."""
    root = tmp_path_factory.mktemp("coqproj") / "coq"
    root.mkdir()
    (root / "_CoqProject").write_text("-Q . Tiny\nA.v\nB.v\n")
    (root / "A.v").write_text("Lemma two : 1 + 1 = 2.\nProof. reflexivity. Qed.\n"
                              "Axiom magic : forall n : nat, n = 0.\nLemma zero : 5 = 0.\nProof. apply magic. Qed.\n")
    (root / "B.v").write_text("From Tiny Require Import A.\nLemma four : 2 + 2 = 4.\nProof. reflexivity. Qed.\n")
    return CoqProject.read(root)


def test_a_closed_theorem_holds_and_the_others_say_why(tiny):
    out = check_theorems(tiny, ["A.two", "B.four", "A.zero", "A.nothing"])
    assert out["A.two"].closed is True and out["B.four"].closed is True
    assert out["A.zero"].closed is None and "rests on assumptions" in out["A.zero"].reason
    assert "magic" in out["A.zero"].reason
    assert out["A.nothing"].closed is None and out["A.nothing"].reason.startswith("not found")


def test_all_found_and_one_on_an_axiom_names_the_axiom_for_that_theorem_only(tiny):
    """Every name is found, so the assumptions of their tuple are printed together (MathComp walked once); the
    tuple rests on ``magic``, so each theorem is asked about again on its own."""
    out = check_theorems(tiny, ["A.two", "B.four", "A.zero"])
    assert out["A.two"].closed is True and out["B.four"].closed is True
    assert out["A.zero"].closed is None and "magic" in out["A.zero"].reason
    assert check_theorems(tiny, ["A.two", "B.four"]) == {n: out[n] for n in ("A.two", "B.four")}
    assert check_theorems(tiny, []) == {}


def test_a_project_that_does_not_compile_decides_nothing(tiny, tmp_path):
    shutil.copytree(tiny.root, tmp_path / "coq")
    (tmp_path / "coq" / "B.v").write_text("Lemma broken : 1 = 2.\nProof. reflexivity. Qed.\n")
    out = check_theorems(CoqProject.read(tmp_path / "coq"), ["A.two"])
    assert out["A.two"].closed is None and out["A.two"].reason.startswith("coq/B.v does not compile")


def test_a_loaded_file_of_section_variables_is_copied_and_part_of_the_build(coqc, tmp_path, monkeypatch):
    """``Load Vars.`` inside a section (coq/shared/DUATVariables.v): found below the root, copied beside the
    compiled files, and a change to it is a different build of ``$SYMUAT_COQ_BUILD``."""
    root = tmp_path / "coq"
    (root / "shared").mkdir(parents=True)
    (root / "_CoqProject").write_text("-Q . Tiny\nA.v\n")
    (root / "shared" / "Vars.v").write_text("Variable k : nat.\n")
    (root / "A.v").write_text("Section S.\nLoad Vars.\nLemma same : k = k.\nProof. reflexivity. Qed.\nEnd S.\n")
    project = CoqProject.read(root)
    assert project.files == ("A.v",) and project.loaded == ("shared/Vars.v",)
    monkeypatch.setenv("SYMUAT_COQ_BUILD", str(tmp_path / "build"))
    assert check_theorems(project, ["A.same"])["A.same"].closed is True
    (root / "shared" / "Vars.v").write_text("Variable k : bool.\n")
    assert check_theorems(CoqProject.read(root), ["A.same"])["A.same"].closed is True
    assert len([p for p in (tmp_path / "build").iterdir() if not p.name.startswith(".")]) == 2
    (root / "shared" / "Vars.v").write_text("Variable k : nat\n")  # no final dot: A.v does not compile
    out = check_theorems(CoqProject.read(root), ["A.same"])["A.same"]
    assert out.closed is None and out.reason.startswith("coq/A.v does not compile")


def test_a_kept_build_is_reused_only_while_its_signed_manifest_verifies(tiny, tmp_path, monkeypatch):
    """``.vo`` files reused by content hash (``symuat audit`` keeps them in its cache directory): a build whose files
    changed after it was sealed is compiled again, never loaded."""
    monkeypatch.delenv("SYMUAT_COQ_BUILD", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    keep = tmp_path / "keep"
    with built_project(tiny, keep) as (first, why):
        assert first is not None and first.parent == keep, why
    vo = first / "A.vo"
    sealed = vo.stat().st_mtime_ns
    with built_project(tiny, keep) as (again, _):
        assert again == first and vo.stat().st_mtime_ns == sealed  # reused: not compiled again
    vo.write_bytes(vo.read_bytes() + b"\0")  # tampered
    assert check_theorems(tiny, ["A.two"], keep)["A.two"].closed is True
    assert vo.stat().st_mtime_ns != sealed and not vo.read_bytes().endswith(b"\0")  # compiled again
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "other-user"))  # another key: the manifest does not verify
    before = vo.stat().st_mtime_ns
    with built_project(tiny, keep) as (other, _):
        assert other == first and vo.stat().st_mtime_ns != before


def test_without_coqc_the_level_is_not_run(tiny, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert check_theorems(tiny, ["A.two"])["A.two"] == CoqResult(None, "not run: coqc is not installed")


def test_the_project_is_found_beside_the_derivations_or_by_the_environment(tiny, tmp_path, monkeypatch):
    monkeypatch.delenv("SYMUAT_COQ_DIR", raising=False)
    assert find_project(tiny.root.parent / "derivations").root == tiny.root
    assert find_project(tmp_path) is None
    monkeypatch.setenv("SYMUAT_COQ_DIR", str(tiny.root))
    assert find_project(tmp_path).files == ("A.v", "B.v")


def _proved_entry(link: CoqLink) -> Entry:
    claim = Identity(shapes=lambda d: {"A": (d["n"], d["n"])}, lhs=lambda e, d: e["A"] + e["A"],
                     rhs=lambda e, d: 2 * e["A"], dims=dims_grid(n=(1, 2)))
    return Entry("duat:eq7", Source("duat", "Eq. 7"), "2A = A + A", Status.PROVED, claim, coq=link)


def test_coq_evidence_joins_the_record_and_a_contradiction_leaves_no_status():
    agree = audit_entry(_proved_entry(CoqLink("A.two")), coq=coq_evidence(CoqLink("A.two"), CoqResult(True, "closed")))
    assert agree.computed is Status.PROVED and agree.evidence[-1].level is Level.COQ
    assert agree.evidence[-1].to_json()["theorem"] == "A.two" and "coq ✓" in explain(agree)
    link = CoqLink("A.two", negation=True)
    clash = audit_entry(_proved_entry(link), coq=coq_evidence(link, CoqResult(True, "closed")))
    assert clash.computed is None and clash.reason.startswith("the coq level disagrees")
    not_run = coq_evidence(link, CoqResult(None, "not run: coqc is not installed"))
    unknown = audit_entry(_proved_entry(link), coq=not_run)
    assert unknown.computed is Status.PROVED and "coq ?" in explain(unknown)


def test_a_statement_its_coq_theorem_proves_is_not_proved_on_a_grid_only():
    """All sizes undecided (proved on its grid): ``proved (grid …)`` unless the Coq theorem holds (every size); an
    undecided Coq verdict leaves the grid."""
    entry = _proved_entry(CoqLink("A.two"))
    grid = Evidence(Level.ALL_SIZES, None, "undecided: a loop over h", grid={"h": 2})
    coq = {holds: coq_evidence(CoqLink("A.two"), CoqResult(holds, "closed" if holds else "not run"))
           for holds in (True, None)}
    assert coq[True].holds is True and coq[None].holds is None
    on_grid = AuditRecord(entry, Status.PROVED, (grid, coq[None]), "")
    assert on_grid.grid == {"h": 2} and on_grid.status_label == "proved (grid h ≤ 2)"
    every_size = AuditRecord(entry, Status.PROVED, (grid, coq[True]), "")
    assert every_size.grid is None and every_size.status_label == "proved"
    assert every_size.to_json()["grid"] is None


def test_a_corrections_coq_evidence_joins_its_evidence_and_an_unclosed_theorem_is_undecided():
    good = Identity(shapes=lambda d: {"A": (d["n"], d["n"])}, lhs=lambda e, d: e["A"] + e["A"],
                    rhs=lambda e, d: 2 * e["A"], dims=dims_grid(n=(1, 2)))
    bad = dataclasses.replace(good, rhs=lambda e, d: 3 * e["A"])
    entry = Entry("duat:eq7", Source("duat", "Eq. 7"), "3A = A + A", Status.ERRATUM, bad,
                  correction=Correction("2A", good, coq=CoqLink("A.two")))
    record = audit_entry(entry)
    proved = with_correction_coq(record, coq_evidence(entry.correction.coq, CoqResult(True, "closed"),
                                                      what="the corrected statement"))
    assert proved.computed is Status.ERRATUM and proved.correction_evidence[-1].level is Level.COQ
    assert "states the corrected statement" in proved.correction_evidence[-1].detail
    unknown = with_correction_coq(record, coq_evidence(entry.correction.coq, CoqResult(None, "rests on an axiom")))
    assert unknown.computed is Status.ERRATUM and unknown.correction_evidence[-1].holds is None
    with pytest.raises(LedgerError, match="a correction's coq must be a CoqLink that states it"):
        Correction("2A", good, coq=CoqLink("A.two", negation=True))
    with pytest.raises(LedgerError, match="a correction's coq must be a CoqLink"):
        Correction("2A", good, coq="A.two")


@pytest.mark.parametrize("name", ["duat_expansion", "DUAT.", "duat.x", "DUAT.x y", ""])
def test_a_malformed_theorem_name_is_refused(name):
    with pytest.raises(LedgerError, match="a Coq theorem is named '<File>.<name>'"):
        CoqLink(name)


@pytest.mark.xdist_group("audit")
def test_every_linked_entry_of_the_session_audit_has_a_decided_coq_verdict(coqc, audited):
    linked = [(r, ev) for r in audited for ev in r.evidence if ev.level is Level.COQ]
    assert len(linked) >= 25
    for record, ev in linked:
        assert ev.holds is not None, (record.entry.id, ev.detail)
        assert record.agrees, record.entry.id
        printed_true = record.entry.status is not Status.ERRATUM
        assert ev.holds == (printed_true != (record.entry.kind == "denial")), record.entry.id
    assert {r.entry.id for r, _ in linked} >= {"duat:eq11", "duat:eq33", "duat:eq20", "duat:appB.fig2",
                                                "duat:eq11.part2.rule4", "duat:eq10", "duat:eq28",
                                                "ext:block-layouts.eq20", "ext:gated-ffn.induction",
                                                "ext:parallel-block.induction", "duat:eq3"}
    fixed = {r.entry.id: ev for r in audited for ev in r.correction_evidence if ev.level is Level.COQ}
    assert set(fixed) == {"duat:appB.fig2", "duat:appB.fig2.box2.row3", "duat:eq11.part2.rule4",
                          "duat:eq33.part2.rule4"}
    assert all(ev.holds and ev.theorem == "DUAT.fig2_box" for ev in fixed.values())


def _write_linked_derivation(directory) -> None:
    """A derivation directory with one proved entry linked to the Coq theorem ``A.two`` (the ``tiny`` project)."""
    directory.mkdir()
    (directory / "eq7.py").write_text(
        "from symuat import CoqLink, Entry, Identity, Source, Status, dims_grid\n"
        "def entries():\n"
        "    claim = Identity(shapes=lambda d: {'A': (d['n'], d['n'])}, lhs=lambda e, d: e['A'] + e['A'],\n"
        "                     rhs=lambda e, d: 2 * e['A'], dims=dims_grid(n=(1, 2)))\n"
        "    return [Entry('duat:eq7', Source('duat', 'Eq. 7'), '2A = A + A', Status.PROVED, claim,\n"
        "                  coq=CoqLink('A.two'))]\n")


def test_an_audit_that_leaves_coq_out_decides_no_theorem_and_never_stands_for_one_that_checks_it(tiny, tmp_path,
                                                                                                 monkeypatch):
    shutil.copytree(tiny.root, tmp_path / "coq")
    _write_linked_derivation(tmp_path / "derivations")
    monkeypatch.setenv("SYMUAT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SYMUAT_COQ_DIR", raising=False)
    with monkeypatch.context() as without_coqc:  # left out: coqc is never asked
        without_coqc.setenv("PATH", "/nonexistent")
        (left,) = audit_ledger(directory=tmp_path / "derivations", coq=False, jobs=1)
    coq = [e for e in left.evidence if e.level is Level.COQ]
    assert [(e.holds, e.detail) for e in coq] == [(None, f"{LEFT_OUT} (Coq theorem A.two)")]
    assert left.computed is Status.PROVED  # the other levels decide
    (checked,) = audit_ledger(directory=tmp_path / "derivations", jobs=1)  # the cached left-out record is not read
    assert [e.holds for e in checked.evidence if e.level is Level.COQ] == [True]
    (again,) = audit_ledger(directory=tmp_path / "derivations", coq=False, jobs=1)  # nor the checked one
    assert [e.holds for e in again.evidence if e.level is Level.COQ] == [None]
    printed = CliRunner().invoke(main, ["audit", "--no-coq", "--quiet", "--derivations", str(tmp_path / "derivations")])
    assert printed.exit_code == 0, printed.output
    assert "coq ?" in printed.output and "(the Coq level left out: coq ? on each linked theorem)" in printed.output


def test_without_a_coq_project_a_left_out_audit_is_still_kept_apart(tmp_path, monkeypatch):
    """No coq/ beside the derivations: both audits leave the theorem undecided, each with its own reason, and the
    cache never hands one's record to the other."""
    _write_linked_derivation(tmp_path / "derivations")
    monkeypatch.setenv("SYMUAT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SYMUAT_COQ_DIR", raising=False)
    details = []
    for coq in (False, True, False):
        (record,) = audit_ledger(directory=tmp_path / "derivations", coq=coq, jobs=1)
        details += [e.detail for e in record.evidence if e.level is Level.COQ and e.holds is None]
    assert details[0] == details[2] == f"{LEFT_OUT} (Coq theorem A.two)"
    assert details[1] != details[0] and details[1].startswith("not run: ")
