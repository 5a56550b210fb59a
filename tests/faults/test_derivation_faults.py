"""Fault injection at the user-code boundary: derivation modules, builders, references and proxies.

Every case asserts the exact outcome: one ``symuat: error:`` line naming the module or entry and the file:line,
exit 2, nothing on standard output (so ``--format json`` is never corrupted), or the correct verdict.
"""

from __future__ import annotations

import pytest
from faults_support import GOOD, HEADER, audit_json, one_error_line, run, write

#: module body → what the one error line must contain ({file} is the module's path).
IMPORT_FAULTS = {
    "sys_exit_0": ("import sys\nsys.exit(0)\n", "failed to import: SystemExit (sys.exit(0)) ({file}:{line2})"),
    "sys_exit_1": ("import sys\nsys.exit(1)\n", "failed to import: SystemExit (sys.exit(1))"),
    "os_exit_0": ("import os\nos._exit(0)\n", "the audit process ended (exit code 0) while loading derivation "
                                               "module '{file}'"),
    "os_exit_7": ("import os\nos._exit(7)\n", "ended (exit code 7) while loading"),
    "kill_self": ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "ended (signal 9) while loading"),
    "syntax": ("def entries(:\n", "failed to import: SyntaxError"),
    "missing_module": ("import no_such_module_xyz\n", "failed to import: ModuleNotFoundError"),
    "raise_at_import": ("raise RuntimeError('boom')\n", "failed to import: RuntimeError: boom ({file}:"),
    "base_exception": ("raise BaseException('odd')\n", "failed to import: BaseException: odd"),
    "generator_exit": ("raise GeneratorExit()\n", "failed to import: GeneratorExit"),
    "entries_raises": ("def entries():\n    raise ValueError('bad')\n", "raised ValueError: bad ({file}:"),
    "entries_exits": ("def entries():\n    import sys; sys.exit(3)\n", "raised SystemExit (sys.exit(3))"),
    "entries_none": ("def entries():\n    return None\n", "raised TypeError"),
    "entries_string": ("def entries():\n    return 'abc'\n", "returned str, expected symuat Entry"),
    "entries_int": ("def entries():\n    return [42]\n", "returned int, expected symuat Entry"),
    "no_entries_function": ("X = 1\n", "defines no callable entries()"),
    "duplicate_ids": ("def entries():\n    return [_entry(1), _entry(1)]\n", "'duat:eq1' is defined twice"),
    "empty": ("def entries():\n    return []\n", "no entries found"),
}


@pytest.mark.parametrize("case", sorted(IMPORT_FAULTS))
def test_a_failing_derivation_module_is_one_error_line(tmp_path, case):
    body, expected = IMPORT_FAULTS[case]
    path = write(tmp_path / "d", body)
    result = run(["audit", "--derivations", str(tmp_path / "d"), "--format", "json", "--no-cache", "--quiet"])
    line2 = len((HEADER + GOOD).splitlines()) + 2  # the body's second line, where sys.exit is called
    one_error_line(result, expected.format(file=path, line2=line2))


#: entries() body (each returns the good entries 1..n plus one corrupted entry 20) → expected error pieces.
BUILDER_FAULTS = {
    "zero_division": ("rhs=lambda e, d: 1 / 0", "entry 'duat:eq20' raised ZeroDivisionError: division by zero"),
    "returns_none": ("rhs=lambda e, d: None", "Identity.rhs returned NoneType at dims {'N': 1}; expected a SymPy"),
    "returns_string": ("rhs=lambda e, d: 'A + A'", "Identity.rhs returned str"),
    "returns_number": ("rhs=lambda e, d: 3", "Identity.rhs returned int"),
    "sys_exit": ("rhs=lambda e, d: __import__('sys').exit(0)", "entry 'duat:eq20' raised SystemExit (sys.exit(0))"),
    "keyerror": ("rhs=lambda e, d: e['nope']", "entry 'duat:eq20' raised KeyError: 'nope'"),
    "shapes_raise": ("shapes=lambda d: 1 / 0", "Identity.shapes raised ZeroDivisionError"),
    "reference_raises": ("reference=lambda A: 1 / 0", "entry 'duat:eq20' raised ZeroDivisionError"),
    "reference_complex": ("reference=lambda A: (2 * A).astype(complex)",
                          "the reference returned complex128 values"),
    "reference_strings": ("reference=lambda A: __import__('numpy').full(A.shape, 'x')",
                          "the reference returned <U1 values"),
    "reference_nan": ("reference=lambda A: A * float('nan')", "the reference returned NaN or infinite entries"),
    "reference_inf": ("reference=lambda A: A * float('inf')", "the reference returned NaN or infinite entries"),
    "grid_3000": ("dims=dims_grid(N=(3000,))", "N=3000 is larger than 64"),
    "grid_points": ("dims=dims_grid(N=tuple(range(1, 30)), M=tuple(range(1, 30)))", "841 dimension tuples"),
}


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "workers"])
@pytest.mark.parametrize("case", sorted(BUILDER_FAULTS))
def test_a_failing_builder_or_reference_names_its_entry(tmp_path, case, parallel):
    corruption, expected = BUILDER_FAULTS[case]
    n = 9 if parallel else 2  # the audit uses worker processes from 8 entries on
    write(tmp_path / "d", "def entries():\n"
                          f"    return [*(_entry(i) for i in range(1, {n})), _entry(20, {corruption})]\n")
    result = run(["audit", "--derivations", str(tmp_path / "d"), "--format", "json", "--no-cache", "--quiet"],
                 env={"SYMUAT_JOBS": "2" if parallel else "1"})
    one_error_line(result, expected)


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "workers"])
def test_os_exit_in_a_builder_names_the_entry(tmp_path, parallel):
    n = 9 if parallel else 2
    path = write(tmp_path / "d", f"def entries():\n    return [*(_entry(i) for i in range(1, {n})), "
                                 "_entry(20, rhs=lambda e, d: __import__('os')._exit(0))]\n")
    result = run(["audit", "--derivations", str(tmp_path / "d"), "--format", "json", "--no-cache", "--quiet"],
                 env={"SYMUAT_JOBS": "2" if parallel else "1"})
    one_error_line(result, "'duat:eq20'", str(path))


def test_an_endless_builder_hits_the_time_limit(tmp_path):
    path = write(tmp_path / "d", "def _spin(e, d):\n    while True:\n        pass\n\n"
                                 "def entries():\n    return [_entry(20, rhs=_spin)]\n")
    result = run(["audit", "--derivations", str(tmp_path / "d"), "--no-cache", "--quiet"],
                 env={"SYMUAT_ENTRY_TIMEOUT": "0.5"})
    one_error_line(result, "entry 'duat:eq20' exceeded the time limit of 0.5 s (SYMUAT_ENTRY_TIMEOUT)", str(path))


def test_an_endless_import_hits_the_time_limit(tmp_path):
    write(tmp_path / "d", "while True:\n    pass\n")
    result = run(["audit", "--derivations", str(tmp_path / "d"), "--no-cache", "--quiet"],
                 env={"SYMUAT_ENTRY_TIMEOUT": "0.5"})
    one_error_line(result, "exceeded the time limit of 0.5 s")


def test_a_failing_prose_proxy_names_its_entry(tmp_path):
    write(tmp_path / "d", "def _proxy(seed):\n    raise OSError('disk')\n\ndef entries():\n"
                          "    return [Entry('duat:eq5', Source('duat', 'Eq. 5'), 'G(x)', Status.PROSE, "
                          "Prose('why', proxy=_proxy))]\n")
    one_error_line(run(["audit", "--derivations", str(tmp_path / "d"), "--no-cache", "--quiet"]),
                   "entry 'duat:eq5' raised OSError: disk")


@pytest.mark.parametrize("where", ["import", "builder"])
def test_printing_user_code_never_reaches_the_json(tmp_path, where):
    body = ("print('{\"not\": \"json\"}')\n\ndef entries():\n    return [_entry(1)]\n" if where == "import" else
            "def _loud(e, d):\n    print('hello', flush=True)\n    return e['A'] + e['A']\n\n"
            "def entries():\n    return [_entry(1, rhs=_loud)]\n")
    write(tmp_path / "d", body)
    data = audit_json(tmp_path / "d", "--no-cache")
    assert [e["id"] for e in data["entries"]] == ["duat:eq1"] and data["entries"][0]["agrees"]
