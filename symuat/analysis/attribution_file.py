r"""Attributions streamed to an ``.npz`` file or a ``.zarr`` store chunk by chunk, and read back without loading them
(issue 32).

A full attribution's ``values`` (P, N, M) can exceed the memory (neurons of MiniLM at N = 512: 14.5 GB).
:class:`AttributionWriter` writes it into an uncompressed ``.npz`` member ``values.npy`` as the chunks come (the
``.npy`` header first, then the rows in C order), with ``parts``, ``rest``, ``output`` and ``by`` beside it;
every member has a fixed date, so the same call writes byte-identical files.  ``numpy.load(path)`` reads it as
any ``.npz``; :func:`read_attribution` maps ``values`` from the file (``numpy.memmap``, nothing loaded).

:class:`ZarrAttributionWriter` (the optional extra ``symuat[zarr]``) writes a Zarr v3 group: ``values`` chunked
along the parts (about :data:`ZARR_CHUNK_BYTES` a chunk, whole rows; lossless Zstandard), ``rest`` and ``output``
beside it, ``parts`` and ``by`` in the group's attributes (a row larger than a chunk is split along its tokens).
Rows are buffered until a chunk is full, so every chunk is written once.  :func:`read_attribution` opens
``values`` as a ``zarr.Array`` (indexing reads only the chunks touched).

Both are atomic: the file or store is written under a temporary name beside the target (``.{name}.{pid}.partial``) and
renamed when complete, and removed if the computation fails.  An ``.npz`` replaces an existing file only then;
a ``.zarr`` store is a directory, which cannot be replaced in one step, so an existing one is refused.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import struct
import zipfile
from pathlib import Path
from typing import Any, Tuple, Union

import numpy as np

from ..errors import InvalidValueError, OutputError, UnsupportedError

__all__ = ["AttributionWriter", "ZarrAttributionWriter", "open_writer", "read_attribution", "zarr_available",
           "ZARR_CHUNK_BYTES"]

_DATE = (1980, 1, 1, 0, 0, 0)
#: the target size of one chunk of a ``.zarr`` store's ``values`` (whole rows; at least one row)
ZARR_CHUNK_BYTES = 8 * 2 ** 20
SUFFIXES = (".npz", ".zarr")


def _partial(path: Path) -> Path:
    """The temporary name beside ``path`` (one per process: two writers of one path never share it)."""
    return path.with_name(f".{path.name}.{os.getpid()}.partial")


def zarr_available() -> bool:
    """Whether ``zarr`` (``pip install 'symuat[zarr]'``) is installed; it is imported only when a store is used."""
    return importlib.util.find_spec("zarr") is not None


def _zarr():
    try:
        zarr = importlib.import_module("zarr")
        importlib.import_module("zarr.codecs")
    except ImportError:
        raise UnsupportedError("out='….zarr' needs zarr: pip install 'symuat[zarr]' (or stream to an .npz "
                               "file)") from None
    return zarr


def open_writer(path: Any, shape: Tuple[int, ...]) -> Union["AttributionWriter", "ZarrAttributionWriter"]:
    """The writer for ``path``'s suffix: ``.npz`` (:class:`AttributionWriter`) or ``.zarr``
    (:class:`ZarrAttributionWriter`)."""
    suffix = Path(path).suffix
    if suffix not in SUFFIXES:
        raise InvalidValueError(f"out={str(path)!r}: expected a path ending in .npz or .zarr")
    return (AttributionWriter if suffix == ".npz" else ZarrAttributionWriter)(path, shape)


def chunk_bytes(path: Any, shape: Tuple[int, ...]) -> int:
    """Bytes a writer for ``path`` holds besides the computation's own: a ``.zarr`` store buffers up to one chunk of
    rows and compresses one chunk at a time."""
    if Path(path).suffix != ".zarr":
        return 0
    return 2 * 8 * int(np.prod(_chunk_shape(shape)))


def _chunk_shape(shape: Tuple[int, ...]) -> Tuple[int, ...]:
    """Whole rows of about :data:`ZARR_CHUNK_BYTES`; a row larger than that is split along its first axis."""
    row = 8 * int(np.prod(shape[1:]))
    if row <= ZARR_CHUNK_BYTES or len(shape) < 2:
        return (max(1, min(shape[0], ZARR_CHUNK_BYTES // max(row, 1))),) + tuple(shape[1:])
    inner = 8 * int(np.prod(shape[2:]))
    return (1, max(1, min(shape[1], ZARR_CHUNK_BYTES // inner))) + tuple(shape[2:])


def _info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_DATE)
    info.compress_type = zipfile.ZIP_STORED
    return info


class AttributionWriter:
    """Write ``values`` of shape ``shape`` chunk by chunk along its first axis to ``path`` (module doc)."""

    def __init__(self, path: Any, shape: Tuple[int, ...]):
        self.path, self.shape, self.rows = Path(path), tuple(int(s) for s in shape), 0
        if self.path.suffix != ".npz":
            raise InvalidValueError(f"out={str(path)!r}: expected a path ending in .npz")
        self._tmp = _partial(self.path)
        try:
            self._zip = zipfile.ZipFile(self._tmp, "w", zipfile.ZIP_STORED, allowZip64=True)
        except OSError as exc:
            raise OutputError(f"cannot write the attribution to {str(path)!r}: {exc}") from None
        self._fh = self._zip.open(_info("values.npy"), "w", force_zip64=True)
        np.lib.format.write_array_header_2_0(self._fh, {"descr": "<f8", "fortran_order": False,
                                                         "shape": self.shape})

    def write(self, chunk: np.ndarray) -> None:
        chunk = np.ascontiguousarray(chunk, dtype="<f8")
        if chunk.shape[1:] != self.shape[1:] or self.rows + chunk.shape[0] > self.shape[0]:
            raise InvalidValueError(f"chunk of shape {chunk.shape} does not continue values of shape {self.shape} "
                                    f"at row {self.rows}")
        self._fh.write(chunk.tobytes())
        self.rows += chunk.shape[0]

    def close(self, parts: Tuple[str, ...], rest: np.ndarray, output: np.ndarray, by: str) -> Path:
        self._fh.close()
        if self.rows != self.shape[0]:
            raise InvalidValueError(f"values has {self.rows} of {self.shape[0]} rows written")
        for name, arr in (("parts", np.array(parts, dtype=str)), ("rest", np.asarray(rest, float)),
                          ("output", np.asarray(output, float)), ("by", np.array(by))):
            with self._zip.open(_info(f"{name}.npy"), "w") as fh:
                np.lib.format.write_array(fh, arr, allow_pickle=False)
        self._zip.close()
        os.replace(self._tmp, self.path)
        return self.path

    def abort(self) -> None:
        """Close and remove a partly written file."""
        try:
            self._fh.close()
            self._zip.close()
        finally:
            self._tmp.unlink(missing_ok=True)


class ZarrAttributionWriter:
    """Write ``values`` of shape ``shape`` chunk by chunk along its first axis to a Zarr v3 store ``path``
    (module docstring)."""

    def __init__(self, path: Any, shape: Tuple[int, ...]):
        self.path, self.shape, self.rows = Path(path), tuple(int(s) for s in shape), 0
        if self.path.suffix != ".zarr":
            raise InvalidValueError(f"out={str(path)!r}: expected a path ending in .zarr")
        zarr = _zarr()
        if self.path.exists():
            raise OutputError(f"out={str(path)!r} exists: a .zarr store is not replaced; remove it or choose another "
                              "path")
        self._tmp = _partial(self.path)
        shutil.rmtree(self._tmp, ignore_errors=True)
        chunks = _chunk_shape(self.shape)
        self.chunk = chunks[0]
        try:
            self._group = zarr.open_group(str(self._tmp), mode="w-", zarr_format=3)
            self._values = self._group.create_array(
                "values", shape=self.shape, chunks=chunks, dtype="<f8", fill_value=0.0,
                compressors=[zarr.codecs.ZstdCodec(level=3)], config={"write_empty_chunks": True})
        except OSError as exc:
            shutil.rmtree(self._tmp, ignore_errors=True)
            raise OutputError(f"cannot write the attribution to {str(path)!r}: {exc}") from None
        self._buffer: list = []
        self._buffered = 0

    def write(self, chunk: np.ndarray) -> None:
        chunk = np.ascontiguousarray(chunk, dtype="<f8")
        if chunk.shape[1:] != self.shape[1:] or self.rows + self._buffered + chunk.shape[0] > self.shape[0]:
            raise InvalidValueError(f"chunk of shape {chunk.shape} does not continue values of shape {self.shape} "
                                    f"at row {self.rows + self._buffered}")
        self._buffer.append(chunk)
        self._buffered += chunk.shape[0]
        while self._buffered >= self.chunk:
            self._flush(self.chunk)

    def _flush(self, n: int) -> None:
        rows = np.concatenate(self._buffer) if len(self._buffer) > 1 else self._buffer[0]
        self._values[self.rows:self.rows + n] = rows[:n]
        self.rows += n
        self._buffered -= n
        self._buffer = [rows[n:]] if self._buffered else []

    def close(self, parts: Tuple[str, ...], rest: np.ndarray, output: np.ndarray, by: str) -> Path:
        if self._buffered:
            self._flush(self._buffered)
        if self.rows != self.shape[0]:
            raise InvalidValueError(f"values has {self.rows} of {self.shape[0]} rows written")
        zarr = _zarr()
        for name, arr in (("rest", np.asarray(rest, float)), ("output", np.asarray(output, float))):
            a = self._group.create_array(name, shape=arr.shape, dtype="<f8", fill_value=0.0,
                                         compressors=[zarr.codecs.ZstdCodec(level=3)],
                                         config={"write_empty_chunks": True})
            a[...] = arr
        self._group.attrs.update({"parts": [str(p) for p in parts], "by": str(by), "format": "symuat attribution"})
        if self.path.exists():
            raise OutputError(f"out={str(self.path)!r} appeared while the attribution was written: not replaced "
                              f"(the result is in {str(self._tmp)!r})")
        os.rename(self._tmp, self.path)
        return self.path

    def abort(self) -> None:
        """Remove the partly written store."""
        shutil.rmtree(self._tmp, ignore_errors=True)


def read_attribution(path: Any) -> Tuple[Any, dict]:
    """``(values, small)`` of the file or store ``path``: ``values`` mapped from an ``.npz`` (``numpy.memmap``) or
    opened in a ``.zarr`` store (``zarr.Array``), nothing loaded; the small members (``parts``, ``rest``,
    ``output``, ``by``) in a dict."""
    if Path(path).suffix == ".zarr":
        return _read_zarr(Path(path))
    path = Path(path)
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("values.npy")
        if info.compress_type != zipfile.ZIP_STORED:
            raise InvalidValueError(f"{str(path)!r}: values.npy is compressed; cannot map it")
        small = {n: np.load(z.open(f"{n}.npy"), allow_pickle=False) for n in ("parts", "rest", "output", "by")}
    with open(path, "rb") as fh:
        fh.seek(info.header_offset)
        name_len, extra_len = struct.unpack("<HH", fh.read(30)[26:30])
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        version = np.lib.format.read_magic(fh)
        read = np.lib.format.read_array_header_2_0 if version == (2, 0) else np.lib.format.read_array_header_1_0
        shape, fortran, dtype = read(fh)
        offset = fh.tell()
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape, order="F" if fortran else "C"), small


def _read_zarr(path: Path) -> Tuple[Any, dict]:
    zarr = _zarr()
    try:
        group = zarr.open_group(str(path), mode="r")
        attrs = dict(group.attrs)
        small = {"parts": np.array(attrs["parts"], dtype=str), "by": np.array(attrs["by"]),
                 "rest": np.asarray(group["rest"][...]), "output": np.asarray(group["output"][...])}
        return group["values"], small
    except (KeyError, FileNotFoundError, json.JSONDecodeError) as exc:
        raise InvalidValueError(f"{str(path)!r} is no attribution store written by symuat ({exc!r})") from None
