r"""Attributions streamed to an ``.npz`` file chunk by chunk, and read back without loading them (issue 32).

A full attribution's ``values`` (P, N, M) can exceed the memory (neurons of MiniLM at N = 512: 14.5 GB).
:class:`AttributionWriter` writes it into an uncompressed ``.npz`` member ``values.npy`` as the chunks come (the
``.npy`` header first, then the rows in C order), with ``parts``, ``rest``, ``output`` and ``by`` beside it;
every member has a fixed date, so the same call writes byte-identical files.  ``numpy.load(path)`` reads it as
any ``.npz``; :func:`read_attribution` maps ``values`` from the file (``numpy.memmap``, nothing loaded).
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path
from typing import Any, Tuple

import numpy as np

from ..errors import InvalidValueError, OutputError

__all__ = ["AttributionWriter", "read_attribution"]

_DATE = (1980, 1, 1, 0, 0, 0)


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
        try:
            self._zip = zipfile.ZipFile(self.path, "w", zipfile.ZIP_STORED, allowZip64=True)
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
        return self.path

    def abort(self) -> None:
        """Close and remove a partly written file."""
        try:
            self._fh.close()
            self._zip.close()
        finally:
            self.path.unlink(missing_ok=True)


def read_attribution(path: Any) -> Tuple[np.memmap, dict]:
    """``(values, rest)`` of the file ``path``: ``values`` mapped from it, the small members (``parts``, ``rest``,
    ``output``, ``by``) in a dict."""
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
