"""The heap that forked audit processes inherit is frozen while they are forked (symuat.ledger.parallel.frozen_heap)."""

from __future__ import annotations

import gc
import os

import pytest

from symuat.ledger.parallel import frozen_heap


def _child_freeze_count() -> int:
    """The freeze count a child forked here sees, as its exit status (0 or 1)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os._exit(int(gc.get_freeze_count() > 0))
    _, status = os.waitpid(pid, 0)
    return os.WEXITSTATUS(status)


@pytest.fixture
def unfrozen():
    """A process with nothing frozen, left so (a test that fails inside a freeze does not leak it)."""
    gc.unfreeze()
    yield
    gc.unfreeze()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_process_forked_inside_inherits_a_frozen_heap_and_this_process_unfreezes_it(unfrozen):
    assert gc.get_freeze_count() == 0 and _child_freeze_count() == 0
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        assert _child_freeze_count() == 1
    assert gc.get_freeze_count() == 0


def test_an_inherited_freeze_is_kept_and_grows(unfrozen):
    gc.freeze()
    before = gc.get_freeze_count()
    made_after = [[] for _ in range(100)]  # noqa: F841 - tracked objects frozen by the nested freeze
    with frozen_heap():
        assert gc.get_freeze_count() >= before + 100
    assert gc.get_freeze_count() >= before + 100  # a forked audit process keeps its inherited heap frozen


def test_the_heap_is_unfrozen_when_the_body_raises(unfrozen):
    with pytest.raises(KeyError), frozen_heap():
        raise KeyError("in the body")
    assert gc.get_freeze_count() == 0
