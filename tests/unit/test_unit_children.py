"""The processes a test starts end with it (tests/childkit.py): a child and what it
started, on a timeout, on an interrupt while waiting, and when the test ends."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import childkit
import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")

# A shell that starts a grandchild, says its pid, and waits for it.
LEAVES_A_GRANDCHILD = ["sh", "-c", "sleep 60 & echo $!; wait"]


def gone(pid: int, within: float = 10.0) -> bool:
    """The process ended (absent, or a zombie nobody reaped yet)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def started() -> tuple[subprocess.Popen[str], int]:
    process = childkit.GroupPopen(LEAVES_A_GRANDCHILD, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    return process, int(process.stdout.readline())


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_ending_a_child_ends_what_it_started() -> None:
    process, grandchild = started()
    childkit.end(process)
    assert process.returncode is not None
    assert gone(grandchild)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_child_left_running_is_ended_with_the_test() -> None:
    process, grandchild = started()
    assert childkit.end_all() == 1  # what the autouse fixture calls when a test ends
    assert process.returncode is not None and gone(grandchild)
    assert childkit.end_all() == 0


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_child_past_its_timeout_is_ended_with_its_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild"
    # The shell writes its grandchild's pid at once; 1 s is ample for that on a busy machine.
    script = f"sleep 60 & echo $! > {pid_file}; wait"
    with pytest.raises(subprocess.TimeoutExpired):
        childkit.run(["sh", "-c", script], timeout=1)
    assert gone(int(pid_file.read_text()))


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_pytester_run_is_bounded_and_an_interrupt_ends_its_child() -> None:
    timeouts: list[float | None] = []
    grandchildren: list[int] = []

    def interrupted_while_waiting(self: object, *cmdargs: str, timeout: float | None = None):
        timeouts.append(timeout)
        grandchildren.append(started()[1])
        raise KeyboardInterrupt  # what SIGINT raises in the worker waiting on the child

    with pytest.raises(KeyboardInterrupt):
        childkit.bounded(interrupted_while_waiting)(object(), "pytest")
    assert timeouts == [childkit.DEFAULT_TIMEOUT]
    assert gone(grandchildren[0])


def test_pytesters_subprocesses_start_in_a_group_of_their_own(pytester: pytest.Pytester) -> None:
    result = pytester.run(sys.executable, "-c", "import os; print(os.getpgrp() == os.getpid())")
    assert result.outlines == ["True"]
