"""Shared fixtures: the ledger is loaded once per session, and audited afresh once per session.

The test session never reads the user's audit cache: the controller points
``SYMUAT_CACHE_DIR`` at a new empty directory (inherited by pytest-xdist workers
and by the ``symuat`` subprocesses the tests start), so the first audit of the
session recomputes every entry and later CLI tests reuse that fresh result.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from symuat import load_entries

_OWN_CACHE = "_SYMUAT_TEST_CACHE_DIR"
#: Seed of the session's whole-ledger audit: the build's default, so that the session writes the committed latex/
#: (tests/test_determinism.py, which also checks that another seed reaches the randomized levels).
SESSION_SEED = 0


def pytest_configure(config):
    if hasattr(config, "workerinput"):  # an xdist worker: keep the controller's directory, one process per worker
        os.environ.setdefault("SYMUAT_JOBS", "1")
        return
    if config.getoption("numprocesses", None):  # one thread per worker: BLAS/torch pools would oversubscribe 2 cores
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")
    path = tempfile.mkdtemp(prefix="symuat-test-cache-")
    os.environ[_OWN_CACHE] = path
    os.environ["SYMUAT_CACHE_DIR"] = os.path.join(path, "cache")
    os.environ["XDG_CONFIG_HOME"] = os.path.join(path, "config")  # the session's own signing key, outside the cache
    os.environ["SYMUAT_COQ_BUILD"] = os.path.join(path, "coq-build")  # one Coq compile for the audit and test_coq


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput") and os.environ.get(_OWN_CACHE):
        shutil.rmtree(os.environ.pop(_OWN_CACHE), ignore_errors=True)


#: Test files with the longest tests (a whole-ledger audit, the seed sweep, mutants, Coq, TeX): collected first, so
#: pytest-xdist hands them out before the many short tests and the workers finish together.
_LONGEST_FIRST = ("test_determinism.py", "test_soundness.py", "test_coq.py", "test_latex.py", "test_latex_figures.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: file order kept within a rank


@pytest.fixture(scope="session")
def ledger():
    return load_entries()


@pytest.fixture
def without_figures(monkeypatch):
    """matplotlib reported missing: documents are rendered without figures (the text only)."""
    from symuat.latex import figures

    monkeypatch.setattr(figures, "plot_available", lambda: False)


@pytest.fixture(scope="session")
def session_seed() -> int:
    return SESSION_SEED


@pytest.fixture(scope="session")
def audit_instances():
    """The sides the session's audit built (filled when it runs in this process: one job per xdist worker)."""
    from symuat.evidence.protocol import InstanceCache

    return InstanceCache()


@pytest.fixture(scope="session")
def audited(audit_instances):
    """The whole shipped ledger at ``SESSION_SEED``, audited once per session (afresh: the cache starts empty).

    Tests that use it are in the xdist group ``audit`` so that one worker computes it.
    """
    from symuat.ledger.cache import audit_ledger

    return audit_ledger(seed=SESSION_SEED, instances=audit_instances)


@pytest.fixture(scope="session")
def audited_files(audited):
    """Every file ``symuat latex`` writes for the session's audit (default depth), rendered in this process."""
    from symuat.build import latex_files

    return latex_files(audited)
