"""``symuat build`` / ``latex`` (symuat.build): --out is checked before auditing, generated files are 0644."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

import symuat.build as build_mod
from symuat import Entry, OutputError, Prose, Source, Status, audit
from symuat.build import build, check_writable
from symuat.cli import main


def _no_audit(**kwargs):
    raise AssertionError("the ledger was audited before --out was checked")


def _tiny_records(**kwargs):
    return audit([Entry("duat:eq1", Source("duat", "Eq. 1"), "G(x)", Status.PROSE, Prose("an existence theorem"))])


def test_out_is_checked_before_auditing(tmp_path, monkeypatch):
    monkeypatch.setattr(build_mod, "audit_isolated", _no_audit)
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match="cannot create output directory"):
        build(out=blocker / "sub", pdf=False)
    result = CliRunner().invoke(main, ["latex", "--out", str(blocker / "sub")])
    assert result.exit_code == 2 and "cannot create output directory" in result.stderr


def test_check_writable_leaves_nothing_behind(tmp_path):
    assert check_writable(tmp_path / "new" / "dir") == tmp_path / "new" / "dir"
    assert list((tmp_path / "new" / "dir").iterdir()) == []


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root can write into a read-only directory")
def test_read_only_out_is_an_output_error(tmp_path, monkeypatch):
    monkeypatch.setattr(build_mod, "audit_isolated", _no_audit)
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o555)
    try:
        with pytest.raises(OutputError, match="cannot write to output directory"):
            build(out=out, pdf=False)
    finally:
        out.chmod(0o755)


def test_generated_files_are_mode_0644(tmp_path, monkeypatch):
    monkeypatch.setattr(build_mod, "audit_isolated", _tiny_records)
    old = os.umask(0o022)
    try:
        result = build(out=tmp_path / "out", pdf=False, depth=1)
    finally:
        os.umask(old)
    assert result.files and {p.name for p in result.files} >= {"ledger.json", "main.tex"}
    assert {oct(p.stat().st_mode & 0o777) for p in result.files} == {oct(0o644)}
