"""How a process ended, in words: ``exit status 3``, ``killed by SIGSEGV``."""

from __future__ import annotations

import os
import signal


def signal_name(number: int) -> str:
    """``SIGKILL`` for 9; ``signal 64`` for a number this platform has no name for."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def describe_status(status: int) -> str:
    """A wait status (``os.waitpid``) as a reader names it."""
    if os.WIFSIGNALED(status):
        return f"killed by {signal_name(os.WTERMSIG(status))}"
    return f"exit status {os.WEXITSTATUS(status)}"


def describe_returncode(returncode: int | None) -> str:
    """A ``subprocess`` return code (negative: the signal that ended it) as a reader names
    it; None: not known."""
    if returncode is None:
        return "exit status unknown"
    if returncode < 0:
        return f"killed by {signal_name(-returncode)}"
    return f"exit status {returncode}"
