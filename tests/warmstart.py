"""Python children of the tests, forked from an interpreter that has imported torch.

A child that imports torch and Dynamo pays ~3.3 s of CPU for it, most of what a small
pytest run costs; the suite starts a few hundred (benchmarks/README.md, "Issue 47,
fifth step"). Here one server per test process (``warmstart_server.py``) imports them
once and forks a child per request. The child runs what ``python ARGS`` would have
run, in a process of its own, with the caller's argv, working directory, environment
and standard streams.

The caller runs this file as its "python" (:func:`python_command`): the *launcher*, a
process of a few milliseconds that hands its streams to the server, passes the
signals it receives on to the child, and exits as the child exits (killed by the same
signal, or with its status). When the launcher dies, the server kills the child's
process group, as ``childkit`` kills a child's group. Where the server refuses (a
start-up variable differs, see there), the launcher execs the real interpreter.

For children whose start a test does not read (``childkit``'s ``warm``);
``EXPORTCHECK_TESTS_WARMSTART=0`` turns it off for a run.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

from warmstart_server import HEADER  # stdlib only at import: cheap for the launcher

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "warmstart_server.py")


# --- the launcher: what the caller runs as "python" -----------------------------------


def launch(address: str, argv: list[str]) -> None:
    """Run ``python argv`` through the server at ``address``, or exec it."""
    if address:
        try:
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(address)
        except OSError:
            conn = None
        if conn is not None:
            _launch_through(conn, argv)
    os.execv(sys.executable, [sys.executable, *argv])


RELAYED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def _launch_through(conn: socket.socket, argv: list[str]) -> None:
    # Relayed from before the request: the child may run (and print) before the server's
    # answer arrives, and a signal sent on what it printed must reach it.
    child: list[int] = []
    pending: list[int] = []

    def relay(signum: int, frame: object) -> None:
        if not child:
            pending.append(signum)
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(child[0], signum)

    for name in RELAYED:
        signal.signal(getattr(signal, name), relay)
    request = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    fds = struct.pack("3i", 0, 1, 2)
    conn.sendmsg(
        [HEADER.pack(len(request)), request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)]
    )
    reader = conn.makefile("r")
    first = reader.readline().split()
    if first[:1] != ["pid"]:
        conn.close()
        for name in RELAYED:
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        for signum in pending:  # what the python started in its place would have died of
            os.kill(os.getpid(), signum)
        return  # refused (the reason is in the server's log): started cold by the caller
    child.append(int(first[1]))
    for signum in pending:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child[0], signum)
    line = reader.readline().split()
    status = int(line[1]) if line[:1] == ["exit"] else 255 << 8
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL's cannot be set
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 255)


# --- the test process's side -----------------------------------------------------------

_server: subprocess.Popen[bytes] | None = None
_address: str | None = None


def python_command(args: list[str]) -> list[str]:
    """The command that runs ``python args`` as a warm child: ``[sys.executable,
    *args]`` itself where warm starts are off (``EXPORTCHECK_TESTS_WARMSTART=0``) or the
    server could not start."""
    return [*(launcher() or [sys.executable]), *args]


def launcher() -> list[str] | None:
    """The command before ``ARGS`` that starts a warm child; None where warm starts are
    off or the server could not start."""
    address = _started_server()
    return None if address is None else [sys.executable, "-S", __file__, address]


# The address of a server a parent process started for its children to share (the
# xdist controller's, for its workers: one import of torch, not one per worker).
SHARED_VARIABLE = "EXPORTCHECK_TESTS_WARMSTART_SHARED"
READY_SECONDS = 300.0  # a server's imports, on a loaded machine


def share_server() -> None:
    """Start this process's server, not waiting for its imports, and give its address
    to the processes this one starts after."""
    if _enabled() and _server is None:
        os.environ[SHARED_VARIABLE] = _start_server()


def _enabled() -> bool:
    return os.environ.get("EXPORTCHECK_TESTS_WARMSTART", "1") != "0" and sys.platform.startswith(
        "linux"
    )


def _started_server() -> str | None:
    """This process's server's address, or the shared one's, once it listens."""
    if not _enabled():
        return None
    shared = os.environ.get(SHARED_VARIABLE)
    if _server is None and shared:
        server, address = None, shared
    else:
        address = _address or _start_server()
        server = _server
    # The server names its socket once it listens, after its imports.
    deadline = time.monotonic() + READY_SECONDS
    while not os.path.exists(address) and time.monotonic() < deadline:
        if server is not None and server.poll() is not None:
            break
        time.sleep(0.05)
    alive = server is None or server.poll() is None  # its own that ended: children cold
    return address if alive and os.path.exists(address) else None


def _start_server() -> str:
    global _server, _address
    folder = tempfile.mkdtemp(prefix="warmstart-")
    _address = os.path.join(folder, "socket")
    _server = subprocess.Popen(
        [sys.executable, SERVER, _address],
        stdin=subprocess.PIPE,  # its end, the server's cue to end
        stdout=subprocess.DEVNULL,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    atexit.register(_stop_server, folder)
    return _address


def _stop_server(folder: str) -> None:
    if _server is not None:
        _server.kill()
        _server.wait()
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    launch(sys.argv[1], sys.argv[2:])
