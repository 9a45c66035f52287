"""The processes a test starts: each bounded in time, each ended with its test or the run.

A child starts in a session of its own (``start_new_session``), so it and everything
it starts — a pytest run's xdist workers, the supervisor's forked child, a fork
server, what a hostile model leaves behind — share one process group, which is
ended as one (SIGKILL to the group): when its time is up, when the test that started
it ends (an autouse fixture in ``tests/conftest.py``), and when the run is
interrupted (``pytest_keyboard_interrupt`` there, in the process running the test).

Without this, SIGINT to an xdist controller left both workers waiting on pytester
subprocesses for over a minute: a worker hears of it only when execnet sends it a
SIGINT of its own, 5 s later, and its child, in the worker's process group, was
never told. ``benchmarks/interrupt.py`` measures it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pluginkit
import warmstart
from childplugin import warm_workers

# A bound for a child that names none: far above the slowest child of the suite (a
# pytest run of its own, under a busy machine), far below "waits forever".
DEFAULT_TIMEOUT = 300.0

_started: list[subprocess.Popen[Any]] = []
# Whether a Python child starts warm (tests/warmstart.py) unless it says: set by the
# hostile tests' conftest, for children whose start is not what a test reads.
warm_by_default = False
# Whether the xdist workers of the test's in-process pytester runs start warm: off for
# the hostile tests, whose subjects include how a worker's process ends.
warm_xdist_workers = True
_CLOSE = object()  # pytester's CLOSE_STDIN default, before a Pytester is at hand


class GroupPopen(subprocess.Popen):  # type: ignore[type-arg]
    """A child in a session of its own: ``kill()`` and ``terminate()`` reach its group."""

    def __init__(self, args: Any, *, warm: bool | None = None, **kwargs: Any) -> None:
        warm = warm_by_default if warm is None else warm
        env = kwargs.get("env")
        env = pluginkit.child_environment(dict(os.environ if env is None else env))
        python = not isinstance(args, str | bytes) and list(args[:1]) == [sys.executable]
        prefix = warmstart.launcher() if warm and python else None
        if prefix:
            args = [*prefix, *map(str, args[1:])]
            if warm_xdist_workers:
                env = warm_workers.environment(env, prefix)
        kwargs["start_new_session"] = True
        kwargs["env"] = env
        super().__init__(args, **kwargs)
        _started.append(self)

    def send_signal(self, sig: int) -> None:
        # The group outlives its leader while anything in it runs: signal it even
        # when the leader itself has ended.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)


def end(process: subprocess.Popen[Any]) -> None:
    """Kill ``process``'s group and reap the process."""
    process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)
    with contextlib.suppress(ValueError):
        _started.remove(process)


def end_all() -> int:
    """End every child still running (or whose group still runs); how many were ended."""
    ended = 0
    for process in list(_started):
        if process.poll() is None or _group_alive(process.pid):
            ended += 1
        end(process)
    return ended


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def run(
    args: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = False,
    capture_output: bool = False,
    warm: bool | None = None,
    **kwargs: Any,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` for a test's child: its group killed on a timeout or on any
    exception while waiting (KeyboardInterrupt included). ``warm``: a Python child
    forked from one that imported torch (``tests/warmstart.py``), for a child whose
    start the test does not read; default :data:`warm_by_default`."""
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    process = GroupPopen(args, warm=warm, **kwargs)
    try:
        out, err = process.communicate(timeout=timeout)
    except BaseException:
        end(process)
        raise
    end(process)  # whatever the child left running in its group goes with it
    done = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    if check:
        done.check_returncode()
    return done


def pytester_popen(
    self: Any,
    cmdargs: Sequence[Any],
    stdout: Any = subprocess.PIPE,
    stderr: Any = subprocess.PIPE,
    stdin: Any = _CLOSE,
    **kw: Any,
) -> subprocess.Popen[Any]:
    """``Pytester.popen`` starting a :class:`GroupPopen`; otherwise pytester's own (the
    working directory first on ``PYTHONPATH``; stdin closed, written, or as given)."""
    env = os.environ.copy()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH", "")]))
    kw["env"] = env
    close = stdin is _CLOSE or stdin is self.CLOSE_STDIN
    data = stdin if isinstance(stdin, bytes) else None
    kw["stdin"] = subprocess.PIPE if close or data is not None else stdin
    popen = GroupPopen(cmdargs, stdout=stdout, stderr=stderr, **kw)
    if popen.stdin is not None and data is not None:
        popen.stdin.write(data)
    if popen.stdin is not None and close:
        popen.stdin.close()
    return popen


def bounded(run_method: Any) -> Any:
    """``Pytester.run`` with :data:`DEFAULT_TIMEOUT` where the test names no timeout, and
    the child's group ended if the wait is interrupted."""

    def run_bounded(self: Any, *cmdargs: Any, timeout: float | None = None, **kw: Any) -> Any:
        try:
            return run_method(self, *cmdargs, timeout=timeout or DEFAULT_TIMEOUT, **kw)
        except BaseException:
            end_all()
            raise

    return run_bounded


def interrupt_workers(config: Any) -> None:
    """On the xdist controller: pass a SIGINT on to the workers at once.

    The controller's teardown tells each worker to stop and waits; a worker busy in a
    test hears of it when execnet sends it SIGINT, 5 s later. Private attributes
    (the gateways' ``Popen``): where they are not there, that 5 s is what remains.
    """
    session = config.pluginmanager.getplugin("dsession")
    group = getattr(getattr(session, "nodemanager", None), "group", None)
    for gateway in group if group is not None else []:
        popen = getattr(getattr(gateway, "_io", None), "popen", None)
        if popen is not None and popen.poll() is None:
            with contextlib.suppress(OSError):
                popen.send_signal(signal.SIGINT)
