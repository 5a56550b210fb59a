"""Fault injection at the audit child's lifetime: whatever user code starts, ``symuat audit`` ends, and ends it.

The audit runs in a forked child (symuat.ledger.isolation) in its own process group.  A derivation that holds a
``multiprocessing.Manager`` (its server process keeps the report pipe open after the child exits), starts a
process that never ends, or escapes the group must not make the audit wait forever; what stayed in the group is
killed.  Each case runs the command on a thread with a wall-clock limit, so a regression fails instead of hanging
the suite.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from faults_support import GOOD, HEADER, run

#: Seconds an audit of one tiny entry may take here, start-up included (it takes about 3 s).
LIMIT = 90


def _audit(directory: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``symuat audit`` in this process (its audit child is forked from here), on a thread with a time limit."""
    done: list = []
    thread = threading.Thread(target=lambda: done.append(run(
        ["audit", "--derivations", str(directory), "--format", "json", "--quiet", "--no-cache", *extra], env=env)),
        daemon=True)
    thread.start()
    thread.join(LIMIT)
    if not done:
        pytest.fail(f"symuat audit did not finish within {LIMIT} s")
    return subprocess.CompletedProcess([], done[0].exit_code, done[0].stdout, done[0].stderr)


def _audit_process(directory: Path, stdin: int) -> subprocess.CompletedProcess:
    """``python -m symuat.cli audit`` as a process, waited on as a process, its output in files."""
    out, err = directory.parent / "stdout", directory.parent / "stderr"
    argv = [sys.executable, "-m", "symuat.cli", "audit", "--derivations", str(directory), "--format", "json",
            "--quiet", "--no-cache"]
    with out.open("w") as fo, err.open("w") as fe, subprocess.Popen(argv, stdout=fo, stderr=fe, stdin=stdin) as proc:
        try:
            proc.wait(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"symuat audit did not finish within {LIMIT} s")
    return subprocess.CompletedProcess(argv, proc.returncode, out.read_text(), err.read_text())


def _write(directory: Path, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "mine.py").write_text(HEADER + GOOD + body)
    return directory


def _proved(result: subprocess.CompletedProcess, n: int = 1) -> None:
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    entries = json.loads(result.stdout)["entries"]
    assert len(entries) == n and all(e["agrees"] and e["status"] == "proved" for e in entries)


def _gone(pid: int, within: float = 10.0) -> bool:
    """Whether process ``pid`` has ended (or is a zombie left for its new parent to reap)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


ENTRIES = "def entries():\n    return [_entry(1)]\n"

#: module body (a derivation with one true entry) → what it starts that would outlive the audit child.
LINGERING = {
    "manager_at_import": "import multiprocessing\n_M = multiprocessing.Manager()\n" + ENTRIES,
    "manager_in_entries": "import multiprocessing\n_KEEP = []\n"
                          "def entries():\n    _KEEP.append(multiprocessing.Manager())\n    return [_entry(1)]\n",
    "manager_in_a_builder": "import multiprocessing\n_KEEP = []\n"
                            "def _rhs(e, d):\n    _KEEP.append(multiprocessing.Manager())\n    return e['A'] + e['A']\n"
                            "def entries():\n    return [_entry(1, rhs=_rhs)]\n",
    "endless_process_at_import": "import multiprocessing, time\n_P = multiprocessing.Process(target=time.sleep, "
                                 "args=(3600,))\n_P.start()\n" + ENTRIES,
    "pool_never_closed": "import multiprocessing\n_POOL = multiprocessing.Pool(1)\n" + ENTRIES,
}


@pytest.mark.parametrize("case", sorted(LINGERING))
def test_what_a_derivation_starts_cannot_hang_the_audit(tmp_path, case):
    _proved(_audit(_write(tmp_path / "d", LINGERING[case])))


def test_a_manager_in_builders_on_worker_processes_cannot_hang_the_audit(tmp_path):
    body = ("import multiprocessing\n_KEEP = []\n"
            "def _rhs(e, d):\n    _KEEP.append(multiprocessing.Manager())\n    return e['A'] + e['A']\n"
            "def entries():\n    return [_entry(i, rhs=_rhs) for i in range(1, 10)]\n")
    _proved(_audit(_write(tmp_path / "d", body), env={"SYMUAT_JOBS": "2"}), n=9)


@pytest.mark.parametrize("how", ["multiprocessing", "subprocess"])
def test_a_process_left_running_is_ended_with_the_audit(tmp_path, how):
    pid_file = tmp_path / "pid"
    start = ("import multiprocessing, time\n_P = multiprocessing.Process(target=time.sleep, args=(3600,))\n"
             "_P.start()\n_PID = _P.pid\n" if how == "multiprocessing" else
             "import subprocess\n_P = subprocess.Popen(['sleep', '3600'])\n_PID = _P.pid\n")
    body = start + f"open({str(pid_file)!r}, 'w').write(str(_PID))\n" + ENTRIES
    _proved(_audit(_write(tmp_path / "d", body)))
    assert _gone(int(pid_file.read_text()))


def test_a_process_that_leaves_the_group_cannot_hang_the_audit(tmp_path):
    """A grandchild in a session of its own keeps the report pipe open: the parent waits on the child, not the pipe.

    It is out of reach of the group kill, so the test ends it.
    """
    pid_file = tmp_path / "pid"
    body = ("import os, time\n"
            "if os.fork() == 0:\n    os.setsid()\n"
            f"    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
            "    time.sleep(3600)\n    os._exit(0)\n" + ENTRIES)
    try:
        _proved(_audit(_write(tmp_path / "d", body)))
    finally:
        for _ in range(100):
            if pid_file.exists() and pid_file.read_text():
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
                break
            time.sleep(0.05)


def test_a_manager_and_an_endless_builder_end_at_the_time_limit(tmp_path):
    body = ("import multiprocessing\n_M = multiprocessing.Manager()\n"
            "def _spin(e, d):\n    while True:\n        pass\n\n"
            "def entries():\n    return [_entry(20, rhs=_spin)]\n")
    result = _audit(_write(tmp_path / "d", body), env={"SYMUAT_ENTRY_TIMEOUT": "0.5"})
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "entry 'duat:eq20' exceeded the time limit of 0.5 s" in result.stderr


def test_user_code_reads_an_empty_standard_input(tmp_path):
    """The child's standard input is /dev/null: a builder that reads it gets end-of-file at once, never waits on
    the terminal.  (The command's own standard input here is a pipe that never ends.)"""
    body = ("import os\ndef _rhs(e, d):\n    assert os.read(0, 16) == b''\n    return e['A'] + e['A']\n"
            "def entries():\n    return [_entry(1, rhs=_rhs)]\n")
    read_end, write_end = os.pipe()  # nobody writes, and the write end stays open until the audit is over
    try:
        _proved(_audit_process(_write(tmp_path / "d", body), stdin=read_end))
    finally:
        os.close(read_end)
        os.close(write_end)
