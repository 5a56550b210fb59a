"""Bad input end to end: every CLI command and the main public functions, with malformed arguments.

Each case must give one clear line, a :class:`symuat.SymuatError` (exit code 2 on the
command line), and leave nothing half-written.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import sympy
from click.testing import CliRunner

import symuat
from symuat import (
    DerivationError,
    Entry,
    Identity,
    InvalidValueError,
    LedgerError,
    ShapeError,
    Source,
    Status,
    SymuatError,
    check_identity,
    dims_grid,
    load_entries,
    substitution_table,
    symbolic_matrix,
)
from symuat.cli import main
from symuat.evidence.fields import PrimeField, evaluate
from symuat.expansion import induction_proof, verify_depth
from symuat.latex.render import write_files


def _run(args):
    return CliRunner().invoke(main, args)


def _one_error_line(result, match: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    err = result.stderr.strip().splitlines()
    assert len(err) == 1, result.stderr
    assert err[0].startswith("symuat: error: ") and match in err[0], err[0]
    assert "Traceback" not in result.output


# --- malformed derivation modules -------------------------------------------------------------

_MODULES = {
    "syntax": ("def entries(:\n", "failed to import: SyntaxError"),
    "import": ("import no_such_module_xyz\n", "failed to import: ModuleNotFoundError"),
    "no_entries": ("X = 1\n", "defines no callable entries()"),
    "raises": ("def entries():\n    raise RuntimeError('boom')\n", "raised RuntimeError: boom"),
    "wrong_type": ("def entries():\n    return [42]\n", "returned int, expected symuat Entry"),
    "not_iterable": ("def entries():\n    return 3\n", "raised TypeError"),
    "bad_id": (textwrap.dedent("""
        from symuat import Entry, Source, Status, Prose
        def entries():
            return [Entry("duat:equation7", Source("duat", "x"), "x", Status.PROSE, Prose("r"))]
        """), "malformed entry id"),
    "bad_version": (textwrap.dedent("""
        from symuat import Entry, Source, Status, Prose
        def entries():
            return [Entry("nope:eq7", "x", "x", Status.PROSE, Prose("r"))]
        """), "unknown source version 'nope'"),
    "bad_status": (textwrap.dedent("""
        from symuat import Entry, Source, Prose
        def entries():
            return [Entry("duat:eq7", Source("duat", "x"), "x", "maybe", Prose("r"))]
        """), "unknown status 'maybe'"),
}


@pytest.mark.parametrize("case", sorted(_MODULES))
def test_audit_rejects_malformed_derivation_module(tmp_path, case):
    source, message = _MODULES[case]
    (tmp_path / f"{case}.py").write_text(source)
    _one_error_line(_run(["audit", "--derivations", str(tmp_path)]), message)


def test_a_syntax_error_names_the_file_and_line_of_the_derivation(tmp_path):
    """Not the import machinery's frame (``<frozen importlib._bootstrap>:241``)."""
    (tmp_path / "mine.py").write_text("X = 1\n\ndef entries(:\n")
    _one_error_line(_run(["audit", "--derivations", str(tmp_path)]), f"SyntaxError: invalid syntax (mine.py, line 3) "
                                                                     f"({tmp_path / 'mine.py'}:3)")


def test_audit_rejects_duplicate_ids(tmp_path):
    body = textwrap.dedent("""
        from symuat import Entry, Source, Status, Prose
        def entries():
            return [Entry("duat:eq7", Source("duat", "x"), "x", Status.PROSE, Prose("r"))]
        """)
    (tmp_path / "a.py").write_text(body)
    (tmp_path / "b.py").write_text(body)
    _one_error_line(_run(["audit", "--derivations", str(tmp_path)]), "is defined twice")


def test_audit_missing_directory(tmp_path):
    _one_error_line(_run(["audit", "--derivations", str(tmp_path / "missing")]), "does not exist")


def test_audit_empty_directory_says_no_entries_found(tmp_path):
    _one_error_line(_run(["audit", "--derivations", str(tmp_path), "--format", "json"]), "no entries found")
    (tmp_path / "_helper.py").write_text("X = 1\n")  # only private modules: still no entries
    _one_error_line(_run(["audit", "--derivations", str(tmp_path), "--no-cache"]), "no entries found")


def test_empty_directory_exits_2_in_a_real_process(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "symuat.cli", "audit", "--derivations", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "no entries found" in proc.stderr


@pytest.mark.parametrize("command", [["audit"], ["explain", "duat:eq7"], ["latex", "--out", "OUT"],
                                     ["build", "--no-pdf", "--out", "OUT"]])
@pytest.mark.parametrize("seed", ["-1", "-7"])
def test_negative_seed_is_one_line_exit_2(tmp_path, command, seed):
    args = [str(tmp_path / "out") if a == "OUT" else a for a in command]
    _one_error_line(_run([*args, "--seed", seed]), f"seed must be a non-negative integer, got {seed}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("seed", [-1, 2.5, True, "3"])
def test_audit_api_rejects_bad_seed(seed):
    entry = Entry("duat:eq7", Source("duat", "x"), "x", Status.PROSE, symuat.Prose("r"))
    with pytest.raises(InvalidValueError, match="seed must be a non-negative integer"):
        symuat.audit([entry], seed=seed)
    with pytest.raises(InvalidValueError, match="seed must be a non-negative integer"):
        symuat.audit_entry(entry, seed=seed)


@pytest.mark.parametrize("args", [["audit", "--seed", "x"], ["audit", "--format", "xml"],
                                  ["derive", "--depth", "two"], ["latex"], ["nosuchcommand"]])
def test_click_usage_errors_exit_2(args):
    result = _run(args)
    assert result.exit_code == 2
    assert result.stderr.startswith("symuat: error: ") and result.stderr.count("\n") == 1
    assert "Traceback" not in result.output and result.stdout == ""


# --- derive / build / latex -----------------------------------------------------------------

@pytest.mark.parametrize("depth", ["0", "-3"])
def test_derive_rejects_nonpositive_depth(depth):
    _one_error_line(_run(["derive", "--depth", depth]), f"Invalid value for '--depth': {depth} is not in the range "
                                                        "1<=x<=64")


@pytest.mark.parametrize("command", ["build", "latex"])
def test_unwritable_output_directory(tmp_path, command):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    out = blocker / "sub"
    args = [command, "--out", str(out)] + (["--no-pdf"] if command == "build" else [])
    _one_error_line(_run(args), "cannot create output directory")
    assert blocker.read_text() == "not a directory"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]


@pytest.mark.parametrize("command", ["build", "latex"])
def test_build_rejects_bad_depth_before_writing(tmp_path, command):
    out = tmp_path / "out"
    args = [command, "--out", str(out), "--depth", "0"] + (["--no-pdf"] if command == "build" else [])
    result = _run(args)
    _one_error_line(result, "depth")
    assert not out.exists() or not any(out.iterdir())


def test_write_files_leaves_no_temporary_files(tmp_path):
    write_files(tmp_path, {"a.tex": "x"})
    with pytest.raises(symuat.OutputError, match="cannot write"):
        write_files(tmp_path, {"b.tex": "y", "sub/c.tex": "z"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tex", "b.tex"]


def test_cli_error_is_one_line_in_a_real_process(tmp_path):
    (tmp_path / "bad.py").write_text("def entries(:\n")
    proc = subprocess.run([sys.executable, "-m", "symuat.cli", "audit", "--derivations", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("symuat: error: derivation module '")
    assert f"{tmp_path / 'bad.py'}' failed to import" in proc.stderr


# --- public functions ----------------------------------------------------------------------

@pytest.mark.parametrize("depth,error", [(0, InvalidValueError), (-1, InvalidValueError),
                                         (2.5, symuat.ArgumentTypeError), ("3", symuat.ArgumentTypeError),
                                         (True, symuat.ArgumentTypeError), (None, symuat.ArgumentTypeError)])
def test_engine_rejects_bad_depth(depth, error):
    for f in (substitution_table, verify_depth):
        with pytest.raises(error, match="depth"):
            f(depth)


@pytest.mark.parametrize("rule_layer", [0, 1, True, "3"])
def test_induction_rejects_bad_rule_layer(rule_layer):
    with pytest.raises(InvalidValueError, match="rule_layer"):
        induction_proof(rule_layer=rule_layer)


@pytest.mark.parametrize("rows,cols", [(0, 1), (1, -2)])
def test_symbolic_matrix_rejects_bad_sizes(rows, cols):
    with pytest.raises(ShapeError, match="must be a positive integer"):
        symbolic_matrix("w", rows, cols)


@pytest.mark.parametrize("rows,cols", [(1.5, 1), (True, 1)])
def test_symbolic_matrix_rejects_non_integer_sizes(rows, cols):
    with pytest.raises(symuat.ArgumentTypeError, match="rows must be an integer"):
        symbolic_matrix("w", rows, cols)


def test_identity_with_mismatched_sides_is_a_failed_level_not_a_crash():
    ident = Identity(shapes=lambda d: {"A": (d["N"], d["N"])}, lhs=lambda e, d: e["A"],
                     rhs=lambda e, d: e["A"][:, :1], dims=dims_grid(N=(2,)))
    verdict = check_identity(ident)
    assert not verdict.holds and verdict.consistent
    assert all("shapes" in ev.detail for ev in verdict.decided)


def test_identity_with_zero_dimension_fails_every_level_with_the_reason():
    ident = Identity(shapes=lambda d: {"A": (d["N"], 0)}, lhs=lambda e, d: e["A"], rhs=lambda e, d: e["A"],
                     dims=dims_grid(N=(1,)))
    verdict = check_identity(ident)
    assert not verdict.holds and verdict.consistent
    assert all("cols=0 must be a positive integer" in ev.detail for ev in verdict.decided)


def test_identity_requires_dims_and_levels():
    with pytest.raises(SymuatError, match="at least one dimension tuple"):
        Identity(shapes=lambda d: {}, lhs=None, rhs=None, dims=())
    with pytest.raises(SymuatError, match="at least one level"):
        Identity(shapes=lambda d: {}, lhs=None, rhs=None, dims=({"N": 1},), levels=())


def test_prime_field_rejects_irrational_constants():
    with pytest.raises(symuat.UnsupportedError, match="no value in F_p"):
        evaluate(sympy.sqrt(2) * sympy.Symbol("x"), {sympy.Symbol("x"): 1}, PrimeField(0))


def test_entry_rejects_erratum_without_correction():
    from symuat import Prose
    with pytest.raises(LedgerError, match="no correction"):
        Entry("duat:eq7", Source("duat", "Eq. 7"), "x", Status.ERRATUM, Prose("r"))


def test_load_entries_unknown_package():
    with pytest.raises(DerivationError, match="no_such_package_xyz"):
        load_entries(package="no_such_package_xyz")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_numeric_forward_rejects_non_finite_input(bad):
    from symuat.numeric import forward, random_stack

    stack = random_stack(np.random.default_rng(0), n_layers=1, width=4, n_heads=2, ffn_width=3)
    X = np.zeros((3, 4))
    X[1, 2] = bad
    with pytest.raises(InvalidValueError, match="X"):
        forward(stack, X)


@pytest.mark.parametrize("kwargs,match", [
    ({"n_layers": 0}, "n_layers"), ({"width": -4}, "width"), ({"n_heads": 3}, "n_heads"),
    ({"kind": "sideways"}, "kind"), ({"activation": "swish9"}, "activation"),
])
def test_random_stack_rejects_bad_arguments(kwargs, match):
    from symuat.numeric import random_stack

    args = {"n_layers": 1, "width": 4, "n_heads": 2, "ffn_width": 3, **kwargs}
    with pytest.raises(SymuatError, match=match):
        random_stack(np.random.default_rng(0), **args)


def test_numeric_forward_rejects_wrong_width():
    from symuat.numeric import forward, random_stack

    stack = random_stack(np.random.default_rng(0), n_layers=1, width=4, n_heads=2, ffn_width=3)
    with pytest.raises(ShapeError):
        forward(stack, np.zeros((3, 5)))
