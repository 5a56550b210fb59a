"""Headless Chromium for the tests of the HTML ledger and the docs site (not a test module).

The executable comes from the ``chromium`` fixture (tests/conftest.py: skipped when it is missing, a failure with
``SYMUAT_REQUIRE_CHROMIUM=1``; CI installs the Debian package).  Console messages are read from Chromium's log on
stderr (``--enable-logging=stderr``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

__all__ = ["screenshot", "distinct_colours"]

_CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                   "--disable-component-update", "--disable-sync", "--no-first-run", "--enable-logging=stderr",
                   "--v=0", "--hide-scrollbars")


def screenshot(chromium: str, page: Path, png: Path, profile: Path, size: str = "1280,1600") -> list[str]:
    """Render ``page`` in headless Chromium (the executable ``chromium``) into ``png``; return the page's console
    messages."""
    done = subprocess.run([chromium, *_CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={size}",
                           f"--screenshot={png}", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and png.is_file(), done.stderr[-2000:]
    return [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


def distinct_colours(png: Path) -> int:
    image = pytest.importorskip("PIL.Image")
    with image.open(png) as im:
        return len(im.convert("RGB").getcolors(maxcolors=1 << 20) or ())
