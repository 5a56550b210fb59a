"""Full attributions streamed to disk (issue 32): a Zarr store (the optional extra ``symuat[zarr]``) read back equals
the in-memory result bit for bit, over chunk sizes that do not divide the parts, written deterministically and
atomically like the ``.npz`` file; an existing store is refused, a failed computation leaves nothing behind.
Without zarr these tests skip, unless ``SYMUAT_REQUIRE_ZARR=1`` (then they fail); those that need it run in CI's slow
step (the ``zarr`` fixture, tests/conftest.py)."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

from symuat.analysis.attribution import load_attribution
from symuat.errors import InvalidValueError, OutOfMemoryError, OutputError, UnsupportedError
from symuat.numeric import duat_form, random_stack

TOL = 1e-12


@pytest.fixture
def form(monkeypatch):
    rng = np.random.default_rng(4)
    f = duat_form(random_stack(rng, 2, 8, 2, 12, kind="pre_ln", causal=True), rng.standard_normal((5, 8)))
    monkeypatch.setattr(importlib.import_module("symuat.analysis.attribution"), "CHUNK_BYTES", 4 * 8 * 5 * 8 * 3)
    monkeypatch.setattr(importlib.import_module("symuat.analysis.attribution_file"), "ZARR_CHUNK_BYTES",
                        8 * 5 * 8 * 2)  # two parts a zarr chunk, three parts a computed chunk: unaligned
    return f


def _bits(a) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype="<f8")).view("<i8")  # -0.0 and 0.0 differ here


def _tree(path: Path) -> dict:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("by", ["source", "neuron", "term"])
def test_zarr_reads_back_bit_for_bit(zarr, form, by, tmp_path):
    mem = form.attribution(by, quiet=True)
    disk = form.attribution(by, out=tmp_path / "a.zarr", quiet=True)
    assert type(disk.values).__module__.startswith("zarr") and disk.parts == mem.parts and disk.by == by
    assert np.array_equal(_bits(disk.values[...]), _bits(mem.values))
    assert np.array_equal(_bits(disk.rest), _bits(mem.rest)) and np.array_equal(_bits(disk.output), _bits(mem.output))
    assert disk.error <= TOL and abs(disk.error - mem.error) <= 1e-15
    again = load_attribution(tmp_path / "a.zarr")
    assert np.array_equal(_bits(again.values[...]), _bits(mem.values)) and again.parts == mem.parts
    assert [p.name for p in tmp_path.iterdir()] == ["a.zarr"]  # no partial store left
    if by == "neuron":  # deterministic: the same call writes the same bytes
        form.attribution(by, out=tmp_path / "b.zarr", quiet=True)
        assert _tree(tmp_path / "a.zarr") == _tree(tmp_path / "b.zarr")


def test_zarr_of_one_position_and_negative_zero(zarr, form, tmp_path):
    mem = form.attribution("head", target=np.ones(8), position=4, method="full")
    disk = form.attribution("head", target=np.ones(8), position=4, out=tmp_path / "p.zarr")
    assert disk.values.shape == mem.values.shape == (len(mem.parts),)
    assert np.array_equal(_bits(disk.values[...]), _bits(mem.values)) and float(disk.rest) == float(mem.rest)
    src = form.attribution("source", out=tmp_path / "s.zarr")  # causal: token 0 gets exact zeros from later ones
    assert np.array_equal(_bits(src.values[...]), _bits(form.attribution("source").values))


def test_an_existing_store_is_refused_and_kept(zarr, form, tmp_path):
    form.attribution("layer", out=tmp_path / "a.zarr")
    before = _tree(tmp_path / "a.zarr")
    with pytest.raises(OutputError, match=r"a\.zarr' exists: a \.zarr store is not replaced"):
        form.attribution("neuron", out=tmp_path / "a.zarr")
    assert _tree(tmp_path / "a.zarr") == before


@pytest.mark.parametrize("suffix", [".zarr", ".npz"])
def test_a_failure_mid_stream_leaves_nothing_behind(request, form, tmp_path, monkeypatch, suffix):
    """A disk error after the first chunk (injected into the real writer): the error comes through, no partial file
    or store is left, and an existing .npz keeps its old content."""
    if suffix == ".zarr":
        request.getfixturevalue("zarr")
    mod = importlib.import_module("symuat.analysis.attribution_file")
    cls = mod.ZarrAttributionWriter if suffix == ".zarr" else mod.AttributionWriter
    old = form.attribution("layer", out=tmp_path / "keep.npz").values.copy()
    calls = []
    write = cls.write

    def failing(self, chunk):
        calls.append(1)
        if len(calls) > 1:
            raise OSError("No space left on device")
        write(self, chunk)

    monkeypatch.setattr(cls, "write", failing)
    target = tmp_path / ("keep.npz" if suffix == ".npz" else "a.zarr")
    with pytest.raises(OSError, match="No space left"):
        form.attribution("neuron", out=target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.npz"]
    assert np.array_equal(load_attribution(tmp_path / "keep.npz").values, old)


def test_hostile_paths_and_budgets(request, form, tmp_path, monkeypatch):
    with pytest.raises(InvalidValueError, match=r"expected a path ending in \.npz or \.zarr"):
        form.attribution("head", out=tmp_path / "a.h5")
    monkeypatch.setitem(__import__("sys").modules, "zarr", None)  # zarr not importable
    with pytest.raises(UnsupportedError, match=r"needs zarr: pip install 'symuat\[zarr\]'"):
        form.attribution("head", out=tmp_path / "a.zarr")
    monkeypatch.undo()
    request.getfixturevalue("zarr")
    monkeypatch.setenv("SYMUAT_MEMORY_LIMIT", "1K")
    with pytest.raises(OutOfMemoryError, match=r"in the attribution by 'head' \(full method, values \(7, 5, 8\)\)"):
        form.attribution("head", out=tmp_path / "b.zarr")
    assert not (tmp_path / "b.zarr").exists()
    monkeypatch.delenv("SYMUAT_MEMORY_LIMIT")
    (tmp_path / "c.zarr").mkdir()
    (tmp_path / "c.zarr" / "zarr.json").write_text("not json")
    with pytest.raises(InvalidValueError, match=r"c\.zarr' is no attribution store written by symuat"):
        load_attribution(tmp_path / "c.zarr")


def test_zarr_rows_larger_than_a_chunk_are_split(zarr, form, tmp_path, monkeypatch):
    """A part's (N, M) row of 320 bytes over chunks of 128: chunks of (1, 2, M), the last one partial."""
    monkeypatch.setattr(importlib.import_module("symuat.analysis.attribution_file"), "ZARR_CHUNK_BYTES", 128)
    disk = form.attribution("neuron", out=tmp_path / "a.zarr")
    assert disk.values.chunks == (1, 2, 8)
    assert np.array_equal(_bits(disk.values[...]), _bits(form.attribution("neuron").values))
