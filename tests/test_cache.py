"""The audit cache (symuat.ledger.cache): hits, misses on every change of what the audit depends on,
corrupt files, ``--no-cache``, and cached output identical to a fresh audit."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest
import sympy
from click.testing import CliRunner

import symuat.ledger.cache as cache_mod
from symuat import audit, ledger_json, load_entries
from symuat.cli import main
from symuat.ledger.cache import audit_ledger, cache_dir, cache_key, clear_memory, select_ids
from symuat.ledger.dependencies import module_sources
from symuat.ledger.parallel import audit_data
from symuat.ledger.signing import key_file
from symuat.ledger.snapshot import record_from_data, record_to_data

# Each audit of a counted entry appends one character to the log file, so the log counts recomputations.
MODULE = '''
from pathlib import Path
from symuat import Entry, Identity, Prose, Source, Status, dims_grid

def _counted(seed):
    with Path({log!r}).open("a") as fh:
        fh.write("x")
    return ()

def _commute(i):
    return Identity(shapes=lambda d: {{"A": (d["N"], d["N"]), "B": (d["N"], d["N"])}},
                    lhs=lambda e, d: e["A"] + {k} * e["B"], rhs=lambda e, d: {k} * e["B"] + e["A"],
                    dims=dims_grid(N=(1, 2)))

def entries():
    out = [Entry("duat:eq1", Source("duat", "Eq. 1"), "G(x)", Status.PROSE, Prose("counted", proxy=_counted))]
    out += [Entry(f"duat:eq{{i}}", Source("duat", f"Eq. {{i}}"), "A + kB = kB + A", Status.PROVED, _commute(i))
            for i in range(2, {n})]
    return out
'''


@pytest.fixture
def ledger_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMUAT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # this test's own signing key
    clear_memory()
    d = tmp_path / "derivations"
    d.mkdir()
    log = tmp_path / "runs.log"
    (d / "mine.py").write_text(MODULE.format(log=str(log), k=3, n=4))
    yield d, log
    clear_memory()


def _runs(log: Path) -> int:
    return len(log.read_text()) if log.exists() else 0


def _fresh_json(directory) -> dict:
    return ledger_json(audit(load_entries(directory=directory)))


def test_cache_dir_respects_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("SYMUAT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "symuat"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/is/ignored")
    assert cache_dir() == Path.home() / ".cache" / "symuat"
    monkeypatch.setenv("SYMUAT_CACHE_DIR", str(tmp_path / "own"))
    assert cache_dir() == tmp_path / "own"


def test_second_audit_is_a_hit_in_memory_and_on_disk(ledger_dir):
    d, log = ledger_dir
    first = audit_ledger(directory=d)
    assert _runs(log) == 1 and len(list(cache_dir().glob("audit-*.cache"))) == 1
    assert audit_ledger(directory=d) == first and _runs(log) == 1  # memory
    clear_memory()
    started = []
    again = audit_ledger(directory=d, on_start=started.append)
    assert _runs(log) == 1 and started == []  # disk
    assert ledger_json(again) == ledger_json(first) == _fresh_json(d)
    assert _runs(log) == 2  # only the uncached reference audit ran the proxy again


def test_cache_file_is_signed_json_with_mode_0644_and_the_key_is_0600(ledger_dir):
    d, _ = ledger_dir
    audit_ledger(directory=d)
    (path,) = cache_dir().glob("audit-*.cache")
    assert path.stat().st_mode & 0o777 == 0o644
    header, payload = path.read_text().split("\n", 1)
    magic, version, mac = header.split(" ")
    assert magic == "symuat-audit-cache" and version == "3" and len(mac) == 64
    assert sorted(json.loads(payload)["records"]) == ["duat:eq1", "duat:eq2", "duat:eq3"]
    assert key_file().stat().st_mode & 0o777 == 0o600 and not key_file().is_relative_to(cache_dir())
    assert not list(cache_dir().glob("*.tmp"))


def test_changing_a_derivation_source_or_the_seed_is_a_miss(ledger_dir):
    d, log = ledger_dir
    audit_ledger(directory=d)
    key = cache_key(0, directory=d)
    (d / "mine.py").write_text((d / "mine.py").read_text().replace("Status.PROVED", "Status.CHECKED"))
    load_entries(directory=d)
    assert cache_key(0, directory=d) != key
    records = audit_ledger(directory=d)
    assert _runs(log) == 2 and records[1].entry.status.value == "checked" and not records[1].agrees
    (d / "_helper.py").write_text("Y = 2\n")  # a private module the derivations could import
    audit_ledger(directory=d)
    assert _runs(log) == 3
    audit_ledger(directory=d, seed=1)
    assert _runs(log) == 4
    assert cache_key(1, directory=d) != cache_key(0, directory=d)


def test_a_derivation_read_through_a_symlinked_package_counts_once_by_content(ledger_dir, tmp_path):
    """A module first imported during the audit is read through the path it was imported by (a symlinked package
    name); the key must not depend on whether this process imported it before (a test session imports the
    derivations at collection), and it still changes when the content differs."""
    d, _ = ledger_dir
    link = tmp_path / "linked"
    link.symlink_to(d, target_is_directory=True)
    load_entries(directory=d)
    digest = hashlib.sha256((d / "mine.py").read_bytes()).hexdigest()
    plain = cache_key(0, directory=d)
    assert cache_key(0, directory=d, read={f"file:{(link / 'mine.py').as_posix()}": digest}) == plain
    assert cache_key(0, directory=d, read={f"file:{(link / 'mine.py').as_posix()}": "0" * 64}) != plain
    outside = tmp_path / "data.txt"
    outside.write_text("2")
    (tmp_path / "data-link.txt").symlink_to(outside)
    data = hashlib.sha256(b"2").hexdigest()
    assert cache_key(0, directory=d, read={f"file:{(tmp_path / 'data-link.txt').as_posix()}": data}) != plain


def test_the_key_covers_symuat_itself_by_content_and_libraries_by_version():
    sources = module_sources(list(sys.modules))
    engine = Path(cache_mod.__file__).resolve().parents[1] / "evidence" / "identity.py"
    assert sources[f"file:{engine.as_posix()}"] == hashlib.sha256(engine.read_bytes()).hexdigest()
    site = Path(sympy.__file__).resolve().parents[1]
    installed = sorted(p.name for p in site.iterdir() if p.name.endswith((".dist-info", ".egg-info")))
    assert any(name.startswith("sympy-") for name in installed)
    assert sources[f"site:{site.as_posix()}"] == hashlib.sha256("\n".join(installed).encode()).hexdigest()
    assert not any(label.endswith("/json/__init__.py") for label in sources)  # the standard library: sys.version


HELPER_USER = '''
from symuat import Entry, Identity, Source, Status, dims_grid
import {helper} as helper

def entries():
    return [Entry("duat:eq2", Source("duat", "Eq. 2"), "A = kA/k", Status.PROVED,
                  Identity(shapes=lambda d: {{"A": (d["N"], d["N"])}}, lhs=lambda e, d: e["A"],
                           rhs=lambda e, d: helper.K * e["A"] / 2, dims=dims_grid(N=(1, 2))))]
'''


@pytest.mark.parametrize("how", ["pythonpath", "symlinked"])
def test_a_helper_imported_from_outside_the_derivations_is_a_dependency(ledger_dir, tmp_path, monkeypatch, how):
    """Editing a helper on PYTHONPATH (or behind a symlink) into a false statement must not keep the cached
    "proved"."""
    d, _ = ledger_dir
    (d / "mine.py").unlink()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    name = f"symuat_test_helper_{how}"
    (outside / f"{name}.py").write_text("K = 2\n")
    if how == "symlinked":
        (d / "lib").symlink_to(outside, target_is_directory=True)
        monkeypatch.syspath_prepend(str(d / "lib"))
    else:
        monkeypatch.syspath_prepend(str(outside))
    (d / "user.py").write_text(HELPER_USER.format(helper=name))
    try:
        assert [r.computed.value for r in audit_ledger(directory=d)] == ["proved"]
        (outside / f"{name}.py").write_text("K = 3\n")
        sys.modules.pop(name, None)
        assert [r.computed for r in audit_ledger(directory=d)] == [None]  # recomputed: K = 3 makes it false
    finally:
        sys.modules.pop(name, None)


def test_a_corrupt_cache_file_is_ignored_and_rewritten(ledger_dir):
    d, log = ledger_dir
    audit_ledger(directory=d)
    clear_memory()
    (path,) = cache_dir().glob("audit-*.cache")
    good = path.read_bytes()
    path.write_text("{not json")
    records = audit_ledger(directory=d)
    assert _runs(log) == 2
    assert ledger_json(records) == _fresh_json(d)
    assert path.read_bytes() == good  # rewritten, signed again


def test_no_cache_recomputes_and_writes_nothing(ledger_dir):
    d, log = ledger_dir
    result = CliRunner().invoke(main, ["audit", "--derivations", str(d), "--no-cache", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert _runs(log) == 1 and not cache_dir().exists()
    CliRunner().invoke(main, ["audit", "--derivations", str(d)])
    CliRunner().invoke(main, ["audit", "--derivations", str(d), "--no-cache"])
    assert _runs(log) == 3


def test_cli_json_from_the_cache_equals_a_fresh_audit(ledger_dir):
    d, _ = ledger_dir
    args = ["audit", "--derivations", str(d), "--format", "json"]
    cold = CliRunner().invoke(main, args).output
    clear_memory()
    warm = CliRunner().invoke(main, args).output
    assert cold == warm == json.dumps(_fresh_json(d), indent=2, ensure_ascii=False) + "\n"


def test_only_audits_the_selection_and_fills_the_cache(ledger_dir):
    d, log = ledger_dir
    (d / "mine.py").write_text((d / "mine.py").read_text().replace("range(2, 4)", "range(2, 12)"))
    started = []
    part = audit_ledger(directory=d, only=["duat:eq1?"], on_start=started.append)
    assert [r.entry.id for r in part] == ["duat:eq10", "duat:eq11"] and started == [2] and _runs(log) == 0
    whole = audit_ledger(directory=d, on_start=started.append)
    assert started == [2, 9] and _runs(log) == 1 and len(whole) == 11
    assert audit_ledger(directory=d, only=["duat:eq1"]) == whole[:1]


def test_select_ids_rejects_a_pattern_matching_nothing():
    from symuat import InvalidValueError

    with pytest.raises(InvalidValueError, match="no ledger entry matches 'duat:eq99'"):
        select_ids(["duat:eq9"], ["duat:eq99"])


def test_parallel_audit_equals_serial_and_keeps_ledger_order(ledger_dir):
    d, _ = ledger_dir
    (d / "mine.py").write_text((d / "mine.py").read_text().replace("range(2, 4)", "range(2, 12)"))
    entries = load_entries(directory=d)
    done = []
    parallel = audit_data(entries, jobs=2, on_done=done.append)
    assert parallel == audit_data(entries, jobs=1)
    assert sorted(done) == sorted(e.id for e in entries)
    assert [rec["id"] for rec in parallel] == [e.id for e in entries]


def test_snapshot_round_trip_keeps_what_the_outputs_read(ledger_dir):
    d, _ = ledger_dir
    for record in audit(load_entries(directory=d)):
        again = record_from_data(json.loads(json.dumps(record_to_data(record))))
        assert again.to_json() == record.to_json() and again.agrees == record.agrees
        assert again.entry.source == record.entry.source and again.reason == record.reason


def test_the_test_session_has_a_usable_cache_outside_its_signing_key():
    """conftest.py gives the session its own cache and key directories: a key inside the cache would disable it."""
    from symuat.ledger.signing import user_key

    assert user_key(outside=cache_dir()) is not None
    assert not key_file().resolve().is_relative_to(cache_dir().resolve())
