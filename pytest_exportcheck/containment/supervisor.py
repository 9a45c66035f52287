"""A run whose process vanishes must not pass: a parent that outlives the session.

``os._exit`` is refused while an item runs (``user_exits.py``), but
``posix._exit``, libc's ``exit()`` through ctypes and ``os.execv`` end or
replace the process with no Python code run after them. Without ``-n`` the
run stops mid-line with the status the model chose (0 for all three), and a
CI job reads it as green. Under pytest-xdist the controller sees its worker
go and reports the item ``[crashed]``: nothing to add there.

So a one-process ``pytest --exportcheck``, started from the command line,
decides before pytest captures output or imports any conftest (the outermost
``pytest_load_initial_conftests``) to run the session in a child: a fork of
this process where it has one thread, else a fresh interpreter started with the
same command line, environment and directory (``session_start.py``). Never a fork
of a process with threads: one a plugin or an early conftest started (torch's
thread pool after one op) would leave the forked child deadlocked on its next
parallel op. The parent imports no conftest and no torch; it only waits
(``supervisor_parent.py``).

The child tells the parent, over a socket, each item it starts and, last, that
the session reached its end with its exit status and a token the parent gave
it. The parent believes that end only from the child's own process (the
kernel names each message's sender), with the token, and only when the child
then exits normally with the status it announced. Anything else fails the run,
naming the item that was running. What code in the session's own process
could still fake is in docs/hostile.md.

Not supervised (said in the header and on the run's last line): ``pytest.main()``
called in-process (the caller's process is not pytest's to replace), xdist
runs, platforms without ``posix_spawn`` or ``AF_UNIX`` sequenced-packet
sockets, a Python started from standard input, and runs with
``exportcheck_supervise = false``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
from typing import Any

import pytest

from pytest_exportcheck.containment.supervision_channel import (
    CHILD_ENV,
    END,
    FATAL,
    ITEM,
    MAX_MESSAGE,
    UNKNOWN_STATUS,
)
from pytest_exportcheck.containment.supervisor_parent import run_supervised

_channel: int | None = None  # the child's end of the socket, in the supervised session
_token = ""
_session_pid = 0  # a process forked from the session is not the session: it says nothing
_parent_threads = ""  # the parent's thread count where the session is a fresh interpreter
_not_supervised: str | None = None  # why a run that would have been was not (no child started)
_DECIDED = pytest.StashKey[bool]()


def supervise(config: pytest.Config, options: Any) -> int | None:
    """Decide once, as early as this plugin is there: the run's exit status where this
    process supervised it (the session ran in its child); None where the session runs
    here (unsupervised, or as the supervised child)."""
    if config.stash.get(_DECIDED, False):
        return None
    config.stash[_DECIDED] = True
    if become_child(config) or why_unsupervised(config, options):
        return None
    started = run_supervised()
    if started.handoff is not None:  # this process is the session, forked
        _become_session(config, started.handoff)
        return None
    if started.failed is not None:
        spawn_failed(started.failed)
    return started.status


def why_unsupervised(config: pytest.Config, options: Any = None) -> str | None:
    """Why this run is not supervised, or None when it can be. ``options``: the parsed
    options (``early_config.known_args_namespace`` before ``config.option`` is filled)."""
    options = config.option if options is None else options
    if not getattr(options, "exportcheck", False):
        return "no --exportcheck"
    if _channel is not None:
        return None
    if _not_supervised is not None:
        return _not_supervised
    if not _ini_true(config.getini("exportcheck_supervise")):
        return "exportcheck_supervise = false"
    # Not PYTEST_XDIST_WORKER: a worker's children inherit it (a pytester project run
    # by a test under -n). A worker is not started by pytest's console entry point, so
    # _started_from_command_line() below keeps it unsupervised.
    if hasattr(config, "workerinput") or _distributed(options):
        return "pytest-xdist runs items in workers: the controller reports one that vanishes"
    if not _can_spawn():
        return "this platform has no posix_spawn() or AF_UNIX sequenced-packet sockets"
    if getattr(options, "collectonly", False):
        return "--collect-only runs no items"
    if getattr(options, "help", False) or getattr(options, "version", False):
        return "--help runs no items"
    if not _started_from_command_line():
        return "pytest.main() called in-process"
    if sys.argv[0] in ("", "-") or not sys.executable or not hasattr(sys, "orig_argv"):
        return "this Python did not start from a program or module it could start again"
    return None


def header_lines(config: pytest.Config) -> list[str]:
    """What the header says of supervision (nothing in an xdist worker or controller:
    workers that vanish are the controller's to report)."""
    if _channel is not None:
        lines = [
            "exportcheck: supervised: a parent process fails the run if this one ends "
            "before the run does (exportcheck_supervise = false: not)"
        ]
        if _parent_threads.isdigit() and int(_parent_threads) > 1:
            # Where the start-up cost and any import-time side effects come twice.
            lines.append(
                "exportcheck: the session is a fresh interpreter, not a fork: pytest's "
                f"process already had {_parent_threads} threads (a plugin, sitecustomize "
                "or conftest imported first started them, and a fork could deadlock on "
                "their locks), so pytest and its plugins started twice"
            )
        return lines
    reason = why_unsupervised(config)
    if reason is None or "xdist" in reason:
        return []
    return [f"exportcheck: not supervised ({reason}): a model that ends the process ends the run"]


def unguarded_line(config: pytest.Config) -> str | None:
    """The run's last line where nothing guards its process's exit: a CI log shows it
    under the summary, and a wrapper can check for it (a run cut short never prints it)."""
    reason = why_unsupervised(config)
    if _channel is not None or reason is None or "xdist" in reason or reason.startswith("no "):
        return None
    return (
        f"exportcheck: end of run, not supervised ({reason}): nothing guarded this "
        "process's exit, so a run that stops before printing this line did not end, "
        "whatever its exit status"
    )


class UnguardedNotice:
    """Writes :func:`unguarded_line` under pytest's summary line."""

    # The outermost wrapper: after the terminal reporter's, which writes the summary.
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Any:
        result = yield
        line = unguarded_line(session.config)
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if line is not None and reporter is not None:
            reporter.write_line(line, yellow=True)
        return result


def become_child(config: pytest.Config) -> bool:
    """In the fresh interpreter a supervising parent started: take the channel it
    passed and register the reports it gets. False where this is no such process."""
    value = os.environ.pop(CHILD_ENV, None)
    if value is None or _channel is not None:
        return False
    _become_session(config, value)
    return True


def _become_session(config: pytest.Config, handoff: str) -> None:
    """Take the channel ``handoff`` names (``session_start.py``), whether this process
    was forked or started fresh: the same checks either way."""
    global _channel, _token, _session_pid, _parent_threads
    fd_text, parent_text, threads = handoff.split(":", 2)
    fd, parent = int(fd_text), int(parent_text)
    os.set_inheritable(fd, False)  # neither a subprocess nor an exec'd program holds it
    _die_with_parent()
    # The token comes over the socket, not the environment (/proc/<pid>/environ keeps
    # the environment a process started with): read once, here, before any user code.
    token = os.read(fd, 64).decode("ascii", "replace")
    if os.getppid() != parent or not token:  # the parent ended before it could be told
        os._exit(1)
    _channel, _token, _session_pid, _parent_threads = fd, token, os.getpid(), threads
    config.pluginmanager.register(_ChildReports(), "exportcheck-supervised")


def spawn_failed(reason: str) -> None:
    """The session runs in this process after all: the header says why."""
    global _not_supervised
    _not_supervised = reason


def last_words(message: str) -> None:
    """Tell the parent why this process is about to end on purpose (no-op unsupervised)."""
    _send(FATAL + " ".join(message.split()))


class _ChildReports:
    def __init__(self) -> None:
        self.session: pytest.Session | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str) -> None:
        _send(ITEM + nodeid)

    # First among the unconfigure hooks: the session's ends the process with os._exit
    # (with this same status) where a thread it could not detach would keep it alive.
    @pytest.hookimpl(tryfirst=True)
    def pytest_unconfigure(self) -> None:
        status = UNKNOWN_STATUS if self.session is None else str(int(self.session.exitstatus))
        _send(f"{END}{_token} {status}")


def _send(line: str) -> None:
    if _channel is None or os.getpid() != _session_pid:
        return
    data = (line.replace("\n", " ")).encode("utf-8", "replace")[:MAX_MESSAGE]
    with contextlib.suppress(OSError):  # the parent is gone: nobody to tell
        os.write(_channel, data)  # one datagram: never torn, never merged


def _die_with_parent() -> None:
    """Linux: the kernel kills this process when the parent ends (``kill -9`` of the
    pytest the user started must not leave the session running as an orphan)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)


def _can_spawn() -> bool:
    names = (("posix_spawn", os), ("AF_UNIX", socket), ("SOCK_SEQPACKET", socket))
    return all(hasattr(module, name) for name, module in names)


def _distributed(options: Any) -> bool:
    numprocesses = getattr(options, "numprocesses", None)
    dist = getattr(options, "dist", "no")
    return bool(numprocesses) or dist not in (None, "no")


def _started_from_command_line() -> bool:
    """Whether this session is the one pytest's console entry point (``pytest``,
    ``python -m pytest``) started: only then is the process pytest's own to run again
    under a parent. A session started inside another (pytester's inline runs, a test
    calling ``pytest.main()``) has a second ``main`` on the stack."""
    entries = mains = 0
    frame: Any = sys._getframe()
    while frame is not None:
        if frame.f_globals.get("__name__") == "_pytest.config":
            name = frame.f_code.co_name
            # _console_main since pytest 9.1, console_main before; main calls _main on 9.x.
            entries += name in ("_console_main", "console_main")
            mains += name in ("main", "_main")
        frame = frame.f_back
    return entries >= 1 and mains == 1


def _ini_true(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() not in ("false", "0", "no", "off")
