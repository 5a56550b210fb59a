"""The ``symuat audit`` table, ``--only``, ``symuat explain`` and the progress bar, on small ledgers; ``symuat
soundness``."""

from __future__ import annotations

import textwrap

import pytest
from click.testing import CliRunner

from symuat.cli import main
from symuat.ledger.cache import clear_memory

LEDGER = textwrap.dedent('''
    from symuat import Correction, Denial, Entry, Identity, Prose, Source, Status, dims_grid

    def _square(rhs):
        return Identity(shapes=lambda d: {"A": (d["N"], d["N"]), "B": (d["N"], d["N"])},
                        lhs=lambda e, d: e["A"] * e["B"], rhs=rhs, dims=dims_grid(N=(1, 2)))

    def entries():
        commute = _square(lambda e, d: e["B"] * e["A"])
        same = _square(lambda e, d: e["A"] * e["B"])
        return [
            Entry("duat:eq1", Source("duat", "Eq. 1"), r"AB = BA \\text{ does not hold}", Status.PROVED,
                  Denial(commute)),
            Entry("duat:eq2", Source("duat", "Eq. 2"), "AB = BA", Status.ERRATUM, commute,
                  correction=Correction("AB = AB", same)),
            Entry("duat:eq3", Source("duat", "Eq. 3"), "AB = AB", Status.ERRATUM, same,
                  correction=Correction("AB = AB", same)),
            Entry("duat:eq4", Source("duat", "Eq. 4"), "G(x)", Status.PROSE, Prose("an existence theorem")),
        ]
''')


@pytest.fixture
def ledger_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMUAT_CACHE_DIR", str(tmp_path / "cache"))
    clear_memory()
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "mine.py").write_text(LEDGER)
    return str(tmp_path / "d")


def _rows(output: str) -> dict[str, str]:
    return {line.split()[1]: line for line in output.splitlines() if line.split()[1:2] and ":eq" in line.split()[1]}


def test_table_marks_legend_and_disagreement_reason(ledger_dir):
    result = CliRunner().invoke(main, ["audit", "--derivations", ledger_dir])
    assert result.exit_code == 1  # duat:eq3 is recorded as an erratum but holds
    rows = _rows(result.output)
    assert rows["duat:eq1"].rstrip().endswith("denial: all-sizes ✓ symbolic ✓ exact ✓ float ✓")  # a proved denial: no ✗
    assert rows["duat:eq2"].rstrip().endswith("symbolic ✗ exact ✗ float ✗") and " yes " in rows["duat:eq2"]
    assert rows["duat:eq3"].startswith("proved ") and " NO: recorded erratum " in rows["duat:eq3"]  # computed first
    assert "↳ recorded erratum, computed proved: holds as printed" in result.output
    assert ("computed: proved 2, erratum 1, prose 1; recorded: proved 1, erratum 2, prose 1; 4 entries"
            in result.output)
    assert rows["duat:eq4"].rstrip().endswith("-")
    assert "legend: ✓ the level confirms the statement as printed" in result.output
    for status in ("proved =", "checked =", "erratum =", "convention =", "prose ="):
        assert status in result.output
    assert "1 entry disagrees with its record: duat:eq3" in result.stderr


def test_only_selects_ids_prefixes_and_globs(ledger_dir):
    result = CliRunner().invoke(main, ["audit", "--derivations", ledger_dir, "--only", "duat:eq1",
                                       "--only", "duat:eq[24]"])
    assert result.exit_code == 0, result.output
    assert sorted(_rows(result.output)) == ["duat:eq1", "duat:eq2", "duat:eq4"]
    bad = CliRunner().invoke(main, ["audit", "--derivations", ledger_dir, "--only", "duat:eq9"])
    assert bad.exit_code == 2 and "no ledger entry matches 'duat:eq9'" in bad.stderr


def test_explain_shows_statement_levels_counterexample_and_correction(ledger_dir):
    result = CliRunner().invoke(main, ["explain", "duat:eq2", "--derivations", ledger_dir])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "statement as printed:\n  AB = BA" in out
    assert "recorded erratum; computed erratum; agrees" in out
    for level in ("symbolic ✗", "exact ✗", "float ✗"):
        assert level in out
    cx = out.split("counterexample:")[1]
    assert "lhs:" in cx and "rhs:" in cx and "dims: N=2" in cx
    assert "correction:\n  AB = AB" in out and "correction evidence:\n  all-sizes ✓" in out
    assert "\n  symbolic ✓" in out.split("correction evidence:")[1]


def test_explain_a_denial_and_an_unknown_id(ledger_dir):
    result = CliRunner().invoke(main, ["explain", "duat:eq1", "--derivations", ledger_dir])
    assert result.exit_code == 0 and "claim: denial" in result.output and "symbolic ✓" in result.output
    missing = CliRunner().invoke(main, ["explain", "duat:eq7", "--derivations", ledger_dir])
    assert missing.exit_code == 2 and missing.stderr.startswith("symuat: error: no ledger entry matches")


def test_no_progress_bar_without_a_tty_or_with_quiet(ledger_dir):
    for extra in ([], ["--quiet"]):
        result = CliRunner().invoke(main, ["audit", "--derivations", ledger_dir, "--no-cache", "--only", "duat:eq4",
                                           *extra])
        assert result.exit_code == 0 and result.stderr == ""


def test_progress_bar_on_a_terminal(ledger_dir, monkeypatch):
    import io

    import symuat.progress as progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    err = Terminal()
    monkeypatch.setattr(progress.sys, "stderr", err)
    with progress.progress(False) as (start, done):
        start(2)
        done("duat:eq1")
        done("duat:eq2")
    assert "auditing" in err.getvalue() and "2/2" in err.getvalue()
    err2 = Terminal()
    monkeypatch.setattr(progress.sys, "stderr", err2)
    with progress.progress(True) as (start, done):
        assert start is None and done is None
    assert err2.getvalue() == ""


@pytest.mark.slow
def test_soundness_prints_the_kill_rates_of_each_family():
    result = CliRunner().invoke(main, ["soundness", "--sample", "400", "--depth", "2", "--quiet"])
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split() for line in result.output.splitlines()[1:] if line.strip()}
    assert set(rows) >= {"explicit", "opaque", "table"}
    assert rows["table"][1:3] == ["130", "17"]  # the depth-2 table's mutants, 17 of them equivalent
