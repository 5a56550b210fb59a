r"""Sweeps: exact attributions of a model over a dataset of prompts, resumable, locally or on Ray.

``sweep(model_dir, prompts_file, out)`` writes one Parquet row per prompt (tokens, the error against the library,
the target value and each part's exact contribution); ``summary(out)`` ranks the parts across the prompts.  The
command line is ``symuat sweep`` and ``symuat summary``; the tutorial is docs/tutorial-sweep.md.
"""

from .options import BY, SweepOptions, model_hash, prompt_key
from .prompts import FORMATS, Prompt, read_prompts
from .runner import PromptRunner
from .store import SCHEMA_FIELDS
from .summary import PartRank, summary, summary_text
from .sweep import SweepResult, sweep

__all__ = [
    # the sweep
    "sweep", "SweepResult", "SweepOptions", "BY",
    # prompts and keys
    "Prompt", "read_prompts", "FORMATS", "model_hash", "prompt_key",
    # a worker, the dataset, the ranking
    "PromptRunner", "SCHEMA_FIELDS", "summary", "summary_text", "PartRank",
]
