"""Which stage an item is in, and a time limit per item that names the stage it ran out in.

A model that loops forever, or an export that never returns, must not stop
the run: each item gets ``timeout`` seconds (``--exportcheck-timeout``, the
``exportcheck_timeout`` ini option, or the case's ``timeout:``). When they run
out, SIGALRM raises a ``StageTimeout`` in the middle of whatever was running —
building, eager, the capture, or a check — and the item fails with
``[timeout] ... still in the capture stage after 5 s``. A capture or subject
that timed out is remembered like any failed stage, so the items after it fail
fast instead of hanging again.

Where SIGALRM is not available (Windows) or the item does not run on the main
thread, no limit applies. A hang inside native code that never returns to the
interpreter cannot be interrupted this way.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import FrameType

from pytest_exportcheck.failures import ExportCheckError

_STAGE: ContextVar[str] = ContextVar("exportcheck_stage", default="setup")


class StageTimeout(BaseException):
    """The item's time ran out; the message names the stage it was in.

    A BaseException, as KeyboardInterrupt is: the ``except Exception`` that
    models, torch and the checks themselves use to report errors must not turn
    a timeout into an ordinary finding (or swallow it and keep hanging).
    """

    stage = "timeout"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    headline = ExportCheckError.headline
    render = ExportCheckError.render
    match_text = ExportCheckError.match_text
    as_dependency = ExportCheckError.as_dependency


@contextmanager
def stage(name: str) -> Iterator[None]:
    token = _STAGE.set(name)
    try:
        yield
    finally:
        _STAGE.reset(token)


def current_stage() -> str:
    return _STAGE.get()


def can_time_out() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def time_limit(seconds: float, describe: Callable[[str], str]) -> Iterator[None]:
    """Raise ``StageTimeout(describe(stage))`` if the block runs longer than ``seconds``."""
    if seconds <= 0 or not can_time_out():
        yield
        return

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise StageTimeout(describe(current_stage()))

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
