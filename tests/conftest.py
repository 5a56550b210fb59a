"""Shared fixtures: the ledger is loaded once per session."""

from __future__ import annotations

import pytest

from symuat import load_entries


@pytest.fixture(scope="session")
def ledger():
    return load_entries()
