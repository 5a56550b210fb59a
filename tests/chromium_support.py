"""Headless Chromium for the tests of the HTML ledger and the docs site (not a test module).

Skipped when ``chromium`` is missing; fails instead with ``SYMUAT_REQUIRE_CHROMIUM=1`` (CI installs the Debian
package).  Console messages are read from Chromium's log on stderr (``--enable-logging=stderr``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["screenshot", "distinct_colours"]

REQUIRE_CHROMIUM = os.environ.get("SYMUAT_REQUIRE_CHROMIUM") == "1"
_CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                   "--disable-component-update", "--disable-sync", "--no-first-run", "--enable-logging=stderr",
                   "--v=0", "--hide-scrollbars")


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if REQUIRE_CHROMIUM:
            pytest.fail("SYMUAT_REQUIRE_CHROMIUM=1 but chromium is not installed (apt-get install chromium)")
        pytest.skip("chromium not installed (CI installs it and sets SYMUAT_REQUIRE_CHROMIUM=1)")
    return exe


def screenshot(page: Path, png: Path, profile: Path, size: str = "1280,1600") -> list[str]:
    """Render ``page`` in headless Chromium into ``png``; return the page's console messages."""
    done = subprocess.run([_chromium(), *_CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={size}",
                           f"--screenshot={png}", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and png.is_file(), done.stderr[-2000:]
    return [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


def distinct_colours(png: Path) -> int:
    image = pytest.importorskip("PIL.Image")
    with image.open(png) as im:
        return len(im.convert("RGB").getcolors(maxcolors=1 << 20) or ())
