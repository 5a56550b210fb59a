"""The project stands alone: README and docs/ link only inside the repository, nothing cites an outside contract."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Markdown links and images: [text](target) — the target up to a space or ')'.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FORBIDDEN = ("../shared", "SPEC §")


def _relative_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return [t for t in LINK.findall(text) if not re.match(r"^[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


def test_the_docs_exist():
    names = {p.name for p in PAGES}
    assert {"conventions.md", "evidence.md", "ledger-format.md", "architecture.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves_inside_the_repository(page):
    for target in _relative_links(page):
        resolved = (page.parent / target.split("#")[0]).resolve()
        assert resolved.is_relative_to(ROOT), f"{page.name}: {target} leaves the repository"
        assert resolved.exists(), f"{page.name}: {target} does not exist"


def test_the_link_reader_finds_links():
    assert LINK.findall("see [a](docs/a.md) and ![b](img/b.png \"t\") and [c](https://x.org)") == \
        ["docs/a.md", "img/b.png", "https://x.org"]


def _project_files() -> list[Path]:
    files = list(PAGES)
    for folder in ("symuat", "derivations"):
        files += [p for p in sorted((ROOT / folder).rglob("*")) if p.is_file() and p.suffix in (".py", ".j2", ".md",
                                                                                                    ".tex", ".txt")]
    return files


@pytest.mark.parametrize("needle", FORBIDDEN)
def test_nothing_points_outside_the_project(needle):
    offenders = [str(p.relative_to(ROOT)) for p in _project_files() if needle in p.read_text(encoding="utf-8")]
    assert offenders == []
