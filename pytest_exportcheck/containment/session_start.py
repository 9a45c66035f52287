"""How the supervised session's process starts: a fork where this process provably has
one thread, else a fresh interpreter.

A fork is cheap: the session goes on from where this process is, sharing its start of
Python, pytest and the installed plugins (0.8 s a run less than a fresh interpreter,
``benchmarks/README.md``, "The supervisor"). But a forked child has only the thread
that forked: a lock another thread held at that moment (torch's OpenMP pool after one
parallel op, an allocator's) stays held in the child for ever, and its next use of it
waits for ever. So this process forks only where it has one thread, counted in
``/proc/self/task`` (Linux): nothing can start a second between the count and the
fork, since only this thread runs. Where it has more (a plugin, a ``sitecustomize``,
or a conftest imported before the decision started some) or the count is unknown (no
``/proc``), the session is a fresh interpreter instead: ``sys.executable`` with the
interpreter's own original command line (``sys.orig_argv``: ``pytest ...``, ``python
-m pytest ...``, ``python -X ... -c ...``, every ``-p``, ``-c``/``--rootdir``), this
environment and working directory, started with ``posix_spawn`` (whatever threads
this process has stay here).

Either way the session learns its end of the socket from the same handoff,
``"<fd>:<parent pid>:<threads>"`` (the fresh interpreter finds it in ``CHILD_ENV``, the
forked child gets it back from :func:`start`), and then reads the token the parent
sends over the socket.
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass

from pytest_exportcheck.containment.supervision_channel import CHILD_ENV


@dataclass(frozen=True)
class Started:
    """What :func:`start` did, seen from the process it returns in."""

    pid: int = 0  # the session's pid, in the parent; 0 in the forked session itself
    handoff: str | None = None  # in the forked session: its channel, as CHILD_ENV says it
    failed: str | None = None  # why no session could start (the session runs here)
    status: int | None = None  # in the parent, once the session ended: the run's exit status


def thread_count() -> int | None:
    """This process's threads, native ones included (an OpenMP pool is invisible to
    ``threading``); None where the platform does not list them."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


def start(child_end: socket.socket, mask: set[int]) -> Started:
    """Start the session with ``child_end`` as its channel. ``mask``: the signal mask
    the session starts with (the caller blocked signals it waits for)."""
    threads = thread_count()
    handoff = f"{child_end.fileno()}:{os.getpid()}:{threads if threads else '?'}"
    if threads == 1 and hasattr(os, "fork"):
        return _fork(child_end, mask, handoff)
    return _spawn(child_end, mask, handoff)


def _fork(child_end: socket.socket, mask: set[int], handoff: str) -> Started:
    try:
        pid = os.fork()
    except OSError as exc:
        return Started(failed=f"its process could not be started: {exc}")
    if pid:
        return Started(pid=pid)
    import signal

    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    child_end.detach()  # the descriptor stays open for the session: no socket object owns it
    return Started(handoff=handoff)


def _spawn(child_end: socket.socket, mask: set[int], handoff: str) -> Started:
    env = dict(os.environ)
    env[CHILD_ENV] = handoff
    argv = [sys.executable, *sys.orig_argv[1:]]
    try:
        os.set_inheritable(child_end.fileno(), True)
        pid = os.posix_spawn(sys.executable, argv, env, setsigmask=mask)
    except OSError as exc:
        return Started(failed=f"its process could not be started: {exc}")
    finally:
        os.set_inheritable(child_end.fileno(), False)
    return Started(pid=pid)
