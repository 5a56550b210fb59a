"""``--derivations`` on every command that takes it: a missing directory, a file, an empty directory and a
directory with a broken module are each one ``symuat: error:`` line with exit code 2, and nothing is written.

A prefix-less id given to ``symuat explain`` is resolved when one version has that place, and refused with the
candidates (or with a hint) otherwise.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from faults_support import one_error_line, run

#: Every command with ``--derivations``: its arguments, and whether it writes to ``--out``.
COMMANDS = {
    "audit": (["audit"], False),
    "explain": (["explain", "toy:eq1"], False),
    "build": (["build", "--no-pdf", "--out", "{out}"], True),
    "latex": (["latex", "--out", "{out}"], True),
    "html": (["html", "--out", "{out}"], True),
}


def _missing(tmp: Path) -> tuple[Path, str]:
    return tmp / "no-such-dir", "does not exist"


def _a_file(tmp: Path) -> tuple[Path, str]:
    path = tmp / "derivations.py"
    path.write_text("def entries():\n    return []\n")
    return path, "is a file"


def _empty(tmp: Path) -> tuple[Path, str]:
    path = tmp / "empty"
    path.mkdir()
    return path, "no entries found in"


def _broken(tmp: Path) -> tuple[Path, str]:
    path = tmp / "broken"
    path.mkdir()
    (path / "mine.py").write_text("def entries(:\n")
    return path, "failed to import: SyntaxError"


CASES = {"missing": _missing, "file": _a_file, "empty": _empty, "broken": _broken}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_bad_derivations_directory_is_one_error_line_and_writes_nothing(command, case, tmp_path):
    directory, expected = CASES[case](tmp_path)
    args, writes = COMMANDS[command]
    out = tmp_path / "out"
    result = run([*(a.format(out=out) for a in args), "--derivations", str(directory), "--quiet"])
    line = one_error_line(result, expected)
    assert str(directory.name) in line
    if writes:  # the output directory may be created (it is checked first), but nothing is written in it
        assert not out.exists() or not any(out.iterdir())


TOY = '''
from symuat import Entry, Identity, Paper, Status, dims_grid, register_source
register_source(Paper("{key}", "Toy {key}", authors=("A. Author",), title="Toy", equations=("eq1",)))

def _same():
    return Identity({{"A": ("n", "n")}}, lhs=lambda A: 2 * A, rhs=lambda A: A + A, dims=dims_grid(n=(1,)))

def entries():
    return [Entry("{key}:eq1", "Eq. 1", "2A = A + A", Status.PROVED, _same()),
            Entry("{key}:eq1.step1", "Eq. 1", "2A = A + A", Status.PROVED, _same())]
'''


def _papers(tmp: Path, *keys: str) -> Path:
    directory = tmp / "papers"
    directory.mkdir()
    for key in keys:
        (directory / f"{key.replace('-', '_')}.py").write_text(TOY.format(key=key))
    return directory


def test_explain_resolves_an_id_without_its_version_prefix(tmp_path):
    result = run(["explain", "eq1.step1", "--derivations", str(_papers(tmp_path, "onlyone")), "--quiet"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("onlyone:eq1.step1 — Toy onlyone, Eq. 1\n")


def test_explain_names_every_version_that_has_the_place(tmp_path):
    result = run(["explain", "eq1", "--derivations", str(_papers(tmp_path, "first", "second")), "--quiet"])
    one_error_line(result, "the place 'eq1' is in several versions; give one of first:eq1, second:eq1")


def test_explain_of_an_unknown_place_says_to_give_the_prefix(tmp_path):
    result = run(["explain", "eq9", "--derivations", str(_papers(tmp_path, "onlyone")), "--quiet"])
    one_error_line(result, "no ledger entry has the place 'eq9' in any version; give an id with its version prefix")


def test_a_derivation_that_claims_a_built_in_source_is_refused(tmp_path):
    directory = tmp_path / "impostor"
    directory.mkdir()
    (directory / "mine.py").write_text(TOY.format(key="duat"))
    result = run(["latex", "--out", str(tmp_path / "out"), "--derivations", str(directory), "--quiet"])
    one_error_line(result, "source key 'duat' is already registered as 'DUAT'")
