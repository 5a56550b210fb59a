"""Shared fixtures: the ledger is loaded once per session, and audited afresh once per session.

The test session never reads the user's audit cache: the controller points
``SYMUAT_CACHE_DIR`` at a new empty directory (inherited by pytest-xdist workers
and by the ``symuat`` subprocesses the tests start), so the first audit of the
session recomputes every entry and later CLI tests reuse that fresh result.
"""

from __future__ import annotations

import gc
import importlib
import os
import shutil
import tempfile

import pytest
from sweep_support import require

from symuat import load_entries

#: tests/papers/ holds other papers' derivations (data for tests/test_papers.py), not tests: importing them for
#: doctests would register their sources for the whole session.
collect_ignore = ["papers"]

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
    if hasattr(config, "workerinput"):
        # The worker exits next: its heap (sympy's caches, the audits' sides) is left out of the collections
        # of interpreter shutdown, which the controller waits for (about 4 s of README's command, docs/testing.md).
        gc.freeze()
        return
    if os.environ.get(_OWN_CACHE):
        shutil.rmtree(os.environ.pop(_OWN_CACHE), ignore_errors=True)


#: Test files with the longest tests (the audit of every entry, the whole-ledger audit and its LaTeX, the Coq compile
#: and mutants, the ledger mutants, TeX): collected first, so pytest-xdist hands them out before the many short tests
#: and the workers finish together.  In the slow step the ``audit`` group computes the session's audit while the
#: ``coq`` group compiles coq/ on the other worker (the audit's Coq check waits for that build and reuses it:
#: symuat.ledger.coq_build).
_LONGEST_FIRST = ("test_ledger.py", "test_determinism.py", "test_coq.py", "test_soundness.py", "test_latex.py",
                  "test_latex_figures.py")
#: Fixtures of the session's whole-ledger audit with its Coq level.
_WHOLE_LEDGER_AUDIT = {"audited", "audited_files", "html_site"}
#: Fixtures that need the session's audit: a test outside the ``audit`` group that asks for one is collected last,
#: so that its worker reads the finished audit from the signed cache instead of waiting for it.
_NEEDS_AUDIT = _WHOLE_LEDGER_AUDIT | {"audited_without_coq"}
#: Fixtures of the programs and extras README's install does not bring, and of the whole-ledger audit with its Coq
#: level: a test that asks for one runs in CI's slow step.
_SLOW_STEP_FIXTURES = _WHOLE_LEDGER_AUDIT | {"coqc", "pdflatex", "chromium", "zarr"}


def _group(item) -> str | None:
    mark = item.get_closest_marker("xdist_group")
    return (mark.args[0] if mark.args else mark.kwargs.get("name")) if mark is not None else None


#: README's command is the fast tier: CI's slow step runs these xdist groups, besides the tests marked ``slow``:
#: ``models`` (every test that imports torch: the importers, the sweeps, the docs blocks and docstring examples that
#: load a model) and ``coq`` (the compile of coq/ and its theorems).  So does every test that asks for a fixture of
#: :data:`_SLOW_STEP_FIXTURES`: a program or extra README's install does not bring (:func:`coqc`, :func:`pdflatex`,
#: :func:`chromium`, :func:`zarr`), or the session's whole-ledger audit with its Coq level (the renderings compared
#: with the committed latex/ and the HTML site).  README's command still audits every entry at every other level
#: (:func:`audited_without_coq`: tests/test_ledger.py and the derivations' tests); docs/testing.md, "Two tiers".
SLOW_GROUPS = frozenset({"models", "coq"})


def _slow_tier(items) -> None:
    for item in items:
        if _group(item) in SLOW_GROUPS or _SLOW_STEP_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl  # after the root conftest.py puts documentation blocks in groups, before -m deselects slow tests
def pytest_collection_modifyitems(config, items):
    _slow_tier(items)
    rank = {name: i for i, name in enumerate(_LONGEST_FIRST)}

    def order(item) -> int:
        if _group(item) != "audit" and _NEEDS_AUDIT & set(getattr(item, "fixturenames", ())):
            return len(rank) + 1
        return rank.get(item.path.name, len(rank))

    items.sort(key=order)  # stable: file order kept within a rank


def _program(name: str, variable: str, install: str) -> str:
    """The path of ``name``: skipped without it, a failure when ``$variable`` is ``1`` (CI installs it)."""
    found = shutil.which(name)
    if found is None:
        if os.environ.get(variable) == "1":
            pytest.fail(f"{variable}=1 but {name} is not installed ({install})")
        pytest.skip(f"{name} is not installed ({install}; CI installs it and sets {variable}=1)")
    return found


@pytest.fixture(scope="session")
def coqc() -> str:
    """``coqc`` (Coq with MathComp); a test that asks for it runs in CI's slow step (README's command compiles no
    Coq)."""
    return _program("coqc", "SYMUAT_REQUIRE_COQ", "apt-get install coq libcoq-mathcomp-algebra")


@pytest.fixture(scope="session")
def pdflatex() -> str:
    """``pdflatex`` (TeX Live with Latin Modern); a test that asks for it runs in CI's slow step."""
    return _program("pdflatex", "SYMUAT_REQUIRE_TEX", "apt-get install texlive-latex-recommended lmodern")


@pytest.fixture(scope="session")
def chromium() -> str:
    """Chromium, run headless by tests/chromium_support.py; a test that asks for it runs in CI's slow step."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")  # the package's name varies
    return found or _program("chromium", "SYMUAT_REQUIRE_CHROMIUM", "apt-get install chromium")


@pytest.fixture(scope="session")
def zarr():
    """The ``zarr`` module (the ``zarr`` extra); a test that asks for it runs in CI's slow step."""
    require("zarr", flag="SYMUAT_REQUIRE_ZARR")
    return importlib.import_module("zarr")


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

    The first process to ask computes it, holding a lock; a pytest-xdist worker that asks later waits for the lock
    and reads the finished audit from the session's signed cache (symuat.ledger.cache).  The tests that render
    its LaTeX are in the xdist group ``audit`` (one worker, one rendering); the others are collected last.
    """
    from filelock import FileLock

    from symuat.ledger.cache import audit_ledger

    with FileLock(os.path.join(os.environ[_OWN_CACHE], "session-audit.lock")):
        return audit_ledger(seed=SESSION_SEED, instances=audit_instances)


@pytest.fixture(scope="session")
def audited_without_coq():
    """``audited_without_coq(ids)``: ``{id: record}`` of the shipped entries selected by ``ids`` (as ``--only``),
    audited at ``SESSION_SEED`` at every level but Coq (``coq=False``; README's command compiles no Coq).

    Every call holds the session's lock and takes what an earlier call audited from the session's signed cache:
    tests/test_ledger.py audits every entry first (the ``audit`` group, collected first); the others are collected
    last.
    """
    from filelock import FileLock

    from symuat.ledger.cache import audit_ledger

    def records(ids) -> dict:
        with FileLock(os.path.join(os.environ[_OWN_CACHE], "session-audit-without-coq.lock")):
            return {r.entry.id: r for r in audit_ledger(only=tuple(ids), seed=SESSION_SEED, coq=False)}

    return records


@pytest.fixture(scope="session")
def audited_files(audited):
    """Every file ``symuat latex`` writes for the session's audit (default depth), rendered in this process."""
    from symuat.build import latex_files

    return latex_files(audited)


@pytest.fixture(scope="module", autouse=True)
def _paper_registry_as_found_by_the_module():
    """A module's fixtures (a corpus of papers loaded once) register sources before any test's own copy: the
    registry is restored when the module ends."""
    from symuat.ledger import sources

    saved = dict(sources._REGISTRY)
    yield
    sources._REGISTRY.clear()
    sources._REGISTRY.update(saved)


@pytest.fixture(autouse=True)
def _paper_registry_as_found(monkeypatch):
    """Every test leaves the registry of paper sources as it found it: the registry is global, and the session's own
    documents list every registered paper (tests/test_determinism.py compares them with the committed latex/)."""
    from symuat.ledger import sources

    monkeypatch.setattr(sources, "_REGISTRY", dict(sources._REGISTRY))
