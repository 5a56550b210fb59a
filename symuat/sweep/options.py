r"""What a sweep computes for each prompt, and the key that makes every row unique.

A row's key is the SHA-256 of the prompt's content, the model's content hash and the options (canonical JSON):
the same prompt, model and options is the same row, so a re-run skips it and a changed model or option is a new
row.  The model's hash covers every file of the checkpoint directory (names and bytes), read in chunks.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

from ..errors import InvalidValueError
from .prompts import Prompt

__all__ = ["BY", "PATCH", "PATCH_MODES", "SweepOptions", "model_hash", "prompt_key"]

#: the parts a sweep attributes the target to (``symuat.analysis.attribution``)
BY = ("head", "source", "neuron", "layer", "term")
#: what a patching sweep patches from the clean into the corrupted run (``symuat.analysis.patching.SWEEPS``)
PATCH = ("resid", "attn", "ffn", "head")
#: how the network after a patch is evaluated (``symuat.analysis.patching.MODES``)
PATCH_MODES = ("recomputed", "frozen")


@dataclass(frozen=True)
class SweepOptions:
    r"""Options of a sweep (``symuat sweep --help``).

    Attributes
    ----------
    by : str
        The parts: one of :data:`BY`.
    target : str or int
        ``"top"``: the logit of the token the library predicts at the last position (a prompt's own ``target``
        wins); an ``int``: that token id's logit.  A model without an LM head attributes the last token's output
        (signed shares of :math:`\lVert x\rVert^2`).
    top : int
        Keep the ``top`` parts of largest magnitude per row and sum the others into ``other`` (0: keep all).
    tolerance : float
        A row whose error against the library exceeds it has status ``"inexact"``, never ``"ok"``.
    patch : str, optional
        A patching sweep instead of an attribution (``by`` is then unused): one of :data:`PATCH`.  Each prompt's
        run is the clean one and its ``corrupt`` / ``corrupt_ids`` the corrupted one; a row holds the target
        logit of the corrupted run with each (layer, position) — or (layer, head) — patched from the clean run.
    patch_mode : str
        One of :data:`PATCH_MODES`.
    """

    by: str = "head"
    target: Any = "top"
    top: int = 0
    tolerance: float = 1e-10
    patch: Optional[str] = None
    patch_mode: str = "recomputed"

    def __post_init__(self):
        if self.by not in BY:
            raise InvalidValueError(f"by must be one of {BY}, got {self.by!r}")
        t = self.target
        if not (t == "top" or (isinstance(t, int) and not isinstance(t, bool) and t >= 0)):
            raise InvalidValueError(f"target must be 'top' or a token id >= 0, got {t!r}")
        if isinstance(self.top, bool) or not isinstance(self.top, int) or self.top < 0:
            raise InvalidValueError(f"top must be an integer >= 0 (0 keeps every part), got {self.top!r}")
        if not (isinstance(self.tolerance, float) and 0 < self.tolerance < 1):
            raise InvalidValueError(f"tolerance must be a float in (0, 1), got {self.tolerance!r}")
        if self.patch is not None and self.patch not in PATCH:
            raise InvalidValueError(f"patch must be one of {PATCH} (or None for an attribution), got {self.patch!r}")
        if self.patch_mode not in PATCH_MODES:
            raise InvalidValueError(f"patch_mode must be one of {PATCH_MODES}, got {self.patch_mode!r}")
        if self.patch is None and self.patch_mode != "recomputed":
            raise InvalidValueError("patch_mode is for a patching sweep: give patch too")

    def as_dict(self) -> dict:
        """The options as canonical JSON data; an attribution sweep's has no patch keys (its rows keep their keys)."""
        out = asdict(self)
        if self.patch is None:
            del out["patch"], out["patch_mode"]
        return out


def model_hash(directory: Any, chunk: int = 1 << 22) -> str:
    r"""SHA-256 over the checkpoint directory's regular files: each relative name, size and bytes, in name order."""
    root = Path(directory)
    if not root.is_dir():
        raise InvalidValueError(f"model directory {str(root)!r} does not exist or is not a directory")
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name = path.relative_to(root).as_posix()
        h.update(f"{name}\0{path.stat().st_size}\0".encode())
        with path.open("rb") as f:
            while block := f.read(chunk):
                h.update(block)
    return h.hexdigest()


def prompt_key(prompt: Prompt, model: str, options: SweepOptions) -> str:
    """The row key: SHA-256 of the prompt's content, the model hash and the options (canonical JSON)."""
    blob = json.dumps({"prompt": prompt.content(), "model": model, "options": options.as_dict()},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()
