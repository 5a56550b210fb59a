r"""The prompts of a sweep: read from a ``.jsonl``, ``.parquet`` or ``.txt`` file, each keyed by its content.

A prompt is a text or a row of token ids, with an optional target token id and, for a patching sweep
(``--patch``), a corrupted counterpart of the same length: ``corrupt`` (a text) or ``corrupt_ids``.  The formats:

- ``.txt``: one text per line (empty lines are prompts too: they become error rows, never silently dropped);
- ``.jsonl``: one JSON object per line, ``{"text": "…"}`` or ``{"input_ids": [1, 5, 9]}``, optionally
  ``"target": <token id>``, and ``"corrupt": "…"`` or ``"corrupt_ids": [1, 6, 9]``;
- ``.parquet``: a column ``text`` or ``input_ids`` (a list of integers), optionally ``target``, ``corrupt`` or
  ``corrupt_ids``.

A line that cannot be read (bad JSON, both or neither of ``text`` and ``input_ids``) is still a prompt: its row
is an error row with the reason, so that the dataset has one row per line of the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ..errors import InvalidValueError, UnsupportedError

__all__ = ["Prompt", "read_prompts", "FORMATS"]

#: the prompt file formats, by suffix
FORMATS = (".jsonl", ".parquet", ".txt")


@dataclass(frozen=True)
class Prompt:
    r"""One prompt: ``index`` (0-based line or row of the file) and exactly one of ``text`` and ``input_ids``.

    ``corrupt`` / ``corrupt_ids`` is the corrupted run of a patching sweep (at most one of them).  ``problem`` is
    set, and the rest empty, when the line could not be read: the sweep writes an error row.
    """

    index: int
    text: Optional[str] = None
    input_ids: Optional[tuple] = None
    target: Optional[int] = None
    problem: Optional[str] = None
    corrupt: Optional[str] = None
    corrupt_ids: Optional[tuple] = None

    def __post_init__(self):
        if self.problem is None and (self.text is None) == (self.input_ids is None):
            raise InvalidValueError(f"prompt {self.index}: give exactly one of text and input_ids")
        if self.corrupt is not None and self.corrupt_ids is not None:
            raise InvalidValueError(f"prompt {self.index}: give at most one of corrupt and corrupt_ids")

    @property
    def has_corrupt(self) -> bool:
        """Whether the prompt names a corrupted run (a patching sweep needs one)."""
        return self.corrupt is not None or self.corrupt_ids is not None

    def content(self) -> dict:
        """What the prompt's key is computed from (its index is not: the same prompt twice is one row).  The
        corrupted run is part of it only when given, so an attribution prompt keeps the key it always had."""
        out = {"text": self.text, "input_ids": None if self.input_ids is None else list(self.input_ids),
               "target": self.target, "problem": self.problem}
        if self.corrupt is not None:
            out["corrupt"] = self.corrupt
        if self.corrupt_ids is not None:
            out["corrupt_ids"] = list(self.corrupt_ids)
        return out


def _token_id(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} must be an integer token id, got {value!r}")
    return value


def _run(record: dict, text_key: str, ids_key: str, exactly_one: bool) -> tuple:
    """``(text, ids)`` of one run of a record (the prompt's, or its corrupted counterpart's), checked."""
    text, ids = record.get(text_key), record.get(ids_key)
    if exactly_one and (text is None) == (ids is None):
        raise ValueError(f"give exactly one of '{text_key}' and '{ids_key}'")
    if text is not None and ids is not None:
        raise ValueError(f"give at most one of '{text_key}' and '{ids_key}'")
    if text is not None and not isinstance(text, str):
        raise ValueError(f"'{text_key}' must be a string, got {type(text).__name__}")
    if ids is not None:
        if not isinstance(ids, (list, tuple)):
            raise ValueError(f"'{ids_key}' must be a list of integers, got {type(ids).__name__}")
        ids = tuple(_token_id(i, f"each of '{ids_key}'") for i in ids)
    return text, ids


def _from_record(index: int, record: Any) -> Prompt:
    """A prompt from one JSON object or Parquet row; a malformed one becomes a prompt with ``problem`` set."""
    try:
        if not isinstance(record, dict):
            raise ValueError(f"expected an object with 'text' or 'input_ids', got {type(record).__name__}")
        text, ids = _run(record, "text", "input_ids", exactly_one=True)
        target = record.get("target")
        if target is not None:
            target = _token_id(target, "'target'")
        corrupt, corrupt_ids = _run(record, "corrupt", "corrupt_ids", exactly_one=False)
        return Prompt(index, text=text, input_ids=ids, target=target, corrupt=corrupt, corrupt_ids=corrupt_ids)
    except ValueError as exc:
        return Prompt(index, problem=str(exc))


def read_prompts(path: Any) -> tuple[Prompt, ...]:
    r"""Every prompt of ``path`` (module docstring), in file order.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "p.jsonl"
    >>> _ = p.write_text('{"input_ids": [1, 2]}\n{"text": "hi", "target": 3}\n')
    >>> [(q.input_ids, q.text, q.target) for q in read_prompts(p)]
    [((1, 2), None, None), (None, 'hi', 3)]
    """
    path = Path(path)
    if path.suffix not in FORMATS:
        raise UnsupportedError(f"prompts file {str(path)!r}: expected one of {', '.join(FORMATS)}, "
                               f"got {path.suffix or 'no suffix'!r}")
    if not path.is_file():
        raise InvalidValueError(f"prompts file {str(path)!r} does not exist or is not a file")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        if "text" not in table.column_names and "input_ids" not in table.column_names:
            raise InvalidValueError(f"prompts file {str(path)!r}: needs a column 'text' or 'input_ids', has "
                                    f"{table.column_names}")
        rows = table.to_pylist()
        return tuple(_from_record(i, {k: v for k, v in r.items() if v is not None}) for i, r in enumerate(rows))
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InvalidValueError(f"prompts file {str(path)!r} is not UTF-8 text: {exc.reason}") from None
    if path.suffix == ".txt":
        return tuple(Prompt(i, text=line) for i, line in enumerate(lines))
    out = []
    for i, line in enumerate(lines):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            out.append(Prompt(i, problem=f"line {i + 1} is not JSON: {exc.msg}"))
            continue
        out.append(_from_record(i, record))
    return tuple(out)
