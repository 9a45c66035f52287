"""Processes a model starts and leaves running, and forks that return into the session.

``subprocess.Popen("sleep 1000", ...)`` in forward outlives the item, the case and
the run; ``os.fork()`` without an exit in the child runs the rest of the session
twice, interleaving two outputs. Neither was named. So around each item:

- the children this process has (Linux: ``/proc/<pid>/task/*/children``) are read
  before and after; one started during the item and still running is named in the
  item's failure (with its command line). torch's own workers (Inductor's compile
  pool, the ``addr2line`` processes torch 2.8 keeps to symbolize its C++ stack traces
  when an error is raised) are not the case's;
- a process whose pid is not the one the item started in is a fork that came back
  from forward: it ends itself at once, saying so, before it runs anything more.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from pytest_exportcheck.containment.stages import end_process

_TORCHS = ("torch/_inductor", "torch._inductor")


def is_torchs_own(command: str) -> bool:
    """Whether ``command`` is one of torch's own helper processes."""
    if any(mark in command for mark in _TORCHS):
        return True
    # torch's symbolizer (torch/csrc/profiler/unwind, TORCH_SYMBOLIZE_MODE=addr2line): one
    # `addr2line -C -f -e <library>` per library of a C++ stack trace (torch's, libpython's,
    # libc's), kept alive for reuse.
    return command.startswith("addr2line -C -f -e ")


def children() -> set[int]:
    """This process's child pids (empty where /proc does not list them)."""
    found: set[int] = set()
    tasks = f"/proc/{os.getpid()}/task"
    try:
        names = os.listdir(tasks)
    except OSError:
        return found
    for task in names:
        with suppress(OSError, ValueError), open(f"{tasks}/{task}/children") as listed:
            found.update(int(pid) for pid in listed.read().split())
    return found


def started_and_running(before: set[int]) -> list[str]:
    """Children not in ``before``, still running and not torch's own, each described; and
    those that ended without being waited for (a fork's copy that came back from forward
    and ended itself is one: it may end before this reads, so it is seen as such)."""
    running, ended = [], []
    for pid in sorted(children() - before):
        state, command = _state(pid)
        if state in ("Z", "X"):
            ended.append(f"pid {pid}")
        elif command is not None and not is_torchs_own(command):
            running.append(f"pid {pid} ({command[:80]})")  # None: gone by now
    found = []
    if running:
        shown = ", ".join(running[:3]) + (" ..." if len(running) > 3 else "")
        found.append(f"{len(running)} child process(es) left running: {shown} (not stopped)")
    if ended:
        shown = ", ".join(ended[:3]) + (" ..." if len(ended) > 3 else "")
        found.append(f"{len(ended)} child process(es) ended but never waited for: {shown}")
    return found


def _state(pid: int) -> tuple[str | None, str | None]:
    """The process's state letter and command line; (None, None) if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
        if state in ("Z", "X"):
            return state, None
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return state, cmdline.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except (OSError, IndexError):
        return None, None


@contextmanager
def no_returning_fork(location: str) -> Iterator[None]:
    """End a fork of this process that leaves the block (the parent goes on)."""
    pid = os.getpid()
    try:
        yield
    finally:
        if os.getpid() != pid:
            sys.stdout.flush()
            end_process(
                f"{location}: a process forked in the model's code (pid {os.getpid()}, a "
                f"copy of {pid}) came back into the test session instead of exiting; it "
                "would run the rest of the session a second time",
                the_sessions=False,
            )
