"""The Coq/MathComp development in ``coq/`` compiles, uses no axiom and admits nothing; its mutants fail.

* every main file compiles with ``Print Assumptions`` of its theorems appended, each closed;
* the Coq links of the ledger (``derivations/_coq_links.py``) name existing entries and theorems, ``negation``
  exactly for errata;
* every mutated table row in ``coq/mutants/`` is refuted (its refutation compiles, closed) or ill-typed (coqc fails
  on the mutated line), and SymPy's table check kills the same mutation (symuat.soundness.mutants);
* every mutated ``ext`` statement in ``coq/mutants/ext/`` likewise, and the symbolic level refutes its twin claim
  (the entry's identity with the derivation's wrong right-hand side).

Skipped when ``coqc`` is missing; fails instead when ``SYMUAT_REQUIRE_COQ=1`` (CI).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from symuat.ledger.coq import CoqProject, built_project, check_theorems

COQ = Path(__file__).resolve().parent.parent / "coq"
MUTANTS = COQ / "mutants"
FLAGS = ["-w", "-notation-overridden", "-w", "-ambiguous-paths"]
#: The theorems docs/coq.md and the ledger's Coq links name, by file.
THEOREMS = {
    "Kronecker": ["mxvec_index_row_major", "vec_r_mul", "vec_r_mulr", "vec_r_mull", "kron_mul", "kron_tr"],
    "MultiHead": ["mha_sum", "mha_closed_form"],
    "Paths": ["eq10_heads", "eq10_paths1", "kron11", "size_paths", "stack_paths", "A_tilde_paths"],
    "Density": ["nnz_kron", "nnz_1", "nnz_full", "fig3_count", "fig3_density"],
    "Diamond": ["diamond_tr", "diamond_chain", "diamond_addl", "diamond_addr", "diamond_distributive"],
    "DUAT": ["eq20", "eq21", "lemma1", "A_tilde_row", "c_tilde_row", "U_tilde_new", "U_tilde_carried",
             "V_tilde_row", "beta_tilde_row", "R_tilde_row", "R_tilde_step", "duat_box_form", "duat_expansion",
             "fig2_box"],
    "Erratum": ["eq11_rule4_refuted", "printed_rule_agrees_below_depth_3", "fig2_row3_refuted"],
    "Block": ["attention_vec", "ffn_vec", "rms_norm_vec", "layer_norm_vec", "layer_norm_affine", "rms_norm_affine",
              "pre_ln_eq20", "post_ln_eq20", "parallel_eq20", "paper_eq20", "standard_eq20", "sublayer_eq20"],
    "Transformer": ["pre_ln_net", "pre_ln_transformer_duat", "post_ln_net", "post_ln_transformer_duat",
                    "parallel_net", "parallel_table", "parallel_transformer_duat"],
    "Gated": ["gated_table", "Rg_tilde_step", "gated_duat_expansion"],
    "InputFinal": ["R_in_row", "input_duat_expansion", "input_final_duat_expansion"],
    "Layouts": ["vec_r_hadamard", "gated_ffn_vec", "block_layouts_eq20"],
    "GatedTransformer": ["gated_block_box", "gated_stack_net", "gated_transformer_duat"],
    "ExtAttention": ["kron_col", "concat_mul", "attention_rows_vec", "sink_attention_vec", "sink_a_vec",
                     "mla_attention", "mla_vec", "cross_attention_vec", "decoder_eq20"],
    "Decoder": ["ext_net_net", "c_tilde_ext", "beta_tilde_ext", "beta_tilde_ext_split", "ext_duat_expansion",
                "decoder_ext_net", "decoder_net", "decoder_duat"],
    "Alibi": ["count_from", "alibi_positions", "window_full", "alibi_weights", "alibi_closed_form", "softmax_shift",
              "softmax_masked", "alibi_relative_closed_form"],
    "MoE": ["dispatch_gate_form", "gate_unchosen", "gate_form_unselected", "unselected_experts"],
    "ExtMasks": ["masked_attention_vec", "masked_a_vec"],
    "ExtGranite": ["attention_scale", "ffn_scale", "granite_fold", "granite_eq20"],
    "Buckets": ["count_prefix", "count_down", "threshold_spec", "bernoulli", "log_floor_spec", "threshold_count",
                "bucket_log_threshold"],
}
CLOSED = "Closed under the global context"

def _files() -> list[str]:
    lines = (COQ / "_CoqProject").read_text().split()
    return [f for f in lines if f.endswith(".v")]


def _coqc() -> str:
    coqc = shutil.which("coqc")
    if coqc is None:
        if os.environ.get("SYMUAT_REQUIRE_COQ") == "1":
            pytest.fail("SYMUAT_REQUIRE_COQ=1 but coqc is not installed")
        pytest.skip("coqc is not installed")
    return coqc


def _run(coqc: str, path: Path, cwd: Path, root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([coqc, *FLAGS, "-Q", str(root), "Symuat", path.name], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def duat_root() -> Path:
    """The compiled project (DUAT.v among it), which the mutants import; shared with the session's audit
    (``$SYMUAT_COQ_BUILD``, tests/conftest.py)."""
    _coqc()
    with built_project(CoqProject.read(COQ)) as (built, why):
        assert built is not None, why
        yield built


def test_project_lists_every_file():
    assert sorted(_files()) == sorted(p.name for p in COQ.glob("*.v"))
    assert sorted(f.removesuffix(".v") for f in _files()) == sorted(THEOREMS)


@pytest.mark.parametrize("name", sorted(str(p.relative_to(COQ)) for p in COQ.rglob("*.v")))
def test_no_admitted_proof_or_axiom(name):
    text = re.sub(r"\(\*.*?\*\)", "", (COQ / name).read_text(), flags=re.S)
    assert not re.search(r"\b(Admitted|admit|Axiom|Axioms|Parameter|Parameters|Hypothesis|Hypotheses|Conjecture)\b",
                         text)


@pytest.mark.xdist_group("coq")  # one worker compiles coq/ (the session audit's Coq check reuses the build)
def test_lemmas_compile_and_are_closed(duat_root):
    """Every file compiles and every named theorem exists and is closed under the global context (no axiom)."""
    names = [f"{file}.{name}" for file, theorems in THEOREMS.items() for name in theorems]
    results = check_theorems(CoqProject.read(COQ), names)
    assert {n: r.reason for n, r in results.items() if r.closed is not True} == {}
    assert len(results) == len(names)


def test_ledger_links_name_entries_and_theorems():
    """Every link (symuat_paper._coq_links) names a ledger entry and a checked theorem; ``negation`` exactly for
    errata; 25 or more."""
    from symuat_paper._coq_links import COQ_LINKS

    from symuat.ledger.entry import Status
    from symuat.ledger.registry import load_entries

    entries = {e.id: e for e in load_entries()}
    assert len(COQ_LINKS) >= 25
    for entry_id, (link, note) in COQ_LINKS.items():
        assert entry_id in entries and entries[entry_id].coq == link, entry_id
        assert isinstance(note, str) and note, entry_id
        file, name = link.theorem.split(".")
        assert name in THEOREMS[file], link
        assert re.search(rf"\b(Theorem|Lemma|Corollary)\s+{re.escape(name)}\b", (COQ / f"{file}.v").read_text())
        assert link.negation == (entries[entry_id].status is Status.ERRATUM), link
    from symuat_paper._coq_links import CORRECTION_LINKS

    assert set(CORRECTION_LINKS) >= {"duat:appB.fig2", "duat:appB.fig2.box2.row3"}
    for entry_id, (link, note) in CORRECTION_LINKS.items():  # an erratum's correction, stated (never negated)
        entry = entries[entry_id]
        assert entry.status is Status.ERRATUM and entry.correction.coq == link and not link.negation, entry_id
        file, name = link.theorem.split(".")
        assert isinstance(note, str) and note and name in THEOREMS[file], link


#: The standard library's assumptions of the classical reals (Coq 8.16), on which every use of ``Reals`` rests.
REAL_AXIOMS = {"ClassicalDedekindReals.sig_forall_dec", "ClassicalDedekindReals.sig_not_dec",
               "FunctionalExtensionality.functional_extensionality_dep", "Classical_Prop.classic"}


@pytest.mark.slow  # a real-number file outside the project: Reals loaded for one check (4 s)
@pytest.mark.xdist_group("coq")
def test_bucket_real_number_step_rests_on_the_classical_reals_only(duat_root, tmp_path):
    """coq/reals/BucketsReals.v (outside the project: Reals is not closed) proves, over Coq's real numbers, that
    Buckets.log_floor is the floor of c ln(d/E)/ln(D/E), Buckets.threshold the ceiling of E (D/E)^(j/c), and the
    printed bucket the threshold form; it compiles against the built project and rests on exactly the standard
    library's four assumptions of the classical reals, nothing else."""
    coqc = _coqc()
    names = ("log_real_spec", "log_floor_real", "threshold_real", "bucket_real_threshold")
    text = (COQ / "reals" / "BucketsReals.v").read_text()
    assert all(re.search(rf"\bTheorem\s+{n}\b", text) for n in names)
    (tmp_path / "BucketsReals.v").write_text(text + "".join(f"\nPrint Assumptions {n}." for n in names) + "\n")
    run = _run(coqc, tmp_path / "BucketsReals.v", tmp_path, duat_root)
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}"
    blocks = run.stdout.split("Axioms:")[1:]
    assert len(blocks) == len(names), run.stdout
    for block in blocks:
        assert {line.split()[0] for line in block.splitlines() if line[:1].isalpha()} == REAL_AXIOMS, block


def _mutant_header(path: Path) -> tuple[str, str | None, tuple[str, str, str]]:
    text = path.read_text()
    expect = re.search(r"expect: (refuted (\w+)|ill-typed)", text)
    assert expect, path.name
    row, operator, definition = (s.strip() for s in re.search(r"symuat-mutant: (.*?) \*\)", text).group(1).split("|"))
    return ("refuted" if expect.group(2) else "ill-typed"), expect.group(2), (row, operator, definition)


MUTANT_FILES = sorted(p.name for p in MUTANTS.glob("*.v"))


def test_mutant_sample_is_present():
    kinds = {_mutant_header(MUTANTS / f)[0] for f in MUTANT_FILES}
    assert len(MUTANT_FILES) >= 4 and kinds == {"refuted", "ill-typed"}


def _assert_coq_outcome(path: Path, kind: str, theorem: str | None, root: Path, tmp_path: Path) -> None:
    """``path``'s refutation ``theorem`` compiles, closed; or (``ill-typed``) coqc fails with a type error on the line
    marked ``MUTATED``."""
    coqc = _coqc()
    text = path.read_text()
    if kind == "refuted":
        (tmp_path / path.name).write_text(text + f"\nPrint Assumptions {theorem}.\n")
        run = _run(coqc, tmp_path / path.name, tmp_path, root)
        assert run.returncode == 0, f"{path.name}:\n{run.stdout}\n{run.stderr}"
        assert run.stdout.count(CLOSED) == 1, run.stdout
        return
    (tmp_path / path.name).write_text(text)
    run = _run(coqc, tmp_path / path.name, tmp_path, root)
    assert run.returncode != 0
    marked = [i for i, line in enumerate(text.splitlines(), 1) if "(* MUTATED *)" in line]
    where = re.search(r'File "[^"]*", line (\d+)', run.stderr + run.stdout)
    assert where and [int(where.group(1))] == marked, run.stderr
    assert "has type" in run.stderr + run.stdout  # a type error, not a syntax error


@pytest.mark.slow  # a mutation sweep, one coqc run (about 1.3 s) per mutant: CI's slow step (docs/testing.md)
@pytest.mark.xdist_group("coq")
@pytest.mark.parametrize("name", MUTANT_FILES)
def test_mutant_is_refuted_or_ill_typed(name, duat_root, tmp_path):
    """A mutated table row: its refutation compiles (closed), or coqc rejects the mutated line as ill-typed."""
    kind, theorem, _ = _mutant_header(MUTANTS / name)
    _assert_coq_outcome(MUTANTS / name, kind, theorem, duat_root, tmp_path)


@pytest.mark.parametrize("name", MUTANT_FILES)
def test_sympy_table_check_kills_the_same_mutant(name):
    """The mutation of the Coq file, applied by symuat.soundness.mutants to the depth-3 table, fails verify_table;
    the unmutated table passes."""
    from symuat.expansion import substitution_table
    from symuat.expansion.proof import verify_table
    from symuat.soundness.mutants import table_mutants

    _, _, (row, operator, definition) = _mutant_header(MUTANTS / name)
    table = substitution_table(3)
    assert verify_table(table).holds
    found = [m for m in table_mutants(table)
             if m.source == row and m.operator == operator and str(m.claim.definition(row)) == definition]
    assert len(found) == 1, (row, operator, definition)
    assert not verify_table(found[0].claim).holds


EXT_MUTANT_FILES = sorted(p.name for p in (MUTANTS / "ext").glob("*.v"))


def _ext_mutant_header(path: Path) -> tuple[str, str | None, str, str]:
    """(kind, theorem, entry id, ``module.function`` of the derivation's wrong right-hand side)."""
    text = path.read_text()
    expect = re.search(r"expect: (refuted (\w+)|ill-typed)", text)
    twin = re.search(r"symuat-entry-mutant: (\S+) \| (\w+)\.(\w+) \*\)", text)
    assert expect and twin, path.name
    return ("refuted" if expect.group(2) else "ill-typed"), expect.group(2), twin.group(1), twin.group(2, 3)


#: The Coq files of ``ext`` entries beyond the paper's blocks: each entry they state has a mutant in mutants/ext/.
EXT_FILES = ("ExtAttention", "Decoder", "Alibi", "MoE", "ExtMasks", "ExtGranite")


def test_ext_mutants_cover_the_linked_ext_boxes():
    """One mutant per ``ext`` entry whose link is in one of :data:`EXT_FILES` (ExtAttention.v, Decoder.v, Alibi.v,
    MoE.v, ExtMasks.v, ExtGranite.v), refuted ones and an ill-typed one."""
    from symuat_paper._coq_links import COQ_LINKS

    headers = [_ext_mutant_header(MUTANTS / "ext" / f) for f in EXT_MUTANT_FILES]
    linked = {i for i, (link, _) in COQ_LINKS.items() if link.theorem.split(".")[0] in EXT_FILES}
    assert sorted(h[2] for h in headers) == sorted(linked) and len(linked) == 10
    assert {h[0] for h in headers} == {"refuted", "ill-typed"}


@pytest.mark.slow  # a mutation sweep, one coqc run per mutant: CI's slow step
@pytest.mark.xdist_group("coq")
@pytest.mark.parametrize("name", EXT_MUTANT_FILES)
def test_ext_mutant_is_refuted_or_ill_typed(name, duat_root, tmp_path):
    """A mutated ``ext`` statement: its refutation over Q compiles (closed), or coqc rejects it as ill-typed."""
    kind, theorem, _, _ = _ext_mutant_header(MUTANTS / "ext" / name)
    _assert_coq_outcome(MUTANTS / "ext" / name, kind, theorem, duat_root, tmp_path)


@pytest.mark.parametrize("name", EXT_MUTANT_FILES)
def test_symbolic_level_refutes_the_same_ext_mutant(name):
    """The entry's identity with the derivation's wrong right-hand side (at the grid sizes where both sides are
    defined: the decoder-stream reading needs N = N_e) is refuted by the symbolic level, the entry itself proved."""
    import dataclasses
    import importlib

    from symuat import check_identity
    from symuat.evidence.verdict import Level
    from symuat.ledger.registry import load_entries

    _, _, entry_id, (module, function) = _ext_mutant_header(MUTANTS / "ext" / name)
    claim = {e.id: e for e in load_entries()}[entry_id].claim
    wrong = getattr(importlib.import_module(f"symuat_paper.{module}"), function)
    mutant = dataclasses.replace(claim, rhs=wrong, reference=None)
    if hasattr(claim, "dims"):  # an Identity's grid; an OpaqueIdentity has cases, every one defined for both sides
        mutant = dataclasses.replace(mutant, dims=tuple(d for d in claim.dims if d.get("Ne", d["N"]) == d["N"]))
    assert [ev.holds for ev in check_identity(claim, levels=(Level.SYMBOLIC,)).decided] == [True]
    assert [ev.holds for ev in check_identity(mutant, levels=(Level.SYMBOLIC,)).decided] == [False]
