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

import functools
import os
import signal
import site
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from types import FrameType
from typing import Any

from pytest_exportcheck.containment.failures import ExportCheckError

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


# The attribute an exception leaving a stage carries: the innermost stage it left.
_LEFT = "__exportcheck_stage__"


@contextmanager
def stage(name: str) -> Iterator[None]:
    token = _STAGE.set(name)
    try:
        yield
    except BaseException as exc:
        # Outer stages see the exception after the inner one tagged it: keep the first.
        if not hasattr(exc, _LEFT):
            with suppress(AttributeError):  # an exception type with __slots__: untagged
                setattr(exc, _LEFT, name)
        raise
    finally:
        _STAGE.reset(token)


def stage_left(exc: BaseException) -> str | None:
    """The innermost stage ``exc`` was raised in, if it left one."""
    return getattr(exc, _LEFT, None)


def current_stage() -> str:
    return _STAGE.get()


def can_time_out() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


# The longest time limit a case or the option may set (a day): beyond it, a typo.
MAX_TIMEOUT_SECONDS = 86400
# A limit that user code swallowed (``except BaseException: pass``, a bare ``except:``)
# fires again this often until the item ends.
REFIRE_SECONDS = 1.0
# A firing landing in a module's import (any firing) or inside torch's code (a refire) is
# deferred to the next tick, this many times at most (then it raises wherever it lands: a
# model looping inside torch, or an import that never ends, must still stop).
MAX_DEFERRED_FIRINGS = 30
# A limit swallowed this many times (the first firing and its refires, each raised and
# caught) is one the model will never let take: the process running the item ends.
MAX_CAUGHT_FIRINGS = 10
# So does one whose item is still running this long past the limit however it fired (a
# loop inside native code never returns to the interpreter to raise; deferred firings
# take at most MAX_DEFERRED_FIRINGS ticks).
GIVE_UP_SECONDS = 60.0
# The backstop the watchdog thread sends when the model replaced the SIGALRM handler
# or cancelled the timer (a library that uses alarms itself).
BACKSTOP_SIGNAL = getattr(signal, "SIGVTALRM", None)


# os._exit as it was when this module loaded: while an item runs, os._exit refuses.
_END_PROCESS = os._exit
# The exit status of a process ended because its item's time limit could not take.
GAVE_UP_STATUS = 70


def end_process(message: str, *, the_sessions: bool = True) -> None:
    """End this process now, saying why: the item's limit can no longer take.

    In one process, the supervising parent reports ``message`` and fails the run
    (``supervisor.py``); under xdist the controller reports the item ``[crashed]``
    and a new worker takes the rest. Python's own exit would wait for the main
    thread, which is the one that will not stop.
    """
    from pytest_exportcheck.containment import supervisor
    from pytest_exportcheck.containment.crashes import note_ending

    text = f"exportcheck: {message}; the process running it is ended"
    if the_sessions:  # not a stray fork's: the session's process goes on
        supervisor.last_words(f"{message}; the process running it is ended")
        note_ending(message)
    with suppress(OSError):
        os.write(2, (f"\n{text}\n").encode("utf-8", "replace"))
    _END_PROCESS(GAVE_UP_STATUS)


@contextmanager
def time_limit(
    seconds: float,
    describe: Callable[[str], str],
    give_up: Callable[[str], None] = end_process,
) -> Iterator[None]:
    """Raise ``StageTimeout(describe(stage))`` if the block runs longer than ``seconds``.

    A limit must hold whatever the model does about it:
    - swallowed: the timer re-fires every ``REFIRE_SECONDS`` until the block ends;
    - the SIGALRM handler replaced or the timer cancelled: a watchdog thread sends
      ``BACKSTOP_SIGNAL`` to the main thread, whose handler is ours;
    - however the block ended (a result, another error), if it ran past the limit the
      item fails ``[timeout]``, saying what the model did to the limit;
    - swallowed ``MAX_CAUGHT_FIRINGS`` times, or still running ``GIVE_UP_SECONDS`` past
      the limit: ``give_up(message)``, which ends the process (``end_process``).

    Where raising would leave state behind for later items (``_unsafe_to_raise``), a
    firing waits for the next tick, ``MAX_DEFERRED_FIRINGS`` times at most.
    """
    if seconds <= 0 or not can_time_out():
        yield
        return

    fired_in: list[str] = []  # the stage each firing interrupted; "" for a deferred one
    first_stage: list[str] = []  # the stage the limit ran out in

    closing: list[bool] = []  # the block ended: a firing still on its way does nothing

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        if closing:
            return
        if not first_stage:
            first_stage.append(current_stage())
        refire = _caught(fired_in) > 0  # an earlier firing raised, and was swallowed
        if fired_in.count("") < MAX_DEFERRED_FIRINGS and _unsafe_to_raise(frame, refire):
            fired_in.append("")
            return
        fired_in.append(current_stage())
        if _caught(fired_in) > MAX_CAUGHT_FIRINGS:
            give_up(_gave_up(describe(first_stage[0]), _caught(fired_in) - 1, started))
        raise StageTimeout(describe(first_stage[0]))

    started = time.monotonic()
    # The alarm a caller set (pytest-timeout's, an outer limit's): put back, less the
    # time this block took, however the block ends.
    outer_timer = signal.getitimer(signal.ITIMER_REAL)
    previous = signal.signal(signal.SIGALRM, on_alarm)
    previous_backstop = _install(BACKSTOP_SIGNAL, on_alarm)
    watchdog: _Watchdog | None = None
    ended_by: StageTimeout | None = None
    failure: BaseException | None = None
    try:
        # Armed inside the try: a limit of a microsecond fires before the next line,
        # and the restore below must still run.
        watchdog = _Watchdog(
            seconds,
            on_alarm,
            lambda: give_up(
                _gave_up(
                    describe(first_stage[0] if first_stage else current_stage()),
                    _caught(fired_in),
                    started,
                )
            ),
        )
        signal.setitimer(signal.ITIMER_REAL, seconds, REFIRE_SECONDS)
        yield
    except StageTimeout as exc:
        ended_by = exc
        raise
    except BaseException as exc:
        failure = exc
        raise
    finally:
        while not closing:
            try:
                closing.append(True)
            except StageTimeout:  # a firing that landed just before: once more
                continue
        tampered = watchdog.stop() if watchdog is not None else None
        _restore_alarms(previous, previous_backstop, outer_timer, started)
        elapsed = time.monotonic() - started
        if ended_by is not None and tampered is not None:
            # The backstop ended it: say what the model did to the limit.
            raise StageTimeout(f"{ended_by.message}; {tampered}") from None
        if ended_by is not None and _caught(fired_in) > 1:
            caught = f"the model caught the time limit's exception {_caught(fired_in) - 1} time(s)"
            raise StageTimeout(f"{ended_by.message}; {caught} before it took") from None
        if ended_by is None and elapsed > seconds:
            # Past its limit, it ended some other way: a result, or an error of its own
            # after swallowing ours. Either way the item fails as a timeout.
            caught = _caught(fired_in)
            why = (
                tampered
                or f"the model caught the time limit's exception {caught} time(s) and went on"
            )
            stage_name = first_stage[0] if first_stage else current_stage()
            message = f"{describe(stage_name)}; {why}, for {elapsed:.1f} s in all"
            raise StageTimeout(message) from failure


_ALARMS = {signal.SIGALRM} | ({BACKSTOP_SIGNAL} if BACKSTOP_SIGNAL is not None else set())


def _restore_alarms(
    handler: Any, backstop: Any, outer_timer: tuple[float, float], started: float
) -> None:
    """Cancel the block's timer, drop a firing of it still pending, and put back the
    handlers and the caller's timer, with the alarms blocked meanwhile: a firing of ours
    must not reach the caller's handler (the default one ends the process)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, _ALARMS)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0)
        while signal.sigtimedwait(_ALARMS, 0) is not None:
            pass  # ours, delivered after the block ended: nobody to interrupt now
        signal.signal(signal.SIGALRM, handler)
        _install(BACKSTOP_SIGNAL, backstop)
        left, interval = outer_timer
        if left > 0:
            # Due already: fire at once, as it would have during the block.
            signal.setitimer(
                signal.ITIMER_REAL, max(left - (time.monotonic() - started), 1e-6), interval
            )
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _ALARMS)


# How a timeout message ends while the run can go on in this process (item_run.py).
STOPPED = "stopped, the rest of the run goes on"


def _gave_up(described: str, caught: int, started: float) -> str:
    described = described.removesuffix("; " + STOPPED)
    elapsed = time.monotonic() - started
    how = (
        f"the model caught the time limit's exception {caught} time(s) and went on"
        if caught
        else "it never returned to the interpreter to be stopped (native code, or a "
        "handler of its own)"
    )
    return f"[timeout] {described}; {how}, {elapsed:.0f} s in all"


def _caught(fired_in: list[str]) -> int:
    """Firings that raised (a deferred one, recorded as "", raised nothing)."""
    return sum(1 for stage_name in fired_in if stage_name)


def _unsafe_to_raise(frame: FrameType | None, refire: bool) -> bool:
    """Whether raising in ``frame`` would leave state behind for every later item.

    - A library's module being imported: an exception in its body removes it from
      ``sys.modules`` but keeps what it registered elsewhere, so importing it again fails
      for the rest of the process (networkx, imported by ``torch.export``'s first call,
      then raises "Algorithm already exists in dispatch namespace" in every later
      export). A case's own model file is no library: one that hangs in its import is
      stopped there, as a hang anywhere else in the model is.
    - torch's own code, for a refire: the first firing was swallowed and the item fails
      ``[timeout]`` anyway; raised inside torch it can leave torch half-updated. (The first
      firing raises there: the capture stage is torch's code, and stopping it is the limit's
      job.)
    """
    return _importing_a_library(frame) or (refire and _inside_torch(frame))


# Import machinery's modules, frozen or not (``-X frozen_modules=off``): a module body
# they called is a module being imported.
_IMPORT_MACHINERY = frozenset({"importlib._bootstrap", "importlib._bootstrap_external"})


def _importing_a_library(frame: FrameType | None) -> bool:
    roots = _library_roots()
    while frame is not None:
        caller = frame.f_back
        if (
            frame.f_code.co_name == "<module>"
            and caller is not None
            and caller.f_globals.get("__name__") in _IMPORT_MACHINERY
            and frame.f_code.co_filename.startswith(roots)
        ):
            return True
        frame = caller
    return False


@functools.cache
def _library_roots() -> tuple[str, ...]:
    """Where installed code lives: the standard library, site-packages, torch and this
    plugin (wherever they are installed from)."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    roots.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    roots.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this plugin's package
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        roots.add(os.path.dirname(torch.__file__))
    # As written and resolved: a frame's file name keeps the symlinks of its sys.path entry.
    both = roots | {os.path.realpath(root) for root in roots}
    return tuple(os.path.join(root, "") for root in both)


def _inside_torch(frame: FrameType | None) -> bool:
    torch = sys.modules.get("torch")
    root = os.path.dirname(getattr(torch, "__file__", None) or "") if torch else ""
    return bool(root) and frame is not None and frame.f_code.co_filename.startswith(root + os.sep)


def _install(signum: int | None, handler: Any) -> Any:
    return None if signum is None or handler is None else signal.signal(signum, handler)


class _Watchdog:
    """Checks, from a thread of its own, that the block's limit can still fire.

    Past the limit (and every ``REFIRE_SECONDS`` after), if the SIGALRM handler is no
    longer ours or the timer was cancelled, it signals the main thread with
    ``BACKSTOP_SIGNAL``. :meth:`stop` says what the model did, if anything.
    """

    def __init__(self, seconds: float, handler: Any, give_up: Callable[[], None]) -> None:
        self.handler = handler
        self.give_up = give_up
        self.tampered: str | None = None
        self._stopped = threading.Event()
        self._main = threading.main_thread().ident
        self._thread = threading.Thread(
            target=self._watch, args=(seconds,), name="exportcheck-time-limit", daemon=True
        )
        self._thread.start()

    def _watch(self, seconds: float) -> None:
        if self._stopped.wait(seconds + REFIRE_SECONDS / 2):
            return
        deadline = time.monotonic() + GIVE_UP_SECONDS
        while True:
            if time.monotonic() > deadline:
                self.give_up()
            tampered = self._tampering()
            if tampered is not None:
                self.tampered = tampered
                if BACKSTOP_SIGNAL is not None and self._main is not None:
                    signal.pthread_kill(self._main, BACKSTOP_SIGNAL)
            if self._stopped.wait(REFIRE_SECONDS):
                return

    def _tampering(self) -> str | None:
        if signal.getsignal(signal.SIGALRM) is not self.handler:
            return (
                "the model replaced the SIGALRM handler (the limit fired through a backstop signal)"
            )
        if signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0):
            return (
                "the model cancelled the SIGALRM timer (the limit fired through a backstop signal)"
            )
        return None

    def stop(self) -> str | None:
        self._stopped.set()
        self._thread.join()
        return self.tampered or self._tampering()
