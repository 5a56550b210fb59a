"""Malformed derivation modules and bad CLI input give one clear symuat error and a non-zero exit."""

from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from symuat import DerivationError, Entry, LedgerError, Source, Status, load_entries
from symuat.cli import main
from symuat.ledger.entry import Prose

GOOD = '''
from symuat import Entry, Prose, Source, Status
def entries():
    return [Entry("duat:eq1", Source("duat", "Eq. 1"), "G(x)", Status.PROSE, Prose("an existence theorem"))]
'''

BAD_MODULES = {
    "raises.py": ("def entries():\n    raise RuntimeError('boom')\n", "raised RuntimeError: boom"),
    "import_error.py": ("import not_a_module_xyz\n", "failed to import"),
    "no_entries.py": ("X = 1\n", "defines no callable entries"),
    "wrong_type.py": ("def entries():\n    return [42]\n", "returned int, expected symuat Entry"),
    "bad_status.py": (GOOD.replace("Status.PROSE", "'approved'"), "unknown status 'approved'"),
    "bad_id.py": (GOOD.replace("duat:eq1", "duat-eq1"), "malformed entry id"),
}


def _write(tmp_path, name, text):
    (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


@pytest.mark.parametrize("name", sorted(BAD_MODULES))
def test_malformed_module_is_a_derivation_error(tmp_path, name):
    text, message = BAD_MODULES[name]
    _write(tmp_path, name, text)
    with pytest.raises(DerivationError, match=message):
        load_entries(directory=tmp_path)
    result = CliRunner().invoke(main, ["audit", "--derivations", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "symuat: error:" in result.output


def test_duplicate_ids_are_rejected(tmp_path):
    _write(tmp_path, "a.py", GOOD)
    _write(tmp_path, "b.py", GOOD)
    with pytest.raises(DerivationError, match="defined twice"):
        load_entries(directory=tmp_path)


def test_loading_again_gives_the_same_entries_until_a_module_changes(tmp_path):
    first, again = load_entries(), load_entries()
    assert all(a is b for a, b in zip(first, again, strict=True))  # so their built sides can be shared
    _write(tmp_path, "good.py", GOOD)
    (before,) = load_entries(directory=tmp_path)
    _write(tmp_path, "good.py", GOOD.replace("duat:eq1", "duat:eq2"))
    (after,) = load_entries(directory=tmp_path)  # a directory is imported afresh each time
    assert (before.id, after.id) == ("duat:eq1", "duat:eq2")


def test_good_directory_and_json_format(tmp_path):
    _write(tmp_path, "good.py", GOOD)
    result = CliRunner().invoke(main, ["audit", "--format", "json", "--derivations", str(tmp_path)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["summary"]["prose"] == 1
    (entry,) = data["entries"]
    assert set(entry) >= {"id", "source", "statement", "status", "evidence", "counterexample", "correction"}
    assert entry["source"] == {"seed": "001_280f2464439a611b.txt", "version": "duat", "ref": "Eq. 1"}


def test_disagreeing_record_exits_one(tmp_path):
    _write(tmp_path, "lie.py", GOOD.replace("Status.PROSE", "Status.PROVED"))
    result = CliRunner().invoke(main, ["audit", "--derivations", str(tmp_path)])
    assert result.exit_code == 1
    assert "disagree" in result.output


def test_missing_directory_is_one_line(tmp_path):
    result = CliRunner().invoke(main, ["audit", "--derivations", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "does not exist" in result.output


def test_entry_validation():
    with pytest.raises(LedgerError, match="unknown source version"):
        Source("uat-v9", "Eq. 1")
    with pytest.raises(LedgerError, match="cites version"):
        Entry("duat:eq1", Source("uat-arxiv", "Eq. 1"), "x", Status.PROSE, Prose("r"))
    with pytest.raises(LedgerError, match="no correction"):
        Entry("duat:eq1", Source("duat", "Eq. 1"), "x", Status.ERRATUM, Prose("r"))
    with pytest.raises(LedgerError, match="claim must be"):
        Entry("duat:eq1", Source("duat", "Eq. 1"), "x", Status.PROSE, "not a claim")


@pytest.mark.xdist_group("audit")
def test_shipped_ledger_audits_clean(audited, session_seed):
    result = CliRunner().invoke(main, ["audit", "--seed", str(session_seed)])
    assert result.exit_code == 0, result.output
    assert "uat-arxiv:eq13.step7" in result.output


def test_package_directory_allows_relative_imports(tmp_path):
    pkg = tmp_path / "my_paper"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from symuat import Origin, register_source\n"
                                     "register_source(Origin('my-pkg', 'My package'))\n")
    (pkg / "_shared.py").write_text("REF = 'note 1'\n")
    (pkg / "first.py").write_text(textwrap.dedent('''
        from symuat import Entry, Prose, Status
        from ._shared import REF
        def entries():
            return [Entry("my-pkg:first", REF, "x", Status.PROSE, Prose("r"))]
        '''))
    (pkg / "second.py").write_text(textwrap.dedent('''
        from symuat import Entry, Prose, Status
        from . import first
        def entries():
            return [Entry("my-pkg:second", first.entries()[0].ref, "y", Status.PROSE, Prose("r"))]
        '''))
    entries = load_entries(directory=pkg)
    assert [e.id for e in entries] == ["my-pkg:first", "my-pkg:second"]
    assert entries[1].ref == "note 1" and entries[1].source.name == "My package"
    assert load_entries(directory=pkg) == entries  # loading again starts from a fresh package


def test_package_init_may_define_entries(tmp_path):
    _write(tmp_path, "__init__.py", GOOD)
    assert [e.id for e in load_entries(directory=tmp_path)] == ["duat:eq1"]


def test_plain_directory_modules_may_import_each_other(tmp_path):
    _write(tmp_path, "a.py", GOOD)
    _write(tmp_path, "b.py", "from .a import entries as _a\n\ndef entries():\n    return []\n")
    assert [e.id for e in load_entries(directory=tmp_path)] == ["duat:eq1"]


@pytest.mark.parametrize("files", [{}, {"helpers.py": "def entries():\n    return []\n"}, {"__init__.py": ""}])
def test_no_entries_is_a_derivation_error(tmp_path, files):
    for name, text in files.items():
        _write(tmp_path, name, text)
    with pytest.raises(DerivationError, match=f"no entries found in {tmp_path}"):
        load_entries(directory=tmp_path)
    result = CliRunner().invoke(main, ["audit", "--derivations", str(tmp_path)])
    assert result.exit_code == 2 and "no entries found" in result.output


def test_errors_name_the_file(tmp_path):
    _write(tmp_path, "__init__.py", "")
    _write(tmp_path, "broken.py", "def entries():\n    return [42]\n")
    with pytest.raises(DerivationError, match=f"{tmp_path / 'broken.py'}.*returned int"):
        load_entries(directory=tmp_path)
    _write(tmp_path, "broken.py", "def entries(:\n")
    with pytest.raises(DerivationError, match=f"{tmp_path / 'broken.py'}.*failed to import: SyntaxError"):
        load_entries(directory=tmp_path)
    _write(tmp_path, "broken.py", "")
    _write(tmp_path, "__init__.py", "raise ValueError('bad init')\n")
    with pytest.raises(DerivationError, match=r"__init__\.py.*failed to import: ValueError: bad init"):
        load_entries(directory=tmp_path)


def test_paper_package_is_installed_as_symuat_paper():
    import importlib.util

    assert importlib.util.find_spec("symuat_paper") is not None
    assert any(e.id == "duat:eq1" for e in load_entries())
