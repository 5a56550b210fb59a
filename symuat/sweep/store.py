r"""The output of a sweep: a Parquet dataset, one row per prompt, written so that nothing is lost or doubled.

Layout of ``OUT``::

    OUT/sweep.json            the model hash and options (a sweep with other ones is refused, not mixed in)
    OUT/staging/*.parquet     batches as they finish (each file written to a temporary name, then renamed)
    OUT/data/part-00000.parquet …   the dataset, sorted by prompt index, written when the sweep completes

A crash or Ctrl-C leaves only whole staging files; the next run reads their keys, skips those prompts, and at the
end rewrites ``data/`` from every row (keyed, so a row seen twice is kept once) before it removes the staging
files.  The same rows always give byte-identical ``data/`` files.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any, Iterable

from ..errors import InvalidValueError, OutputError

__all__ = ["SCHEMA_FIELDS", "Store", "ROWS_PER_FILE"]

#: rows per file of ``data/``
ROWS_PER_FILE = 10_000

#: (name, pyarrow type name) of every column, in order
SCHEMA_FIELDS = (
    ("key", "string"), ("index", "int64"), ("status", "string"), ("reason", "string"), ("n_tokens", "int64"),
    ("token_ids", "list<int64>"), ("tokens", "list<string>"), ("target_id", "int64"), ("value", "float64"),
    ("library_value", "float64"), ("error", "float64"), ("parts", "list<string>"), ("values", "list<float64>"),
    ("other", "float64"), ("rest", "float64"), ("corrupt_token_ids", "list<int64>"), ("corrupted_value", "float64"),
)


def _schema():
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(),
             "list<int64>": pa.list_(pa.int64()), "list<string>": pa.list_(pa.string()),
             "list<float64>": pa.list_(pa.float64())}
    return pa.schema([(name, types[t]) for name, t in SCHEMA_FIELDS])


class Store:
    """The output directory of one sweep (module docstring)."""

    def __init__(self, out: Any, manifest: dict):
        self.root = Path(out)
        if self.root.exists() and not self.root.is_dir():
            raise OutputError(f"--out {str(self.root)!r} exists and is not a directory")
        path = self.root / "sweep.json"
        if path.is_file():
            try:
                old = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise OutputError(f"{str(path)!r} cannot be read ({exc}); it is not a sweep's manifest") from None
            if old != manifest:
                diff = sorted(k for k in set(old) | set(manifest) if old.get(k) != manifest.get(k))
                raise InvalidValueError(f"{str(self.root)!r} holds a sweep with another {', '.join(diff)}; give "
                                        "another --out (rows of different sweeps are never mixed)")
        elif self.root.is_dir() and any(self.root.iterdir()):
            raise OutputError(f"--out {str(self.root)!r} is a directory that holds no sweep; give a new or empty one")
        try:
            (self.root / "staging").mkdir(parents=True, exist_ok=True)
            (self.root / "data").mkdir(exist_ok=True)
            if not path.is_file():
                self._atomic_bytes(path, (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())
        except OSError as exc:
            raise OutputError(f"cannot write the sweep into {str(self.root)!r}: {exc.strerror or exc}") from None

    @staticmethod
    def _atomic_bytes(path: Path, data: bytes) -> None:
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    def _write_table(self, path: Path, rows: list) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist(rows, schema=_schema())
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        try:
            pq.write_table(table, tmp, compression="zstd")
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            raise OutputError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
        finally:
            tmp.unlink(missing_ok=True)

    def _files(self, folder: str) -> list:
        return sorted(p for p in (self.root / folder).glob("*.parquet") if not p.name.startswith("."))

    def _read(self, files: Iterable[Path], columns=None) -> list:
        import pyarrow.parquet as pq

        rows = []
        for f in files:
            rows.extend(pq.read_table(f, columns=columns).to_pylist())
        return rows

    def done_keys(self) -> set:
        """Keys of every row already written (staging or data)."""
        return {r["key"] for r in self._read(self._row_files(), columns=["key"])}

    def add(self, rows: list) -> None:
        """Write a finished batch to ``staging/`` (atomically: a whole file or none)."""
        if rows:
            self._write_table(self.root / "staging" / f"batch-{uuid.uuid4().hex}.parquet", rows)

    def _row_files(self) -> list:
        """Files whose rows count: staging, ``data/``, and a ``data/`` set aside by a swap that did not finish."""
        kept = [f for d in sorted(self.root.glob(".data-old-*")) for f in sorted(d.glob("*.parquet"))]
        return self._files("staging") + self._files("data") + kept

    def finish(self) -> int:
        """Rewrite ``data/`` from every row (one per key, by prompt index), then drop the staging files; returns
        the number of rows.

        The new files are written into a fresh folder that then takes the place of ``data/`` (two renames): a
        reader sees the old dataset or the new one, never a mixture.
        """
        files = self._row_files()
        rows = {}
        for r in self._read(files):
            rows.setdefault(r["key"], r)
        ordered = sorted(rows.values(), key=lambda r: (r["index"], r["key"]))
        tag = uuid.uuid4().hex
        new, old = self.root / f".data-new-{tag}", self.root / f".data-old-{tag}"
        try:
            new.mkdir()
            for i in range(0, max(len(ordered), 1), ROWS_PER_FILE):
                self._write_table(new / f"part-{i // ROWS_PER_FILE:05d}.parquet", ordered[i:i + ROWS_PER_FILE])
            os.replace(self.root / "data", old)
            os.replace(new, self.root / "data")
        except OSError as exc:
            raise OutputError(f"cannot write {str(self.root / 'data')!r}: {exc.strerror or exc}") from None
        for f in files:
            if f.parent.name == "staging":
                f.unlink(missing_ok=True)
        for d in [old, *self.root.glob(".data-old-*"), *self.root.glob(".data-new-*")]:
            shutil.rmtree(d, ignore_errors=True)
        return len(ordered)
