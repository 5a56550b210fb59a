"""The compile graph of a Coq project (symuat.ledger.coq_graph): what each file requires, and a compile that runs
independent files at the same time but never a file before what it requires."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from symuat.ledger.coq_graph import requirements, run_in_order
from symuat.ledger.coq_project import CoqProject

FILES = ["Kronecker.v", "MultiHead.v", "DUAT.v", "Block.v"]


@pytest.mark.parametrize(("text", "want"), [
    ("From Symuat Require Import Kronecker MultiHead.", {"Kronecker.v", "MultiHead.v"}),
    ("From Symuat Require Export\n  DUAT.", {"DUAT.v"}),
    ("Require Import Symuat.DUAT.", {"DUAT.v"}),
    ("From mathcomp Require Import all_ssreflect all_algebra.", set()),
    ("(* From Symuat Require Import DUAT. *) Lemma x : True. Proof. exact I. Qed.", set()),
    ("From Symuat Require Import Unknown.", {"Kronecker.v", "MultiHead.v", "DUAT.v"}),  # not read: all before
    ("From Symuat.Sub Require Import DUAT.", {"Kronecker.v", "MultiHead.v", "DUAT.v"}),
])
def test_requirements_are_the_project_files_named(text, want):
    assert requirements(text, "Symuat", FILES, before=FILES[:3]) == want


def test_every_file_of_coq_requires_only_files_before_it():
    """The shipped project: its _CoqProject order is one the graph allows, and the graph is not a chain (some files
    compile at the same time)."""
    project = CoqProject.read(Path(__file__).resolve().parents[1] / "coq")
    needs = {f: requirements((project.root / f).read_text(), project.logical, project.files, project.files[:i])
             for i, f in enumerate(project.files)}
    assert all(needs[f] <= set(project.files[:i]) for i, f in enumerate(project.files))
    assert sum(1 for f in project.files if not needs[f]) >= 2


def test_independent_files_run_at_the_same_time_and_dependents_wait():
    started, order = {f: threading.Event() for f in "ABC"}, []

    def run(file):
        started[file].set()
        order.append(file)
        if file in "AB":  # each waits for the other: only a parallel run finishes both
            assert started["B" if file == "A" else "A"].wait(timeout=30), "A and B did not run at the same time"
        return ""

    assert run_in_order(["A", "B", "C"], {"A": frozenset(), "B": frozenset(), "C": frozenset({"A", "B"})},
                        run, jobs=2) == ""
    assert order[-1] == "C"


def test_the_first_failure_in_file_order_is_reported_and_its_dependents_never_run():
    ran = []

    def run(file):
        ran.append(file)
        if file == "A":
            time.sleep(0.2)  # finishes after B: the report still names A, the first in file order
            return "A fails"
        return "B fails" if file == "B" else ""

    needs = {"A": frozenset(), "B": frozenset(), "C": frozenset({"A"})}
    assert run_in_order(["A", "B", "C"], needs, run, jobs=2) == "A fails"
    assert "C" not in ran


def test_a_file_whose_requirement_is_never_compiled_is_named():
    why = run_in_order(["A", "B"], {"A": frozenset({"B"}), "B": frozenset({"A"})}, lambda f: "", jobs=2)
    assert why.startswith("coq/A requires a file that is not compiled first")


def test_of_the_ready_files_the_one_most_files_wait_on_starts_first():
    ran = []
    needs = {"A": frozenset(), "B": frozenset(), "C": frozenset({"B"}), "D": frozenset({"C"})}
    assert run_in_order(["A", "B", "C", "D"], needs, lambda f: ran.append(f) or "", jobs=1) == ""
    assert ran == ["B", "A", "C", "D"]
