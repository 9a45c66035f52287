"""The supervising parent: starts the session (``session_start.py``: a fork where this
process has one thread, else a fresh interpreter) and judges its end.

The parent then only waits:

- for its own child's exit (``waitpid``), not for the socket's end: a process the
  model forked may hold the child's end for ever; it is named, not waited for;
- for signals, which it passes on: SIGTERM from a CI runner, ``kill -INT`` to the
  pytest the user started. One the terminal sent (Ctrl-C) reached the child too
  (same process group), and is not sent twice. A session a passed-on signal ended
  was stopped from outside: the message says so and blames no item, and the
  parent dies of the same signal.
- for the child's messages, read as they come so the child never blocks on them.

The end of the run counts only from the child's own pid (the kernel's
``SCM_CREDENTIALS`` on Linux), with the token sent to the child over the socket
when it started, and only if the child then exits normally with the status it
announced. A child killed by a signal makes the parent exit ``128 + signal``
(137 for SIGKILL, the out-of-memory killer's), naming the item.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import struct
import sys
from dataclasses import dataclass, field

from pytest_exportcheck.containment.exit_status import describe_status, signal_name
from pytest_exportcheck.containment.session_start import Started, start
from pytest_exportcheck.containment.supervision_channel import (
    END,
    FATAL,
    ITEM,
    MAX_MESSAGE,
    UNKNOWN_STATUS,
)

# What the parent passes on. The terminal sends SIGINT, SIGQUIT and SIGHUP to the
# whole foreground process group: those reach the child already.
_PASSED_ON = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
_SI_KERNEL = 0x80  # Linux's si_code for a signal the kernel sent (the terminal's keys)
_POLL_SECONDS = 0.05  # how often messages are read while no signal comes
_CREDENTIALS = struct.Struct("iII")  # struct ucred: pid, uid, gid


@dataclass
class _Heard:
    running: str | None = None
    fatal: str | None = None
    announced: str | None = None  # the end's status: the session reached its end
    forged: int = 0  # end lines without the token
    strangers: set[int] = field(default_factory=set)  # pids that wrote, not the child's


def run_supervised() -> Started:
    """Start the session as a child and wait for it: the status this process exits
    with (``pid``: the child's); or, in a forked child, the channel's handoff (this
    process is the session); or why no child could start (the session then runs here,
    and its header says why)."""
    signals = {getattr(signal, name) for name in _PASSED_ON if hasattr(signal, name)}
    signals.add(signal.SIGCHLD)
    parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with contextlib.suppress(OSError, AttributeError):  # Linux: each message names its sender
        parent_end.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    child_inode = os.fstat(child_end.fileno()).st_ino
    sys.stdout.flush()
    sys.stderr.flush()
    # Blocked before the child starts (it starts with the mask as it was): a signal or
    # the child's exit between the start and the wait loop waits in the kernel.
    before = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    started = start(child_end, before)
    if started.handoff is not None:  # the forked session: the parent's end is not its own
        parent_end.close()
        return started
    child_end.close()
    if started.failed is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
        parent_end.close()
        return started
    child = started.pid
    # Made after the start: a forked session never had it in its memory before reading it.
    token = secrets.token_hex(16)
    parent_end.sendall(token.encode())  # read once, at the child's start
    parent_end.setblocking(False)
    heard = _Heard()
    stops: dict[int, int] = {}  # signal number -> its sender (0: the terminal)
    while True:
        _read(parent_end, child, token, heard)
        info = signal.sigtimedwait(signals, _POLL_SECONDS)
        if info is not None and info.si_signo != signal.SIGCHLD:
            _pass_on(info, child, stops)
        ended, status = os.waitpid(child, os.WNOHANG)
        if ended:
            break
    _read(parent_end, child, token, heard)
    left = _still_held(parent_end, child_inode)
    parent_end.close()
    while signal.sigtimedwait(signals, 0) is not None:
        pass  # the run is over: what came after the child's exit stops nothing
    signal.pthread_sigmask(signal.SIG_SETMASK, before)
    code = _judge(heard, status, stops)
    if left is not None:
        _say(left)
    return Started(pid=child, status=code)


def _pass_on(info: signal.struct_siginfo, child: int, stops: dict[int, int]) -> None:
    from_terminal = info.si_code == _SI_KERNEL or info.si_pid == 0
    stops[info.si_signo] = 0 if from_terminal else info.si_pid
    if not from_terminal:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, info.si_signo)


def _read(sock: socket.socket, child: int, token: str, heard: _Heard) -> None:
    """Every message waiting on the socket, the child's own only."""
    while True:
        try:
            data, ancillary, _, _ = sock.recvmsg(MAX_MESSAGE, socket.CMSG_SPACE(12))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return
        if not data:
            return  # every writer closed its end
        sender = _sender(ancillary)
        if sender is not None and sender != child:
            heard.strangers.add(sender)  # a process the model forked: not the session
            continue
        line = data.decode("utf-8", "replace")
        if line.startswith(ITEM):
            heard.running = line[len(ITEM) :]
        elif line.startswith(FATAL):
            heard.fatal = line[len(FATAL) :]
        elif line.startswith(END):
            given, _, status = line[len(END) :].partition(" ")
            if secrets.compare_digest(given.encode(), token.encode()) and _is_status(status):
                heard.announced = status
            else:
                heard.forged += 1


def _sender(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    for level, kind, data in ancillary:
        credentials = getattr(socket, "SCM_CREDENTIALS", None)
        if level == socket.SOL_SOCKET and kind == credentials and len(data) >= 12:
            return int(_CREDENTIALS.unpack(data[:12])[0])
    return None


def _is_status(text: str) -> bool:
    return text == UNKNOWN_STATUS or (text.isdigit() and int(text) < 256)


def _judge(heard: _Heard, status: int, stops: dict[int, int]) -> int:
    actual = _code(status)
    if heard.announced is not None:
        normal = os.WIFEXITED(status) and str(os.WEXITSTATUS(status)) == heard.announced
        if heard.announced == UNKNOWN_STATUS or normal:
            return actual
        announced = int(heard.announced)
        final = announced or actual or 1
        _say(after_end_message(announced, status, final))
        return final
    number = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    if number is not None and number in stops:
        _say(stopped_message(heard.running, number, stops[number]))
        _die_of(number)
        return actual
    _say(incomplete_run_message(heard.running, heard.fatal, status, forged=heard.forged))
    return 1 if heard.fatal or actual == 0 else actual  # ended on purpose: failed, as pytest says


def _code(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _die_of(number: int) -> None:
    """Die of the signal that stopped the run, as the process it was sent to would have
    (a shell running the run in a loop stops on SIGINT); SIGKILL is not ours to take."""
    if number in (signal.SIGKILL, getattr(signal, "SIGSTOP", None)):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {number})
    os.kill(os.getpid(), number)


def _still_held(sock: socket.socket, inode: int) -> str | None:
    """One line naming the processes that still hold the child's end of the socket (a
    child the model forked), where any do: the run does not wait for them."""
    try:
        if not sock.recv(1, socket.MSG_DONTWAIT):
            return None  # the end of file: nobody holds it
    except BlockingIOError:
        pass
    except OSError:
        return None
    holders = _holders(inode)
    named = ", ".join(f"{pid} ({_command(pid)})" for pid in holders) or "a process"
    return (
        f"exportcheck: still running after the session ended, not waited for: {named}, "
        "started from the session's process (it holds the session's channel)"
    )


def _holders(inode: int) -> list[int]:
    target = f"socket:[{inode}]"
    found = []
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            with contextlib.suppress(OSError):
                if any(
                    _link(f"/proc/{entry}/fd/{fd}") == target
                    for fd in os.listdir(f"/proc/{entry}/fd")
                ):
                    found.append(int(entry))
    return sorted(found)


def _link(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            raw = file.read(200)
    except OSError:
        return "?"
    text = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
    return "".join(c if c.isprintable() else "?" for c in text)[:80] or "?"


def _say(text: str) -> None:
    sys.stdout.flush()
    sys.stderr.write("\n" + text + "\n")
    sys.stderr.flush()


def _one_line(text: str) -> str:
    """The child's words on one line that starts with ours: GitHub's runner reads a
    workflow command (``::error``) from any line, and "\\r" starts one for it too."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _where(running: str | None) -> str:
    return f"while running {_one_line(running)}" if running else "before any item started"


def incomplete_run_message(
    running: str | None, fatal: str | None, status: int, *, forged: int = 0
) -> str:
    """What the parent says when the session ended without reaching its end."""
    if fatal:
        return f"exportcheck: the run ended {_where(running)}: {_one_line(fatal)}"
    how = describe_status(status)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
        how += ", what the kernel's out-of-memory killer sends"
    faked = (
        f"; {forged} end-of-run message(s) without the session's token were ignored"
        if forged
        else ""
    )
    return (
        f"exportcheck: the test process ended {_where(running)} ({how}) without reaching the "
        "end of the run: something in it ended or replaced the process where no Python code "
        "runs after (posix._exit, libc's exit() through ctypes, os.exec*, a crash)"
        f"{faked}. No summary, report or recording of this run is complete; the run fails. "
        "Under pytest-xdist (-n 1 or more) the item is reported [crashed] and the run goes on."
    )


def stopped_message(running: str | None, number: int, sender: int) -> str:
    """The session ended by a signal sent to the run from outside: no item's doing."""
    by = "by the terminal" if sender == 0 else f"by process {sender}"
    return (
        f"exportcheck: the run was stopped by {signal_name(number)} sent to pytest "
        f"(pid {os.getpid()}, {by}; passed on to the session) {_where(running)}. No summary, "
        "report or recording of this run is complete."
    )


def after_end_message(announced: int, status: int, final: int) -> str:
    return (
        f"exportcheck: the session reached its end with exit status {announced}, then its "
        f"process ended with {describe_status(status)}: something that ran after the end "
        "(an atexit handler, a thread, a crash at exit) changed how it ended; the run's exit "
        f"status is {final}."
    )
