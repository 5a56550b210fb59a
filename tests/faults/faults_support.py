"""Shared helpers of the fault-injection suite: run the CLI in process, check the one-line error contract."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from symuat.cli import main

HEADER = "from symuat import Entry, Identity, OpaqueIdentity, Prose, Source, Status, dims_grid\nimport sympy\n"

#: A true identity whose builders the cases below corrupt one at a time.
GOOD = '''
def _claim(lhs=None, rhs=None, reference=None, shapes=None, dims=None):
    return Identity(shapes=shapes or (lambda d: {"A": (d["N"], d["N"])}),
                    lhs=lhs or (lambda e, d: 2 * e["A"]), rhs=rhs or (lambda e, d: e["A"] + e["A"]),
                    dims=dims or dims_grid(N=(1, 2)), reference=reference)

def _entry(i, **kw):
    return Entry(f"duat:eq{i}", Source("duat", f"Eq. {i}"), "2A = A + A", Status.PROVED, _claim(**kw))
'''


def write(directory: Path, body: str, name: str = "mine.py") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(HEADER + GOOD + body)
    return path


def run(args, env=None):
    return CliRunner().invoke(main, args, env=env)


def one_error_line(result, *expected: str) -> str:
    """Exit 2, nothing on stdout, exactly one stderr line ``symuat: error: …`` holding every expected piece."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == "", result.stdout
    line = result.stderr
    assert line.startswith("symuat: error: ") and line.endswith("\n") and line.count("\n") == 1, line
    for piece in expected:
        assert piece in line, (piece, line)
    return line


def audit_json(directory: Path, *extra: str, env=None) -> dict:
    """``symuat audit --format json`` of ``directory``: it must print exactly one JSON object."""
    result = run(["audit", "--derivations", str(directory), "--format", "json", "--quiet", *extra], env=env)
    assert result.exit_code in (0, 1), (result.exit_code, result.stderr)
    return json.loads(result.stdout)
