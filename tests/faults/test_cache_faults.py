"""Fault injection at the audit cache: no file can change a verdict, shrink the ledger or crash the audit.

Each case writes a hostile cache file (or key) and asserts the exact outcome: the audit equals a fresh one
(same JSON, the erratum still an erratum, every entry present), and what was recomputed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from faults_support import HEADER

from symuat import audit, ledger_json, load_entries
from symuat.ledger.cache import _FORMAT, audit_ledger, cache_dir, cache_key, clear_memory
from symuat.ledger.signing import key_file, sign

#: A proved identity, an erratum with a proved correction, and a counted prose entry (the log counts its runs).
LEDGER = HEADER + '''
from pathlib import Path
from symuat import Correction

def _count(seed):
    with Path({log!r}).open("a") as fh:
        fh.write("x")
    return ()

def _same(lhs, rhs):
    return Identity(shapes=lambda d: {{"A": (d["N"], d["N"]), "B": (d["N"], d["N"])}}, lhs=lhs, rhs=rhs,
                    dims=dims_grid(N=(1, 2)))

def entries():
    fixed = Correction("(AB)^T = B^T A^T", _same(lambda e, d: (e["A"] * e["B"]).T, lambda e, d: e["B"].T * e["A"].T))
    return [
        Entry("duat:eq1", Source("duat", "Eq. 1"), "G(x)", Status.PROSE, Prose("counted", proxy=_count)),
        Entry("duat:eq2", Source("duat", "Eq. 2"), "A + B = B + A", Status.PROVED,
              _same(lambda e, d: e["A"] + e["B"], lambda e, d: e["B"] + e["A"])),
        Entry("duat:eq3", Source("duat", "Eq. 3"), "(AB)^T = A^T B^T", Status.ERRATUM,
              _same(lambda e, d: (e["A"] * e["B"]).T, lambda e, d: e["A"].T * e["B"].T), correction=fixed),
    ]
'''


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMUAT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    clear_memory()
    d = tmp_path / "derivations"
    d.mkdir()
    log = tmp_path / "runs.log"
    (d / "mine.py").write_text(LEDGER.format(log=str(log)))
    fresh = ledger_json(audit(load_entries(directory=d)))
    log.unlink()
    audit_ledger(directory=d)  # writes the cache (the proxy runs once)
    clear_memory()
    (path,) = cache_dir().glob("audit-*.cache")
    yield d, log, path, fresh
    clear_memory()


def _runs(log: Path) -> int:
    return len(log.read_text()) if log.exists() else 0


def _payload(path: Path) -> dict:
    return json.loads(path.read_text().split("\n", 1)[1])


def _signed(path: Path, data: dict, key: bytes | None = None) -> None:
    payload = json.dumps(data, ensure_ascii=False, sort_keys=True).encode()
    mac = sign(key if key is not None else key_file().read_bytes(), payload)
    path.write_bytes(f"symuat-audit-cache {_FORMAT} {mac}\n".encode() + payload)


def _tamper_status(data: dict) -> dict:
    rec = data["records"]["duat:eq3"]["record"]
    rec["computed"], rec["reason"] = "proved", "holds as printed"
    rec["evidence"] = [[lv, True, "forged", None, None] for lv, *_ in rec["evidence"]]
    return data


def _drop_ids(data: dict) -> dict:
    data["records"] = {k: v for k, v in data["records"].items() if k != "duat:eq2"}
    return data


#: how the file is corrupted (without the user's key) → whether the whole file must be recomputed.
HOSTILE = {
    "tampered_status_unsigned": lambda p: p.write_text(p.read_text().split("\n", 1)[0] + "\n"
                                                       + json.dumps(_tamper_status(_payload(p)), sort_keys=True)),
    "tampered_status_wrong_key": lambda p: _signed(p, _tamper_status(_payload(p)), key=b"k" * 32),
    "ids_removed_unsigned": lambda p: p.write_text(p.read_text().split("\n", 1)[0] + "\n"
                                                   + json.dumps(_drop_ids(_payload(p)), sort_keys=True)),
    "empty": lambda p: p.write_bytes(b""),
    "garbage": lambda p: p.write_bytes(os.urandom(4096)),
    "not_utf8": lambda p: p.write_bytes(f"symuat-audit-cache {_FORMAT} ".encode() + b"\xff" * 64 + b"\n{}"),
    "header_only": lambda p: p.write_text(f"symuat-audit-cache {_FORMAT} " + "0" * 64),
    "old_format": lambda p: p.write_text(json.dumps({"format": 1, "key": p.stem[6:], "ids": [], "records": {}})),
    "nested_brackets": lambda p: p.write_text("[" * 200000 + "]" * 200000),
    "nested_after_header": lambda p: p.write_text(f"symuat-audit-cache {_FORMAT} " + "0" * 64 + "\n" + "[" * 200000),
    "huge_header": lambda p: p.write_text("x" * 300000),
    "directory": lambda p: (p.unlink(), p.mkdir()),
    "fifo": lambda p: (p.unlink(), os.mkfifo(p)),
    "symlink_to_dev_zero": lambda p: (p.unlink(), p.symlink_to("/dev/zero")),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_cache_file_never_changes_the_audit(ledger, case):
    d, log, path, fresh = ledger
    HOSTILE[case](path)
    records = audit_ledger(directory=d)
    assert ledger_json(records) == fresh  # the erratum is still an erratum, every entry is there
    assert [r.computed.value for r in records] == ["prose", "proved", "erratum"]
    assert _runs(log) == 2  # recomputed


def test_a_nested_file_signed_with_the_right_key_is_still_only_a_miss(ledger):
    """Deep nesting that verifies (as if this user's symuat had written it) raises RecursionError inside json."""
    d, log, path, fresh = ledger
    payload = b"[" * 200000 + b"]" * 200000
    path.write_bytes(f"symuat-audit-cache {_FORMAT} {sign(key_file().read_bytes(), payload)}\n".encode() + payload)
    assert ledger_json(audit_ledger(directory=d)) == fresh and _runs(log) == 2


def test_an_edited_derivation_is_recomputed(ledger):
    """Any edit of a derivation module changes the key: nothing of the old file is used."""
    d, log, path, _ = ledger
    (d / "mine.py").write_text((d / "mine.py").read_text().replace('"(AB)^T = A^T B^T"', '"(AB)^T = A^T B^T (sic)"'))
    clear_memory()
    records = audit_ledger(directory=d)
    assert records[2].entry.statement.endswith("(sic)") and records[2].computed.value == "erratum"
    assert _runs(log) == 2


def test_a_signed_record_with_a_forged_identity_field_is_recomputed(ledger):
    d, log, path, fresh = ledger
    data = _payload(path)
    data["records"]["duat:eq3"]["record"]["statement"] = "forged"
    _signed(path, data)  # even with the key, a record whose entry differs from the live entry is not used
    records = audit_ledger(directory=d)
    assert ledger_json(records) == fresh and _runs(log) == 1


def test_a_signed_file_with_malformed_records_is_recomputed_entry_by_entry(ledger):
    d, log, path, fresh = ledger
    data = _payload(path)
    data["records"]["duat:eq1"] = {"identity": 3, "record": []}
    _signed(path, data)
    assert ledger_json(audit_ledger(directory=d)) == fresh and _runs(log) == 2


@pytest.mark.parametrize("key_fault", ["world_readable", "wrong_length", "symlink", "directory", "inside_cache"])
def test_an_untrusted_key_disables_the_cache_but_not_the_audit(ledger, tmp_path, monkeypatch, key_fault):
    d, log, path, fresh = ledger
    key = key_file()
    if key_fault == "world_readable":
        key.chmod(0o644)
    elif key_fault == "wrong_length":
        key.write_bytes(b"short")
    elif key_fault == "symlink":
        real = tmp_path / "real-key"
        real.write_bytes(key.read_bytes())
        real.chmod(0o600)
        key.unlink()
        key.symlink_to(real)
    elif key_fault == "directory":
        key.unlink()
        key.mkdir()
    else:
        monkeypatch.setenv("SYMUAT_CACHE_DIR", str(key.parent))
    before = sorted(p.name for p in cache_dir().iterdir())
    assert ledger_json(audit_ledger(directory=d)) == fresh and _runs(log) == 2  # not read
    assert sorted(p.name for p in cache_dir().iterdir()) == before  # not written


def test_another_users_cache_is_not_trusted(ledger, tmp_path, monkeypatch):
    d, log, path, fresh = ledger
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "other-user"))
    assert ledger_json(audit_ledger(directory=d)) == fresh and _runs(log) == 2


def test_a_data_file_the_derivations_read_is_a_dependency(ledger):
    d, log, path, _ = ledger
    (d / "k.json").write_text("2")
    key = cache_key(0, directory=d)
    (d / "k.json").write_text("3")
    assert cache_key(0, directory=d) != key


def test_a_module_imported_lazily_by_a_builder_is_a_dependency(ledger, tmp_path, monkeypatch):
    d, log, path, _ = ledger
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "symuat_lazy_helper.py").write_text("K = 2\n")
    monkeypatch.syspath_prepend(str(lib))
    (d / "lazy.py").write_text(HEADER + '''
def _rhs(e, d):
    import symuat_lazy_helper
    return symuat_lazy_helper.K * e["A"] / 2

def entries():
    return [Entry("duat:eq9", Source("duat", "Eq. 9"), "A = KA/2", Status.PROVED,
                  Identity(shapes=lambda d: {"A": (d["N"], d["N"])}, lhs=lambda e, d: e["A"], rhs=_rhs,
                           dims=dims_grid(N=(1, 2))))]
''')
    try:
        assert audit_ledger(directory=d, only=["duat:eq9"])[0].computed.value == "proved"
        clear_memory()
        (lib / "symuat_lazy_helper.py").write_text("K = 3\n")
        sys.modules.pop("symuat_lazy_helper", None)
        assert audit_ledger(directory=d, only=["duat:eq9"])[0].computed is None  # recomputed, now false
    finally:
        sys.modules.pop("symuat_lazy_helper", None)


def test_a_cache_directory_that_is_a_file_is_not_an_error(ledger, tmp_path, monkeypatch):
    d, log, path, fresh = ledger
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    monkeypatch.setenv("SYMUAT_CACHE_DIR", str(blocker))
    assert ledger_json(audit_ledger(directory=d)) == fresh
