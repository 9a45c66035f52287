"""The memory limit's setting, and which failures it adds its note to."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_exportcheck.containment import memory_limit


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


def test_the_default_limit_is_most_of_the_machine_for_each_process(monkeypatch) -> None:
    # Not divided among workers: a per-worker share refused items the kernel let run
    # (benchmarks/README.md, the default memory limit).
    monkeypatch.setattr(memory_limit, "machine_memory", lambda: 24 << 30)
    assert memory_limit.derived() == int((24 << 30) * memory_limit.DEFAULT_SHARE)
    monkeypatch.setattr(memory_limit, "machine_memory", lambda: 1 << 30)
    assert memory_limit.derived() is None  # under 1 GiB: torch alone needs more
    monkeypatch.setattr(memory_limit, "machine_memory", lambda: None)
    assert memory_limit.derived() is None


def test_the_machine_memory_is_read_where_linux_gives_it() -> None:
    import sys

    size = memory_limit.machine_memory()
    if sys.platform.startswith("linux"):
        assert size is not None and size > 1 << 30
    else:
        assert size is None


def test_the_limit_files_follow_this_process_cgroup_and_its_ancestors(tmp_path: Path) -> None:
    from pytest_exportcheck.containment.memory_limit import cgroup_limit_files

    listed = tmp_path / "cgroup"
    listed.write_text("4:memory:/ci/job7\n3:cpu:/ci/job7\n0::/user.slice/run-1.scope\n")
    files = cgroup_limit_files(str(listed), "/cg")
    assert files == [
        "/cg/memory.max",
        "/cg/memory/memory.limit_in_bytes",
        "/cg/memory/ci/memory.limit_in_bytes",
        "/cg/memory/ci/job7/memory.limit_in_bytes",
        "/cg/user.slice/memory.max",
        "/cg/user.slice/run-1.scope/memory.max",
    ]


def fake_rlimits(monkeypatch: pytest.MonkeyPatch, **soft: int) -> None:
    """RLIMIT_AS / RLIMIT_DATA as a process started under ``ulimit -v`` / ``-d`` has them."""
    import resource

    limits = {
        getattr(resource, name): (value, resource.RLIM_INFINITY) for name, value in soft.items()
    }
    unlimited = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
    monkeypatch.setattr(resource, "getrlimit", lambda which: limits.get(which, unlimited))


def test_a_lower_limit_the_process_was_started_under_is_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(memory_limit, "machine_memory", lambda: 24 << 30)
    fake_rlimits(monkeypatch, RLIMIT_AS=10 << 30)
    assert memory_limit.inherited() == (10 << 30, "ulimit -v")
    assert memory_limit.derived() == 10 << 30  # not 90% of 24 GiB: ulimit -v refuses first
    header = memory_limit.header_line(10 << 30, derived=True, checks_cuda=False)
    assert header == (
        "exportcheck: memory limit 10.0 GiB per process (the limit this process was started "
        "under, ulimit -v; exportcheck_memory_limit sets a lower one)"
    )
    # A setting over it is announced with the one that binds.
    header = memory_limit.header_line(12 << 30, derived=False, checks_cuda=False)
    assert header.endswith(
        "but this process was started under 10.0 GiB (ulimit -v), which refuses an allocation first"
    )


def test_the_note_names_the_limit_the_process_was_started_under(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(memory_limit, "_active", 12 << 30)
    monkeypatch.setattr(memory_limit, "_started_under", (10 << 30, "ulimit -v"))
    refused = RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried ...")
    assert memory_limit.note_for(refused).startswith(
        "(this process's memory limit is 10.0 GiB, the limit this process was started under "
        "(ulimit -v): the allocation past it failed here"
    )
