"""Between cases: what outlives them is frozen, garbage is collected, and a frozen object
that becomes garbage is reached once resident memory has grown.

Each test watches one cycle of objects through a weak reference: collected or not."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from pytest_exportcheck.containment import memory_return
from pytest_exportcheck.containment.memory_return import (
    GROWTH_TO_COLLECT,
    HeapKeeper,
    has_grown,
)


class Node:
    """A cycle with itself: only a collection frees it, never a reference count."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def resident(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The resident memory the keeper reads, set by the test. Python's own collections
    are off meanwhile (they would collect the cycles watched), and nothing is frozen
    before or after (an in-process run of the plugin earlier froze this process)."""
    now = [1 << 30]
    monkeypatch.setattr(memory_return, "resident_bytes", lambda: now[0])
    gc.unfreeze()
    gc.disable()
    try:
        yield now
    finally:
        gc.enable()
        gc.unfreeze()


def _garbage() -> weakref.ref[Node]:
    return weakref.ref(Node())


def _frozen_then_dropped() -> weakref.ref[Node]:
    node = Node()
    gc.freeze()
    return weakref.ref(node)


def test_growth_is_measured_from_the_last_walk_over_everything() -> None:
    assert has_grown(None, 0) and has_grown(0, None)  # unreadable, or no walk yet
    assert not has_grown(100 + GROWTH_TO_COLLECT - 1, 100)
    assert has_grown(100 + GROWTH_TO_COLLECT, 100)


def test_where_no_case_is_held_garbage_is_collected_and_survivors_frozen(
    resident: list[int],
) -> None:
    keeper = HeapKeeper()
    keeper.return_freed_memory(cases_held=False)  # the first: a walk over everything
    garbage, survivor = _garbage(), Node()
    keeper.return_freed_memory(cases_held=False)
    assert garbage() is None
    assert gc.is_tracked(survivor) and gc.get_freeze_count() > 0
    before = gc.get_freeze_count()
    keeper.return_freed_memory(cases_held=False)
    assert gc.get_freeze_count() >= before  # survivors stay frozen


def test_frozen_garbage_waits_for_growth_then_is_collected(resident: list[int]) -> None:
    keeper = HeapKeeper()
    keeper.return_freed_memory(cases_held=False)
    pinned = _frozen_then_dropped()  # as a failed item's frames kept in sys.last_traceback
    keeper.return_freed_memory(cases_held=False)
    assert pinned() is not None, "without growth, frozen objects are not walked"
    resident[0] += GROWTH_TO_COLLECT
    keeper.return_freed_memory(cases_held=False)
    assert pinned() is None


def test_while_a_case_is_held_nothing_is_frozen_and_collection_waits_for_growth(
    resident: list[int],
) -> None:
    keeper = HeapKeeper()
    keeper.return_freed_memory(cases_held=True)  # the first: collects, freezes nothing
    assert gc.get_freeze_count() == 0
    garbage = _garbage()
    keeper.return_freed_memory(cases_held=True)
    assert garbage() is not None, "small cycles are left to Python's own collections"
    resident[0] += GROWTH_TO_COLLECT
    keeper.return_freed_memory(cases_held=True)
    assert garbage() is None
    assert gc.get_freeze_count() == 0


def test_torchs_import_is_frozen_once_before_the_first_model(resident: list[int]) -> None:
    keeper = HeapKeeper()
    imported = Node()
    keeper.freeze_imports()
    assert gc.get_freeze_count() > 0
    assert not any(o is imported for o in gc.get_objects()), "frozen: no collection walks it"
    model = Node()
    keeper.freeze_imports()
    # Still walked: the second call froze nothing. (The freeze count itself is no
    # measure: a frozen object freed by its reference count leaves it.)
    assert any(o is model for o in gc.get_objects())


def test_the_import_freeze_is_where_growth_is_measured_from(resident: list[int]) -> None:
    """A session's first case end walks nothing old: in a test process, a walk over what
    every earlier in-process run left would cost each run, for no memory."""
    pinned = _frozen_then_dropped()
    keeper = HeapKeeper()
    keeper.freeze_imports()
    keeper.return_freed_memory(cases_held=False)
    assert pinned() is not None
    resident[0] += GROWTH_TO_COLLECT
    keeper.return_freed_memory(cases_held=False)
    assert pinned() is None
