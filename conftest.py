"""The code blocks of README.md and docs/*.md are tests (pytest-markdown-docs; the marks are in docs/testing.md).

Every block runs in a fresh temporary directory and leaves the registry of paper sources as it found it.  A block
that needs torch says so with ```` ```python fixture:torch ````: it runs on the ``models`` pytest-xdist worker and
is skipped without torch, unless ``SYMUAT_REQUIRE_TORCH=1`` (then it fails).  A block that imports torch or
transformers without that mark is a collection error.  A docstring example that imports them runs on the ``models``
worker too (tests/conftest.py leaves that group to CI's slow step).
"""

from __future__ import annotations

import importlib.util
import os
import re

import pytest

#: What needs the torch extra when a documentation block imports it.
_NEEDS_TORCH = re.compile(r"^\s*(?:import|from)\s+(?:torch|transformers|symuat\.models)\b", re.M)


def _is_block(item) -> bool:
    return hasattr(item, "test_definition") and item.path.suffix == ".md"


def _doctest_imports_torch(item) -> bool:
    """A docstring example (``--doctest-modules``) that imports torch, transformers or symuat.models."""
    test = getattr(item, "dtest", None)
    return test is not None and any(_NEEDS_TORCH.search(example.source) for example in test.examples)


@pytest.hookimpl(hookwrapper=True)
def pytest_collect_file(file_path, parent):
    """Markdown blocks come from ``.md`` files only: pytest-markdown-docs also scans every ``.py`` module's docstrings
    for fences (importing and walking each module in every worker, several seconds of collection), and this project's
    docstrings hold doctests (``--doctest-modules``), never fences; a test checks that none is lost."""
    outcome = yield
    found = outcome.get_result()
    if file_path.suffix == ".py" and found:
        outcome.force_result([node for node in found if type(node).__name__ != "MarkdownDocstringCodeModule"])


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        if _doctest_imports_torch(item):  # on the worker that imports torch, as a marked block
            item.add_marker(pytest.mark.xdist_group("models"))
        if not _is_block(item):
            continue
        if "torch" in item.fixturenames:
            item.add_marker(pytest.mark.xdist_group("models"))
        elif _NEEDS_TORCH.search(item.test_definition.source):
            raise pytest.UsageError(f"{item.nodeid} imports torch or transformers: mark its fence "
                                    "```python fixture:torch (docs/testing.md)")


@pytest.fixture
def torch():
    """torch, for a documentation block marked ``fixture:torch``; skipped without the torch extra."""
    missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    if missing:
        if os.environ.get("SYMUAT_REQUIRE_TORCH") == "1":
            pytest.fail(f"SYMUAT_REQUIRE_TORCH=1 but {' and '.join(missing)} cannot be imported")
        pytest.skip(f"needs {' and '.join(missing)} (pip install -e '.[torch]', CPU wheel: docs/install.md)")
    import torch as module

    return module


@pytest.fixture(autouse=True)
def _documentation_block_sandbox(request, monkeypatch):
    """A documentation block runs in a fresh directory and cannot leave a registered paper source behind."""
    if not _is_block(request.node):
        yield
        return
    from symuat.ledger import sources

    monkeypatch.chdir(request.getfixturevalue("tmp_path"))
    monkeypatch.setattr(sources, "_REGISTRY", dict(sources._REGISTRY))
    monkeypatch.setenv("SYMUAT_TUTORIAL_N", "16")  # a tutorial written at real length runs at a small size
    yield
