r"""``symuat html``'s job: audit the ledger (from the audit cache when current) and write the site."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..build import output_directory
from ..latex.render import write_files
from ..ledger.audit import AuditRecord, check_seed
from ..ledger.isolation import audit_isolated
from ..ledger.stable import stable_records
from .site import site_files

__all__ = ["write_site"]


def write_site(out: str | Path, seed: int = 0, use_cache: bool = True, derivations: str | None = None,
               records: tuple[AuditRecord, ...] | None = None,
               on_start: Callable[[int], None] | None = None,
               on_done: Callable[[str], None] | None = None) -> tuple[tuple[AuditRecord, ...], list[Path]]:
    """Write the HTML ledger to ``out`` (checked for writing before anything is audited).

    ``records``: an audit already made at ``seed`` (the whole ledger); otherwise the ledger is audited.
    Returns the records and the files written.
    """
    check_seed(seed)
    with output_directory(out):
        if records is None:
            records = audit_isolated(directory=derivations, seed=seed, use_cache=use_cache, on_start=on_start,
                                     on_done=on_done)  # user code in a child process, like symuat audit
    files = site_files(stable_records(records), seed=seed, derivations=derivations)
    return records, write_files(out, files)  # 0644 less the umask
