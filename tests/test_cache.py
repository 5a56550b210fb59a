"""The audit cache (symuat.ledger.cache): hits, misses on every change of what the audit depends on,
corrupt files, ``--no-cache``, and cached output identical to a fresh audit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import symuat.ledger.cache as cache_mod
from symuat import audit, ledger_json, load_entries
from symuat.cli import main
from symuat.ledger.cache import audit_ledger, cache_dir, cache_key, clear_memory, select_ids
from symuat.ledger.parallel import audit_data
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
    assert _runs(log) == 1 and len(list(cache_dir().glob("audit-*.json"))) == 1
    assert audit_ledger(directory=d) == first and _runs(log) == 1  # memory
    clear_memory()
    started = []
    again = audit_ledger(directory=d, on_start=started.append)
    assert _runs(log) == 1 and started == []  # disk
    assert ledger_json(again) == ledger_json(first) == _fresh_json(d)
    assert _runs(log) == 2  # only the uncached reference audit ran the proxy again


def test_cache_file_is_readable_json_with_mode_0644(ledger_dir):
    d, _ = ledger_dir
    audit_ledger(directory=d)
    (path,) = cache_dir().glob("audit-*.json")
    assert path.stat().st_mode & 0o777 == 0o644
    assert json.loads(path.read_text())["ids"] == ["duat:eq1", "duat:eq2", "duat:eq3"]


def test_changing_a_derivation_source_or_the_seed_is_a_miss(ledger_dir):
    d, log = ledger_dir
    audit_ledger(directory=d)
    key = cache_key(0, directory=d)
    (d / "mine.py").write_text((d / "mine.py").read_text().replace("Status.PROVED", "Status.CHECKED"))
    assert cache_key(0, directory=d) != key
    records = audit_ledger(directory=d)
    assert _runs(log) == 2 and records[1].entry.status.value == "checked" and not records[1].agrees
    (d / "_helper.py").write_text("Y = 2\n")  # a private module the derivations could import
    audit_ledger(directory=d)
    assert _runs(log) == 3
    audit_ledger(directory=d, seed=1)
    assert _runs(log) == 4
    assert cache_key(1, directory=d) != cache_key(0, directory=d)


def test_changing_symuat_itself_is_a_miss(tmp_path, monkeypatch):
    package = Path(cache_mod.__file__).resolve().parents[1]
    fake = tmp_path / "symuat"
    shutil.copytree(package, fake, ignore=shutil.ignore_patterns("__pycache__", "*.tex", "*.j2"))
    monkeypatch.setattr(cache_mod, "__file__", str(fake / "ledger" / "cache.py"))
    before = cache_key(0)
    engine = fake / "evidence" / "identity.py"
    engine.write_text(engine.read_text() + "\n# an edit to the engine\n")
    assert cache_key(0) != before


@pytest.mark.parametrize("garbage", ["", "{not json", '{"format": 1}', "[1, 2]", "CORRUPT-RECORDS", "OTHER-KEY"])
def test_a_corrupt_or_stale_cache_file_is_ignored_and_rewritten(ledger_dir, garbage):
    d, log = ledger_dir
    audit_ledger(directory=d)
    clear_memory()
    (path,) = cache_dir().glob("audit-*.json")
    data = json.loads(path.read_text())
    if garbage == "CORRUPT-RECORDS":
        data["records"]["duat:eq1"]["evidence"] = [["no-such-level", True, "x", None]]
        garbage = json.dumps(data)
    elif garbage == "OTHER-KEY":
        data["key"] = "0" * 64
        garbage = json.dumps(data)
    path.write_text(garbage)
    records = audit_ledger(directory=d)
    assert _runs(log) == 2
    assert ledger_json(records) == _fresh_json(d)
    assert json.loads(path.read_text())["key"] == cache_key(0, directory=d)


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
