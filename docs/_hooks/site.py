"""MkDocs hooks of the docs site.

- ``on_page_markdown``: the test marks of a code fence (```` ```python fixture:torch continuation ````, read by
  pytest-markdown-docs, docs/testing.md) are dropped before rendering; the page shows a plain Python block.
- ``on_post_build``: the HTML ledger (``symuat html``) is written into ``<site_dir>/ledger/``; the pages link to
  ``ledger/index.html``.  The audit comes from the audit cache when it is current.
"""

from __future__ import annotations

import re
from pathlib import Path

from symuat.html import write_site

_FENCE_MARKS = re.compile(r"^(?P<fence>[ \t]*(?:`{3,}|~{3,})[ \t]*python)[ \t]+[^\n`]*$", re.M)


def on_page_markdown(markdown: str, **kwargs) -> str:
    return _FENCE_MARKS.sub(lambda m: m.group("fence"), markdown)


def on_post_build(config, **kwargs) -> None:
    records, _ = write_site(Path(config["site_dir"]) / "ledger")
    disagreeing = [r.entry.id for r in records if not r.agrees]
    if disagreeing:
        raise SystemExit(f"symuat html: {len(disagreeing)} entries disagree with their record: {disagreeing}")
