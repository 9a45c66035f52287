"""The memory limit's setting, and which failures it adds its note to."""

from __future__ import annotations

import pytest

from pytest_exportcheck import memory_limit


@pytest.mark.parametrize("text", ["", "0", "  "])
def test_no_limit_is_none(text: str) -> None:
    assert memory_limit.parse(text) is None


def test_a_size_is_bytes() -> None:
    assert memory_limit.parse("12GiB") == 12 << 30


def test_the_note_names_the_limit_only_for_a_refused_allocation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    refused = RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried ...")
    wrapped = ValueError("the eager forward raised")
    wrapped.__cause__ = refused
    assert memory_limit.note_for(wrapped) == ""  # no limit set: nothing to blame
    monkeypatch.setattr(memory_limit, "_active", 4 << 30)
    assert memory_limit.note_for(wrapped).startswith("(this process's memory limit is 4.0 GiB")
    assert memory_limit.note_for(MemoryError()) != ""
    assert memory_limit.note_for(ValueError("shape mismatch")) == ""


def test_the_default_limit_shares_most_of_the_machine_among_the_workers(monkeypatch) -> None:
    monkeypatch.setattr(memory_limit, "machine_memory", lambda: 24 << 30)
    assert memory_limit.derived(1) == int((24 << 30) * memory_limit.DEFAULT_SHARE)
    assert memory_limit.derived(2) == int((24 << 30) * memory_limit.DEFAULT_SHARE) // 2
    assert memory_limit.derived(32) is None  # under 1 GiB each: torch alone needs more
    monkeypatch.setattr(memory_limit, "machine_memory", lambda: None)
    assert memory_limit.derived(2) is None


def test_the_machine_memory_is_read_where_linux_gives_it() -> None:
    import sys

    size = memory_limit.machine_memory()
    if sys.platform.startswith("linux"):
        assert size is not None and size > 1 << 30
    else:
        assert size is None
