"""The server of ``tests/warmstart.py``: imports torch once, with one thread, and what a
first export needs (``warmstart_imports.py``), then forks a child per request that runs
what ``python ARGS`` would run.

A child is forked only while ``/proc/self/task`` lists this process's one thread. It
gets the caller's standard streams (passed over the socket), argv, working directory
and environment, a process group of its own, and fresh ``__main__``, ``sys.argv``,
``sys.path`` and ``sys.orig_argv``; it ends with this server (its death signal), which
ends with the test process that started it. The server refuses (the launcher then
execs a real interpreter) where the imports made before the fork could differ from a
fresh start's: an environment variable read at start-up differs from the server's,
or a ``PYTHONPATH`` entry the caller puts first holds a module the server imported.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import sys

from warmstart_imports import import_and_warm_up

# Environment variables read when torch, its libraries or Python start: a child whose
# value differs is started cold. The server's own OPENBLAS_NUM_THREADS is not compared.
_START_UP_PREFIXES = (
    "PYTHON", "TORCH", "PYTORCH", "CUDA", "NVIDIA", "HIP", "ROCM", "OMP_", "KMP_", "MKL",
    "GOMP", "OPENBLAS", "NUMPY", "LD_", "DNNL", "ONEDNN",
)  # fmt: skip
_OWN = {"OPENBLAS_NUM_THREADS"}
HEADER = struct.Struct("!I")  # the request's length, before it


def _start_up_environment(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(_START_UP_PREFIXES) and k not in _OWN}


_SERVER_PYTHONPATH = os.environ.get("PYTHONPATH", "")
_SET_BY_IMPORTS: dict[str, str] = {}
INDUCTOR_CACHE = "TORCHINDUCTOR_CACHE_DIR"  # set by torch's import (torch 2.13) where unset


def serve(address: str) -> None:
    """Import torch, name the socket once it listens, then fork a child per request until the
    process that started this one ends (its death signal) or stdin closes."""
    _die_with_parent()
    before = dict(os.environ)
    # Unset while importing, to learn what the imports set it to: a test process that
    # imported torch before starting this one passes it on already set.
    os.environ.pop(INDUCTOR_CACHE, None)
    for warning in import_and_warm_up():  # each child would not see it again
        print(f"warmstart: the server's imports warned: {warning}", file=sys.stderr)

    # What the imports put in the environment (torch: TORCHINDUCTOR_CACHE_DIR), which a
    # fresh child's own imports would put in its own.
    _SET_BY_IMPORTS.update(
        {k: v for k, v in os.environ.items() if before.get(k) != v or k == INDUCTOR_CACHE}
    )
    os.environ.clear()
    os.environ.update(before)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address + ".partial")
    listener.listen(64)
    # Named once it listens: a process that finds the name connects (warmstart.py).
    os.rename(address + ".partial", address)
    wake_read, wake_write = socket.socketpair()
    wake_read.setblocking(False)
    wake_write.setblocking(False)
    signal.set_wakeup_fd(wake_write.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)
    own_sockets = [listener, wake_read, wake_write]
    children: dict[socket.socket, int] = {}  # a launcher's connection -> its child
    poller = select.poll()  # no descriptor of its own for a child to inherit
    for fd in (listener.fileno(), wake_read.fileno(), 0):
        poller.register(fd, select.POLLIN)
    by_fd: dict[int, socket.socket] = {}
    killed: set[int] = set()  # children whose launcher went first, not yet reaped
    while True:
        for fd, _ in poller.poll(1000):
            if fd == 0:
                if not os.read(0, 1):
                    _kill_all(children)
                    return
            elif fd == wake_read.fileno():
                while _drain(wake_read):
                    pass
            elif fd == listener.fileno():
                conn, _ = listener.accept()
                pid = _start(conn, own_sockets + list(children) + [conn])
                if pid is None:
                    conn.close()
                    continue
                children[conn] = pid
                by_fd[conn.fileno()] = conn
                poller.register(conn.fileno(), select.POLLIN)
            elif fd in by_fd:  # a launcher hung up or died: its child's group goes
                conn = by_fd.pop(fd)
                poller.unregister(fd)
                pid = children.pop(conn)
                _kill_group(pid)
                killed.add(pid)
                conn.close()
        _reap(children, by_fd, poller)
        _reap_killed(killed)


def _drain(sock: socket.socket) -> bool:
    try:
        return bool(sock.recv(4096))
    except BlockingIOError:
        return False


def _reap(
    children: dict[socket.socket, int], by_fd: dict[int, socket.socket], poller: select.poll
) -> None:
    for conn, pid in list(children.items()):
        try:
            done, status, usage = os.wait4(pid, os.WNOHANG)
        except ChildProcessError:
            done, status, usage = pid, 255 << 8, None
        if done == 0:
            continue
        _account(pid, usage)
        _kill_group(pid)  # what it left in its group goes with it, as with a real child
        with contextlib.suppress(OSError):
            conn.sendall(f"exit {status}\n".encode())
        del children[conn]
        by_fd.pop(conn.fileno(), None)
        poller.unregister(conn.fileno())
        conn.close()


# Where each child's CPU is written as it ends (benchmarks/suite_cpu.py reads it): a
# warm child is the server's, so no test's own accounting sees it.
CPU_LOG = os.environ.get("EXPORTCHECK_TESTS_WARMSTART_CPU")
_requested_by: dict[int, str] = {}  # a child's pid -> the test that asked for it


def _account(pid: int, usage: object) -> None:
    test = _requested_by.pop(pid, "")
    if CPU_LOG and usage is not None:
        cpu = usage.ru_utime + usage.ru_stime  # type: ignore[attr-defined]
        with open(CPU_LOG, "a") as log:
            log.write(f"{test}\t0\t{cpu:.2f}\t\t\t{pid}\n")


def _reap_killed(killed: set[int]) -> None:
    for pid in list(killed):
        usage = None
        with contextlib.suppress(ChildProcessError):
            done, _, usage = os.wait4(pid, os.WNOHANG)
            if done == 0:
                continue
        _account(pid, usage)
        killed.discard(pid)


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)


def _kill_all(children: dict[socket.socket, int]) -> None:
    for pid in children.values():
        _kill_group(pid)


def _start(conn: socket.socket, inherited: list[socket.socket]) -> int | None:
    """Fork the child a request asks for; its pid, or None where it is refused."""
    size = HEADER.size
    data, fds, _, _ = _recv_with_fds(conn, size)
    (length,) = HEADER.unpack(data)
    body = b""
    while len(body) < length:
        chunk = conn.recv(length - len(body))
        if not chunk:
            return None
        body += chunk
    request = json.loads(body)
    why = _refusal(request)
    if why is not None:
        for fd in fds:
            os.close(fd)
        print(f"warmstart: cold start: {why}", file=sys.stderr, flush=True)
        with contextlib.suppress(OSError):
            conn.sendall(f"refused {why}\n".encode())
        return None
    pid = os.fork()
    if pid == 0:
        try:
            _become_child(request, fds, inherited)
        except SystemExit as exc:
            _exit_as(exc)
        except BaseException as exc:
            import traceback

            traceback.print_exc()
            # Python ends an uncaught KeyboardInterrupt by SIGINT, as if not caught at all.
            _flush_and_exit(1, signal.SIGINT if isinstance(exc, KeyboardInterrupt) else None)
        _flush_and_exit(0)
    for fd in fds:
        os.close(fd)
    _requested_by[pid] = request["env"].get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
    # A launcher killed before it heard of its child (a test that read the child's pid
    # from what it printed) hangs up: the loop then kills the child's group.
    with contextlib.suppress(OSError):
        conn.sendall(f"pid {pid}\n".encode())
    return pid


def _recv_with_fds(conn: socket.socket, size: int) -> tuple[bytes, list[int], int, object]:
    ancillary = socket.CMSG_SPACE(3 * struct.calcsize("i"))
    data, ancdata, flags, address = conn.recvmsg(size, ancillary)
    fds: list[int] = []
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += list(struct.unpack(f"{len(payload) // 4}i", payload[: len(payload) // 4 * 4]))
    return data, fds, flags, address


def _refusal(request: dict) -> str | None:
    """Why a forked child could differ from ``python argv`` started afresh, or None."""
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        return f"the server has {threads} threads"
    env = request["env"]
    ours, theirs = _start_up_environment(dict(os.environ)), _start_up_environment(env)
    if theirs.get("PYTHONPATH") != ours.get("PYTHONPATH"):
        added = _added_path(ours.get("PYTHONPATH", ""), theirs.get("PYTHONPATH", ""))
        if added is None:
            return "PYTHONPATH is not the server's with entries put first"
        shadowing = _shadowing(added)
        if shadowing:
            return f"PYTHONPATH adds {shadowing}, which the server imported"
        theirs.pop("PYTHONPATH", None)
        ours.pop("PYTHONPATH", None)
    for key, value in _SET_BY_IMPORTS.items():
        # Set already to what the imports set (torch's TORCHINDUCTOR_CACHE_DIR, in a test
        # process that imported torch), or not set: a fresh child ends up the same.
        if ours.get(key, value) == value and theirs.get(key, value) == value:
            ours.pop(key, None)
            theirs.pop(key, None)
    if theirs != ours:
        differ = sorted(set(theirs.items()) ^ set(ours.items()))
        return "start-up environment differs: " + ", ".join(sorted({k for k, _ in differ}))
    argv = request["argv"]
    if not _parse(argv):
        return f"arguments the server does not start: {argv[:3]}"
    return None


def _added_path(ours: str, theirs: str) -> list[str] | None:
    ours_list = [p for p in ours.split(os.pathsep) if p]
    theirs_list = [p for p in theirs.split(os.pathsep) if p]
    if theirs_list[len(theirs_list) - len(ours_list) :] != ours_list:
        return None
    return theirs_list[: len(theirs_list) - len(ours_list)]


def _shadowing(entries: list[str]) -> str | None:
    imported = {name.split(".")[0] for name in sys.modules}
    for entry in entries:
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        for name in names:
            stem, path = name.split(".")[0], os.path.join(entry, name)
            # A folder without __init__.py (a built docs site/) is at most a namespace
            # portion, which any module of that name further on the path wins over.
            package = "." not in name and os.path.isfile(os.path.join(path, "__init__.py"))
            if stem in imported and (name.endswith((".py", ".so", ".pth")) or package):
                return path
    return None


def _parse(argv: list[str]) -> tuple[set[str], str, list[str]] | None:
    """(flags, what to run: "-c"/"-m"/"path", the rest) for the forms the tests start:
    ``[-u] [-B] -c CODE ...``, ``-m MODULE ...``, ``SCRIPT ...``; None for others."""
    flags: set[str] = set()
    for i, arg in enumerate(argv):
        if arg in ("-u", "-B"):
            flags.add(arg)
        elif arg in ("-c", "-m") and i + 1 < len(argv):
            return flags, arg, argv[i + 1 :]
        elif arg.startswith("-m") and len(arg) > 2:  # pytester's "-mpytest"
            return flags, "-m", [arg[2:], *argv[i + 1 :]]
        elif not arg.startswith("-"):
            return flags, "path", argv[i:]
        else:
            return None
    return None


def _become_child(request: dict, fds: list[int], inherited: list[socket.socket]) -> None:
    import io
    import runpy
    import types

    os.setsid()  # a group of its own, which the server kills when the launcher goes
    _die_with_parent()
    signal.set_wakeup_fd(-1)
    # The handlers Python starts with: SIGINT raises KeyboardInterrupt, SIGPIPE ignored.
    for name in ("SIGCHLD", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    for sock in inherited:
        sock.detach()  # their descriptors close below; no object may close them later
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    os.closerange(3, 1 << 16)
    flags, kind, rest = _parse(request["argv"])  # type: ignore[misc]
    unbuffered = "-u" in flags
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)))
    for fd, name in ((1, "stdout"), (2, "stderr")):
        raw = io.FileIO(fd, "w", closefd=False)
        stream = io.TextIOWrapper(
            raw if unbuffered else io.BufferedWriter(raw),
            write_through=unbuffered or fd == 2,
            line_buffering=fd == 2 or os.isatty(fd),
            errors="backslashreplace" if fd == 2 else "strict",
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)
    sys.__stdin__ = sys.stdin
    if "-B" in flags:
        sys.dont_write_bytecode = True
    os.chdir(request["cwd"])
    sys.orig_argv = [sys.executable, *request["argv"]]  # what the plugin restarts from
    os.environ.clear()
    os.environ.update({**_SET_BY_IMPORTS, **request["env"]})
    added = _added_path(_SERVER_PYTHONPATH, request["env"].get("PYTHONPATH", ""))
    base = sys.path[1:]  # this file's folder was the server's first entry
    import random

    random.seed()  # a fresh interpreter seeds from the system; a fork would repeat ours
    if kind == "-c":
        sys.argv = ["-c", *rest[1:]]
        sys.path[:] = ["", *(added or []), *base]
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = __builtins__
        sys.modules["__main__"] = main
        exec(compile(rest[0], "<string>", "exec"), main.__dict__)
    elif kind == "-m":
        sys.argv = [rest[0], *rest[1:]]
        sys.path[:] = [os.getcwd(), *(added or []), *base]
        runpy.run_module(rest[0], run_name="__main__", alter_sys=True)
    else:
        script = os.path.abspath(rest[0])
        sys.argv = list(rest)
        sys.path[:] = [os.path.dirname(script), *(added or []), *base]
        runpy.run_path(script, run_name="__main__")
    _flush_and_exit(0)


def _exit_as(exc: SystemExit) -> None:
    code = exc.code
    if code is None:
        _flush_and_exit(0)
    if isinstance(code, int):
        _flush_and_exit(code)
    print(code, file=sys.stderr)
    _flush_and_exit(1)


def _flush_and_exit(code: int, by_signal: int | None = None) -> None:
    # A fresh interpreter runs atexit handlers and flushes its streams at exit; os._exit
    # (which a fork must use, not to run the server's own ends) does neither.
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if by_signal is not None:
        signal.signal(by_signal, signal.SIG_DFL)
        os.kill(os.getpid(), by_signal)
    os._exit(code & 0xFF)


def _die_with_parent() -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() == 1:
        os._exit(1)


if __name__ == "__main__":
    serve(sys.argv[1])
