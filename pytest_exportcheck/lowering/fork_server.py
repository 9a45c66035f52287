"""Fresh interpreters at the cost of a fork: a Python that imported torch and nothing
else, forked once per fresh run.

``fresh_process.py`` loads an artifact where a server would: in a Python that has
imported torch and only what the case names. Starting one costs an interpreter and
``import torch`` (2-5 s here), paid per artifact: a run that loads 1,000 programs an
older torch saved spent most of its time there. This server is that Python: it
imports torch, then forks a child per request, and the child starts in exactly the
state a new ``python -c`` would have reached after ``import torch`` (the server
runs no torch op, so no thread pool or accelerator is started before a fork). The
child gets the caller's environment, working directory and arguments, writes its
stdout and stderr to a file, and its exit status comes back.

What the child runs is the case's code (its ``load_imports``), so it may end the
child any way it likes, or the server. The child runs in a process group of its
own (a module that kills its group, ``os.killpg(0, SIGKILL)``, kills the child, not
the server and the run) and dies with the server (Linux ``PR_SET_PDEATHSIG``); a
server that ended is said (:attr:`Finished.server_ended`) and a new one serves the
next call.

One server per process that asks (an xdist worker each), started on first use and
ended at exit; where ``os.fork`` is missing (Windows) each run starts a new Python.
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

SERVER = r"""
import ctypes, importlib, json, os, sys, traceback
import torch

server = os.getpid()
try:
    prctl = ctypes.CDLL(None, use_errno=True).prctl
except (AttributeError, OSError):  # not Linux: a child the server leaves runs to its end
    prctl = None

# What torch itself imports to load any program: imported once here, not per child.
for name in sys.argv[2:]:
    try:
        importlib.import_module(name)
    except ImportError:  # another torch lays them out otherwise: its children import them
        pass

child_code = compile(sys.argv[1], "<exportcheck-fresh-process>", "exec")
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
            output = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(output, 1)
            os.dup2(output, 2)
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            sys.argv = ["-c", *request["argv"]]
            exec(child_code, {"__name__": "__main__"})
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 0
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
    output: str  # the child's stdout and stderr
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

    def run(self, argv: list[str], output: Path, timeout: float) -> Finished:
        request = {"argv": argv, "output": str(output), "cwd": os.getcwd(), "env": dict(os.environ)}
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
        try:
            status = self._reply(process, timeout=timeout)["status"]
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                os.killpg(pid, signal.SIGKILL)  # the child's group: what it started too
            with contextlib.suppress(ServerEnded):
                self._reply(process, timeout=60)
            status = None
        except ServerEnded as ended:
            text = output.read_text(errors="replace") if output.exists() else ""
            return Finished(None, text, server_ended=ended.status)
        text = output.read_text(errors="replace") if output.exists() else ""
        return Finished(status, text)

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
                [sys.executable, "-c", SERVER, self.code, *self.preloaded],
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
