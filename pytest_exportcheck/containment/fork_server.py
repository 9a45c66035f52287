"""Fresh interpreters at the cost of a fork: a Python that imported torch and nothing
else, forked once per fresh run.

Two parts of a run start a Python that is to hold torch and only what it is given:
``lowering/fresh_process.py`` loads an artifact where a server would (in a Python
that has imported torch and only what the case names), and ``repro/confirm.py`` runs
a finding's plain-torch reproduction. Starting one costs an interpreter and ``import
torch`` (2-5 s here), paid per artifact or per finding: a run that loads 1,000
programs an older torch saved spent most of its time there. This server is that
Python: it imports torch, then forks a child per request, and the child starts in
exactly the state a new ``python -c`` would have reached after ``import torch`` (the
server runs no torch op, so no thread pool or accelerator is started before a fork).
The child gets the caller's environment, working directory and arguments, no
standard input, writes its stdout and stderr to files, and its exit status comes
back.

What the child runs is the user's code (a case's ``load_imports``, a reproduction's
model), so it may end the child any way it likes, or the server. The child runs in a
process group of its own (a module that kills its group, ``os.killpg(0, SIGKILL)``,
kills the child, not the server and the run) and dies with the server, which dies
with the process that started it (Linux ``PR_SET_PDEATHSIG``); a server that ended
is said (:attr:`Finished.server_ended`) and a new one serves the next call. A call
interrupted while its child runs (Ctrl-C, the item's own time limit) kills the child
and the server before the interruption goes on: the next call starts another.

One server per process and code that asks (an xdist worker each), started on first
use and ended at exit; where ``os.fork`` is missing (Windows) callers start a new
Python instead (:func:`can_fork`).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# Run as ``python -c SERVER PARENT CODE PRELOADED...``.
SERVER = r"""
import ctypes, importlib, json, os, sys, traceback

parent, server = int(sys.argv[1]), os.getpid()
try:
    prctl = ctypes.CDLL(None, use_errno=True).prctl
except (AttributeError, OSError):  # not Linux: a child the server leaves runs to its end
    prctl = None
if prctl is not None:
    prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: the server dies with the run's process
    if os.getppid() != parent:  # which died before that took hold
        os._exit(1)

import torch

# What torch itself imports for the children's work: imported once here, not per child.
for name in sys.argv[3:]:
    try:
        importlib.import_module(name)
    except ImportError:  # another torch lays them out otherwise: its children import them
        pass

child_code = compile(sys.argv[2], "<exportcheck-fresh-process>", "exec")
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 0
        os.setpgid(0, 0)  # its group is its own: killing its group spares the server
        if prctl is not None:
            prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: a server that dies takes it along
        if os.getppid() != server:  # the server died before that took hold
            os._exit(1)
        try:
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # not the server's requests
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            os.dup2(os.open(request["output"], flags, 0o600), 1)
            if request["errors"]:
                os.dup2(os.open(request["errors"], flags, 0o600), 2)
            else:
                os.dup2(1, 2)
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            sys.argv = ["-c", *request["argv"]]
            exec(child_code, {"__name__": "__main__"})
        except SystemExit as exit:  # as Python ends on it: a message is printed, status 1
            if exit.code is None or isinstance(exit.code, int):
                code = exit.code or 0
            else:
                print(exit.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    print(json.dumps({"pid": pid}), flush=True)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"status": os.waitstatus_to_exitcode(status)}), flush=True)
"""


@dataclass
class Finished:
    returncode: int | None  # None: killed after the time allowed, or the server ended
    output: str  # the child's stdout, and its stderr where not asked for apart
    errors: str = ""  # its stderr, where asked for apart
    # The server's own exit status where it ended while the child ran (the child's
    # code killed it): the child died with it, and its status is not known.
    server_ended: int | None = None


class ServerEnded(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"the fork server ended (exit status {status})")
        self.status = status


class ForkServer:
    """A Python with torch imported that runs ``code`` in a forked child per call."""

    def __init__(self, code: str, preloaded: tuple[str, ...] = ()) -> None:
        self.code = code
        self.preloaded = preloaded
        self._process: subprocess.Popen[bytes] | None = None
        self._unread = b""  # the server's replies, read past the last whole line

    def run(
        self,
        argv: list[str],
        output: Path,
        timeout: float,
        *,
        errors: Path | None = None,
        cwd: Path | None = None,
    ) -> Finished:
        """Run the code with ``argv`` in a child, from ``cwd`` (this process's own by
        default) with this process's environment; its stdout to ``output``, its stderr
        there too or to ``errors``. Killed, with what it started, after ``timeout`` s."""
        request = {
            "argv": argv, "output": str(output), "errors": str(errors) if errors else "",
            "cwd": str(cwd or os.getcwd()), "env": dict(os.environ),
        }  # fmt: skip
        for attempt in range(2):  # a server that ended while idle is started again, once
            process = self._started()
            try:
                assert process.stdin is not None
                process.stdin.write((json.dumps(request) + "\n").encode())
                process.stdin.flush()
                pid = self._reply(process, timeout=60)["pid"]
                break
            except (BrokenPipeError, ServerEnded):
                status = self._ended(process)
                if attempt:
                    return Finished(None, "", server_ended=status)
            except BaseException:  # interrupted before the pid came: a child, if forked,
                self._abandon(process)  # dies with its server (its death signal)
                raise
        try:
            status = self._reply(process, timeout=timeout)["status"]
        except TimeoutError:
            _kill_group(pid)
            with contextlib.suppress(ServerEnded):
                self._reply(process, timeout=60)
            status = None
        except ServerEnded as ended:
            return Finished(None, *_printed(output, errors), server_ended=ended.status)
        except BaseException:  # Ctrl-C, the item's own limit: the child goes with it
            _kill_group(pid)
            self._abandon(process)  # its reply is owed: the next call starts another
            raise
        return Finished(status, *_printed(output, errors))

    def _abandon(self, process: subprocess.Popen[bytes]) -> None:
        self._process = None
        process.kill()
        process.wait()

    def _ended(self, process: subprocess.Popen[bytes]) -> int:
        """The status of a server that ended; the next call starts another."""
        self._process = None
        try:
            return process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # its pipe broke, yet it runs: end it
            process.kill()
            return process.wait()

    def _started(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-c", SERVER, str(os.getpid()), self.code, *self.preloaded],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
            )  # fmt: skip
            self._unread = b""
            atexit.register(self.close)
        return self._process

    def _reply(self, process: subprocess.Popen[bytes], timeout: float) -> dict[str, int]:
        """The server's next reply line (read unbuffered: select sees only the pipe)."""
        assert process.stdout is not None
        while b"\n" not in self._unread:
            ready, _, _ = select.select([process.stdout], [], [], timeout)
            if not ready:
                raise TimeoutError
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:  # the server itself ended: the next call starts another
                raise ServerEnded(self._ended(process))
            self._unread += chunk
        line, _, self._unread = self._unread.partition(b"\n")
        return json.loads(line)

    def close(self) -> None:
        if self._process is not None and self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
        self._process = None


def can_fork() -> bool:
    return hasattr(os, "fork") and sys.platform != "win32"


def _kill_group(pid: int) -> None:
    """The child's process group: the child and what it started."""
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.killpg(pid, signal.SIGKILL)


def _printed(output: Path, errors: Path | None) -> tuple[str, str]:
    def read(path: Path | None) -> str:
        return path.read_text(errors="replace") if path is not None and path.exists() else ""

    return read(output), read(errors)
