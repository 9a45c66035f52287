"""Which child processes are torch's own helpers, not a case's: Inductor's compile pool and
the addr2line symbolizer torch 2.8 keeps for C++ stack traces (one per library of the
trace: torch's, libpython's, libc's), started the way torch starts it."""

from __future__ import annotations

import pytest

from pytest_exportcheck.containment.child_processes import is_torchs_own


@pytest.mark.parametrize(
    ("command", "torchs"),
    [
        ("addr2line -C -f -e /venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so", True),
        ("python -m torch._inductor.compile_worker --pickler=...", True),
        ("addr2line -C -f -e /lib/x86_64-linux-gnu/libc.so.6", True),  # the same trace's
        ("addr2line -e /usr/lib/libmine.so 0x1f00", False),  # a model symbolizing its own
        ("sleep 1000", False),
    ],
)
def test_torchs_own_helpers_are_told_from_a_cases_processes(command: str, torchs: bool) -> None:
    assert is_torchs_own(command) is torchs
