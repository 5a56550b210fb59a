"""symuat.ledger.reads: which reads are sources, which are untrackable, and how recordings nest and travel."""

from __future__ import annotations

import json
import os
import sysconfig
from pathlib import Path

import numpy
import pytest

from symuat.ledger.reads import Reads, note, read_sources, recording


def _sources(action) -> tuple[dict[str, str], list[str]]:
    with recording() as reads:
        action()
    return read_sources(reads)


@pytest.mark.parametrize("mode, counts", [("r", True), ("rb", True), ("r+", True), ("a+", True), ("w", False),
                                          ("wb", False), ("w+", False), ("x", False), ("a", False), ("ab", False)])
def test_a_file_opened_to_read_is_a_source_and_one_written_is_not(tmp_path, mode, counts):
    path = tmp_path / "f.txt"
    if "x" not in mode:
        path.write_text("2")
    labels, untrackable = _sources(lambda: open(path, mode).close())  # noqa: SIM115, PTH123 - the open is the point
    assert (f"file:{path}" in labels) is counts and untrackable == []


@pytest.mark.parametrize("flags, counts", [(os.O_RDONLY, True), (os.O_RDWR, True), (os.O_RDWR | os.O_CREAT, True),
                                           (os.O_WRONLY, False), (os.O_RDWR | os.O_TRUNC, False),
                                           (os.O_RDWR | os.O_CREAT | os.O_EXCL, False)])
def test_os_open_counts_by_its_flags(tmp_path, flags, counts):
    path = tmp_path / "f.txt"
    if not flags & os.O_EXCL:
        path.write_text("2")
    labels, _ = _sources(lambda: os.close(os.open(path, flags)))
    assert (f"file:{path}" in labels) is counts


def test_the_digest_is_the_content_and_the_label_the_path_as_opened(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "k.txt").write_text("2")
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    labels, _ = _sources(lambda: (tmp_path / "link" / "k.txt").read_text())
    assert list(labels) == [f"file:{tmp_path / 'link' / 'k.txt'}"]
    assert list(labels.values()) == ["d4735e3a265e16eee03f59718b9b5d03019c07d8b6c51f90da3a666eec13ab35"]  # sha256("2")


def test_library_files_count_by_version_and_bytecode_and_dev_null_not_at_all():
    stdlib = Path(sysconfig.get_paths()["stdlib"]) / "json" / "__init__.py"
    labels, untrackable = _sources(lambda: (stdlib.read_text(), Path(numpy.__file__).read_text(),
                                            Path(os.devnull).read_text()))
    assert untrackable == []
    assert [label.split(":")[0] for label in labels] == ["site"]  # numpy's site-packages, by its versions


def test_a_listing_is_a_source_of_its_names(tmp_path):
    (tmp_path / "a").write_text("")
    first, _ = _sources(lambda: os.listdir(tmp_path))
    assert list(first) == [f"dir:{tmp_path}"]
    (tmp_path / "b").write_text("")
    second, _ = _sources(lambda: os.listdir(tmp_path))
    assert second[f"dir:{tmp_path}"] != first[f"dir:{tmp_path}"]


@pytest.mark.parametrize("what, why", [
    ("fifo", "is not a regular file"), ("missing", "is gone"), ("proc", "is live kernel state"),
    ("dev_zero", "is not a regular file"),
])
def test_an_untrackable_read_says_why(tmp_path, what, why):
    path = {"fifo": tmp_path / "p", "missing": tmp_path / "none", "proc": Path("/proc/self/status"),
            "dev_zero": Path("/dev/zero")}[what]
    if what == "fifo":
        os.mkfifo(path)

    def read():
        try:
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        except FileNotFoundError:
            pass

    labels, untrackable = _sources(read)
    assert labels == {} and len(untrackable) == 1 and untrackable[0].startswith(f"{path} {why}")


def test_recordings_nest_and_a_workers_reads_are_noted_in_each(tmp_path):
    path = tmp_path / "k.txt"
    path.write_text("2")
    with recording() as outer:
        with recording() as inner:
            path.read_text()
        note(Reads({"/w/x": None}, {}, {"socket.connect x"}))  # as a worker process sends them
    assert str(path) in outer.files and str(path) in inner.files
    assert "/w/x" in outer.files and "/w/x" not in inner.files and outer.other == {"socket.connect x"}


def test_reads_travel_as_json():
    reads = Reads({"/a": [1, 2, 3, 4], "/b": None}, {"/d": [5, 6, 7, 8]}, {"socket.connect x"})
    back = Reads.from_data(json.loads(json.dumps(reads.to_data())))
    assert back == reads
