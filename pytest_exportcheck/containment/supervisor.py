"""A run whose process vanishes must not pass: a parent that outlives the session.

``os._exit`` is refused while an item runs (``user_exits.py``), but
``posix._exit``, libc's ``exit()`` through ctypes and ``os.execv`` end or
replace the process with no Python code run after them. Without ``-n`` the
run stops mid-line with the status the model chose (0 for all three), and a
CI job reads it as green. Under pytest-xdist the controller sees its worker
go and reports the item ``[crashed]``: nothing to add there.

So a one-process ``pytest --exportcheck``, started from the command line,
forks once before anything heavy is imported (``pytest_cmdline_main``, ahead
of every ``pytest_configure``). The child runs the session as it would have
run; it tells the parent, through a pipe, each item it starts and, last, that
the session reached its end. The parent only waits. If the child ends
without that last word, the parent names the item that was running, says why
the run is incomplete, and exits non-zero (the child's own status where that
was non-zero; a signal that killed the child kills the parent the same way).

Not supervised (said in the header): ``pytest.main()`` called in-process (the
caller's process cannot be forked under it), xdist runs, platforms without
``fork``, and runs with ``exportcheck_supervise = false``. Measured cost: the
fork of a pytest process without torch, a few milliseconds, and a parent of
~40 MB resident (pages shared with the child until either writes them).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Any

import pytest

# The lines the child writes: "item <nodeid>", "fatal <message>", "end".
_ITEM, _FATAL, _END = "item ", "fatal ", "end"
# Signals the parent passes on to the child (a CI runner's timeout sends SIGTERM to
# the process it started: the parent). SIGINT from a terminal reaches both already.
_FORWARDED = ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")

_channel: int | None = None  # the child's end of the pipe, once forked


def why_unsupervised(config: pytest.Config) -> str | None:
    """Why this run is not supervised, or None when it can be."""
    if not config.getoption("exportcheck", False):
        return "no --exportcheck"
    if not _ini_true(config.getini("exportcheck_supervise")):
        return "exportcheck_supervise = false"
    if hasattr(config, "workerinput") or _distributed(config):
        return "pytest-xdist runs items in workers: the controller reports one that vanishes"
    if not hasattr(os, "fork"):
        return "this platform has no fork()"
    if config.getoption("collectonly", False):
        return "--collect-only runs no items"
    if not _started_from_command_line():
        return "pytest.main() called in-process"
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch.cuda, "is_initialized", lambda: False)():
        return "CUDA was initialized before the session (a forked child could not use it)"
    return None


def supervise(config: pytest.Config) -> int | None:
    """Fork: in the child, return None (the session runs); in the parent, wait for the
    child and return the run's exit status."""
    global _channel
    read_end, write_end = os.pipe()  # not inherited by an exec'd program: EOF then
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        _channel = write_end
        config.pluginmanager.register(_ChildReports(), "exportcheck-supervised")
        return None
    os.close(write_end)
    return _wait_for(child, read_end)


def header_lines(config: pytest.Config) -> list[str]:
    """What the header says of supervision (nothing in an xdist worker or controller:
    workers that vanish are the controller's to report)."""
    if _channel is not None:
        return [
            "exportcheck: supervised: a parent process fails the run if this one ends "
            "before the run does (exportcheck_supervise = false: not)"
        ]
    reason = why_unsupervised(config)
    if reason is None or "xdist" in reason:
        return []
    return [f"exportcheck: not supervised ({reason}): a model that ends the process ends the run"]


def last_words(message: str) -> None:
    """Tell the parent why this process is about to end on purpose (no-op unsupervised)."""
    _send(_FATAL + " ".join(message.split()))


class _ChildReports:
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str) -> None:
        _send(_ITEM + nodeid)

    # First among the unconfigure hooks: the session's ends the process with os._exit
    # where a thread it could not detach would keep it alive, and the summary is out.
    @pytest.hookimpl(tryfirst=True)
    def pytest_unconfigure(self) -> None:
        _send(_END)


def _send(line: str) -> None:
    if _channel is None:
        return
    data = (line.replace("\n", " ") + "\n").encode("utf-8", "replace")
    with contextlib.suppress(OSError):  # the parent is gone: nobody to tell
        os.write(_channel, data)  # one write under PIPE_BUF for short lines: never torn


def _wait_for(child: int, read_end: int) -> int:
    for name in _FORWARDED:
        number = getattr(signal, name, None)
        if number is not None:
            signal.signal(number, lambda signum, frame: _pass_on(child, signum))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the terminal sent it to the child too
    running, fatal, ended = None, None, False
    with os.fdopen(read_end, "rb") as pipe:
        for raw in pipe:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith(_ITEM):
                running = line[len(_ITEM) :]
            elif line.startswith(_FATAL):
                fatal = line[len(_FATAL) :]
            elif line == _END:
                ended = True
    status = _waited_status(child)
    if ended:
        return _exit_like(status)
    sys.stdout.flush()
    sys.stderr.write("\n" + incomplete_run_message(running, fatal, status) + "\n")
    sys.stderr.flush()
    code = _exit_like(status)
    return 1 if fatal or code == 0 else code  # ended on purpose: a failed run, as pytest says


def _one_line(text: str) -> str:
    """The child's words on one line that starts with ours: GitHub's runner reads a
    workflow command (``::error``) from any line, and "\\r" starts one for it too."""
    return text.replace("\r", "\\r")


def incomplete_run_message(running: str | None, fatal: str | None, status: int) -> str:
    """What the parent says when the session ended without reaching its end."""
    where = f"while running {_one_line(running)}" if running else "before any item started"
    if fatal:
        return f"exportcheck: the run ended {where}: {_one_line(fatal)}"
    how = _describe_status(status)
    return (
        f"exportcheck: the test process ended {where} ({how}) without reaching the end of "
        "the run: something in it ended or replaced the process where no Python code runs "
        "after (posix._exit, libc's exit() through ctypes, os.exec*, a crash). No summary, "
        "report or recording of this run is complete; the run fails. Under pytest-xdist "
        "(-n 1 or more) the item is reported [crashed] and the run goes on."
    )


def _describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"killed by {name}"
    return f"exit status {os.WEXITSTATUS(status)}"


def _exit_like(status: int) -> int:
    """The child's exit status; where a signal killed it, the parent dies of the same."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        return 128 + number  # a signal that does not kill (ignored elsewhere)
    return os.WEXITSTATUS(status)


def _waited_status(child: int) -> int:
    while True:
        try:
            _, status = os.waitpid(child, 0)
            return status
        except InterruptedError:
            continue


def _pass_on(child: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(child, signum)


def _distributed(config: pytest.Config) -> bool:
    numprocesses = config.getoption("numprocesses", None)
    dist = config.getoption("dist", "no")
    return bool(numprocesses) or dist not in (None, "no")


def _started_from_command_line() -> bool:
    """Whether this session is the one pytest's console entry point (``pytest``,
    ``python -m pytest``) started: only then is the process pytest's own to fork. A
    session started inside another (pytester's inline runs, a test calling
    ``pytest.main()``) has a second ``main`` on the stack: forking there would fork the
    outer session too."""
    entries = mains = 0
    frame: Any = sys._getframe()
    while frame is not None:
        if frame.f_globals.get("__name__") == "_pytest.config":
            name = frame.f_code.co_name
            # _console_main since pytest 9.1, console_main before; main calls _main on 9.x.
            entries += name in ("_console_main", "console_main")
            mains += name in ("main", "_main")
        frame = frame.f_back
    return entries == 1 and mains == 1


def _ini_true(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() not in ("false", "0", "no", "off")
