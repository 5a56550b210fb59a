"""Fault injection at the command line: every usage error, bad option value and bad environment variable is one
``symuat: error:`` line with exit 2 and nothing on standard output, before any work starts; so is a standard output
that cannot be written (closed, full), while a reader that stops reading ends the command quietly (141)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from faults_support import one_error_line, run

LONG = "x" * 256

#: arguments → pieces of the expected error line
ARGS = {
    "unknown_command": (["nosuchcommand"], "No such command 'nosuchcommand'"),
    "unknown_option": (["audit", "--bogus"], "No such option '--bogus'"),
    "bad_format": (["audit", "--format", "xml"], "Invalid value for '--format': 'xml' is not one of"),
    "seed_text": (["audit", "--seed", "x"], "Invalid value for '--seed': 'x' is not a valid integer"),
    "seed_negative": (["audit", "--seed", "-1"], "seed must be a non-negative integer, got -1"),
    "explain_no_id": (["explain"], "Missing argument 'ID'"),
    "explain_unknown_id": (["explain", "duat:eq999", "--quiet"], "no ledger entry matches 'duat:eq999'"),
    "only_matches_nothing": (["audit", "--only", "nope:*", "--quiet"], "no ledger entry matches 'nope:*'"),
    "only_one_of_two_matches_nothing": (["audit", "--only", "duat:eq3", "--only", "duat:eq3x", "--quiet", "--no-coq"],
                                        "no ledger entry matches 'duat:eq3x'"),
    "explain_a_pattern": (["explain", "*"], "symuat explain takes one id, not a pattern: '*'"),
    "out_a_device": (["latex", "--out", "/dev/null"], "output directory '/dev/null' is not a directory"),
    "derive_depth_0": (["derive", "--depth", "0"], "'--depth': 0 is not in the range 1<=x<=64"),
    "derive_depth_huge": (["derive", "--depth", "1000000"], "'--depth': 1000000 is not in the range 1<=x<=64"),
    "derive_depth_text": (["derive", "--depth", "two"], "'--depth': 'two' is not a valid integer range"),
    "latex_depth_huge": (["latex", "--out", "x", "--depth", str(10**9)], "is not in the range 1<=x<=16"),
    "build_depth_0": (["build", "--depth", "0"], "'--depth': 0 is not in the range 1<=x<=16"),
    "latex_no_out": (["latex"], "Missing option '--out'"),
    "latex_empty_out": (["latex", "--out", ""], "--out must be a non-empty path, got ''"),
    "build_blank_out": (["build", "--out", "   "], "--out must be a non-empty path"),
    "latex_long_component": (["latex", "--out", LONG], "--out is too long: 256 bytes"),
    "latex_long_path": (["latex", "--out", "/".join(["abc"] * 1100)], "--out is too long: 4399 bytes"),
    "derivations_empty": (["audit", "--derivations", ""], "--derivations must be a non-empty path"),
    "html_empty_out": (["html", "--out", ""], "--out must be a non-empty path, got ''"),
    "html_long_out": (["html", "--out", LONG], "--out is too long: 256 bytes"),
    "html_empty_derivations": (["html", "--out", "x", "--derivations", ""], "--derivations must be a non-empty"),
    "derivations_missing": (["audit", "--derivations", "/no/such/dir", "--quiet"], "does not exist"),
    "soundness_sample_0": (["soundness", "--sample", "0"], "'--sample': 0 is not in the range x>=1"),
    "soundness_depth_7": (["soundness", "--depth", "7"], "'--depth': 7 is not in the range 2<=x<=6"),
    "soundness_depth_1": (["soundness", "--depth", "1"], "'--depth': 1 is not in the range 2<=x<=6"),
    "model_no_directory": (["model"], "Missing argument 'DIRECTORY'"),
}


@pytest.mark.parametrize("case", sorted(ARGS))
def test_a_bad_command_line_is_one_error_line(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may be written here
    args, expected = ARGS[case]
    one_error_line(run(args), expected)
    assert list(tmp_path.iterdir()) == []


#: environment → pieces of the expected error line (checked before the audit starts)
ENV = {
    "jobs_zero": ({"SYMUAT_JOBS": "0"}, "SYMUAT_JOBS must be a whole number from 1 to the"),
    "jobs_1000": ({"SYMUAT_JOBS": "1000"}, "got '1000'"),
    "jobs_text": ({"SYMUAT_JOBS": "many"}, "got 'many'"),
    "jobs_negative": ({"SYMUAT_JOBS": "-2"}, "got '-2'"),
    "timeout_zero": ({"SYMUAT_ENTRY_TIMEOUT": "0"}, "time limit (SYMUAT_ENTRY_TIMEOUT) must be a number of seconds"),
    "timeout_text": ({"SYMUAT_ENTRY_TIMEOUT": "soon"}, "got 'soon'"),
    "timeout_negative": ({"SYMUAT_ENTRY_TIMEOUT": "-5"}, "got '-5'"),
    "timeout_nan": ({"SYMUAT_ENTRY_TIMEOUT": "nan"}, "got 'nan'"),
    "timeout_huge": ({"SYMUAT_ENTRY_TIMEOUT": "1e9"}, "got '1e9'"),
}


@pytest.mark.parametrize("case", sorted(ENV))
def test_a_bad_environment_variable_is_one_error_line(case):
    env, expected = ENV[case]
    one_error_line(run(["audit", "--no-cache", "--quiet", "--only", "duat:eq3"], env=env), expected)


def test_a_failed_write_leaves_no_temporary_file_and_mode_0644(tmp_path):
    """A target that cannot be replaced (a directory in its place) fails the write: one OutputError, no .tmp left."""
    from symuat.errors import OutputError
    from symuat.latex.render import write_files

    (tmp_path / "b.tex").mkdir()
    old = os.umask(0o022)
    try:
        with pytest.raises(OutputError, match=r"cannot write '.*b\.tex'"):
            write_files(tmp_path, {"a.tex": "first", "b.tex": "second", "c.tex": "third"})
    finally:
        os.umask(old)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tex", "b.tex"]
    assert (tmp_path / "a.tex").stat().st_mode & 0o777 == 0o644


def _symuat(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    """``python -m symuat.cli ARGS`` as a process: the program's own handling of its standard output."""
    return subprocess.run([sys.executable, "-m", "symuat.cli", *args], stderr=subprocess.PIPE, text=True, timeout=120,
                          **kwargs)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="/dev/full is Linux's")
def test_a_full_standard_output_is_one_error_line():
    with open("/dev/full", "w") as full:
        done = _symuat(["derive", "--depth", "2"], stdout=full)
    assert (done.returncode, done.stderr) == (2, "symuat: error: cannot write the output: No space left on device\n")


def test_a_closed_standard_output_is_one_error_line():
    done = _symuat(["derive", "--depth", "2"], stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(1))
    assert (done.returncode, done.stderr) == (2, "symuat: error: the standard output is closed\n")


def test_a_reader_that_stops_reading_ends_the_command_quietly_with_141():
    """``symuat derive | head -0``: not exit 1, which reads as "a status disagrees with its record"."""
    proc = subprocess.Popen([sys.executable, "-m", "symuat.cli", "derive", "--depth", "20"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # before the command writes anything
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (141, b"")


def test_symuat_alone_and_with_h_prints_the_help():
    done = _symuat([], stdout=subprocess.PIPE)
    assert done.returncode == 0 and done.stderr == ""
    for flag in ("--help", "-h"):
        assert _symuat([flag], stdout=subprocess.PIPE).stdout == done.stdout
    assert "Commands:" in done.stdout and "audit" in done.stdout
    for command in ("audit", "build", "sweep"):  # a ledger command, a lazily imported one, another layer's
        assert run([command, "-h"]).stdout == run([command, "--help"]).stdout != ""
        assert "-q, --quiet" in run([command, "--help"]).stdout  # the short flag too, on every command with --quiet


@pytest.mark.parametrize("command", ["build", "latex", "html"])
def test_a_failed_audit_leaves_no_output_directory(command, tmp_path):
    """``--out`` is created to check it early; when the derivations then fail, the command leaves nothing."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "bad.py").write_text("raise RuntimeError('boom at import')\n")
    args = [command, "--out", str(tmp_path / "new" / "out"), "--derivations", str(tmp_path / "d"), "--quiet"]
    one_error_line(run(args + (["--no-pdf"] if command == "build" else [])), "boom at import")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "new"] and list((tmp_path / "new").iterdir()) == []


def test_a_long_list_of_candidates_is_cut_to_ten(tmp_path):
    """``symuat explain duat:eq1`` with twelve entries under it names ten of them and how many more."""
    (tmp_path / "mine.py").write_text(
        "from symuat import Entry, Prose, Source, Status\n"
        "def entries():\n"
        "    return [Entry(f'duat:eq1.step{k}', Source('duat', 'Eq. 1'), 'x', Status.PROSE, Prose('r'))\n"
        "            for k in range(1, 13)]\n")
    line = one_error_line(run(["explain", "duat:eq1", "--derivations", str(tmp_path), "--quiet"]))
    assert line.endswith("entries under it: " + ", ".join(f"duat:eq1.step{k}" for k in range(1, 11))
                         + ", … and 2 more\n"), line
