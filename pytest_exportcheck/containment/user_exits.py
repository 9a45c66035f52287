"""A model that leaves by the back door: ``sys.exit``, ``os._exit``, a BaseException of its own.

Every place a model's error becomes a case, eager or capture error catches
``Exception``. Three things get past that:

- ``SystemExit`` (``sys.exit(3)``), ``GeneratorExit``, or any ``BaseException``
  subclass a model defines: pytest would print a traceback of about a thousand
  lines through itself and this plugin, and every item of the case would run
  the model again;
- ``os._exit(0)``, which ends the process on the spot: without ``-n`` the run
  stops mid-line with exit status 0, a false pass for any CI job;
- an exception whose ``__str__`` raises, which breaks every message built from it.

So while an item runs, ``os._exit`` raises :class:`ProcessExitCalled` instead;
``stages.stage`` tags each such exception with the innermost stage it left; and
where failures are memoized (the session's and the Python API's caches, and
each item's own run) :func:`as_stage_error` turns it into that stage's error:
reported once in full, the case's other items say "same cause".
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from pytest_exportcheck.containment.failures import (
    CaptureError,
    CaseError,
    EagerError,
    ExportCheckError,
    describe_exception,
)
from pytest_exportcheck.containment.stages import StageTimeout, stage_left

# Where each stage's error comes from, in the words of its message.
_LEFT_FROM = {
    "case": ("building the model", CaseError),
    "eager": ("the eager forward", EagerError),
    "capture": ("the capture", CaptureError),
}


class ProcessExitCalled(BaseException):
    """``os._exit`` called while an item ran: the process must not end there."""

    def __init__(self, status: int) -> None:
        super().__init__(
            f"os._exit({status}) was called: it would end the test process on the spot, "
            "and a run that stops there reports nothing (and may exit 0); refused"
        )


class UserExit(ExportCheckError):
    """A check's run of the model left by a BaseException (stage: the check's name)."""

    def __init__(self, message: str, stage: str) -> None:
        super().__init__(message)
        self.stage = stage


def is_user_exit(exc: BaseException) -> bool:
    """A BaseException that user code raised, not one of the run's own controls
    (Ctrl-C, the item's time limit, pytest's skip/fail/exit outcomes)."""
    if isinstance(exc, (Exception, KeyboardInterrupt, StageTimeout)):
        return False
    return not _is_pytest_outcome(exc)


def _is_pytest_outcome(exc: BaseException) -> bool:
    from _pytest.outcomes import OutcomeException

    return isinstance(exc, OutcomeException)


def as_stage_error(exc: BaseException, location: str) -> ExportCheckError:
    """``exc`` as the error of the stage it left (``[eager] ... raised SystemExit: 3``)."""
    left = stage_left(exc) or "case"
    what, error_class = _LEFT_FROM.get(left, (f"the {left} check's run of the model", None))
    text = describe_exception(exc, context=f"{location}: {what} raised")
    if error_class is None:
        return UserExit(text, left)
    return error_class(text)


def user_exit_error(exc: BaseException, location: str) -> ExportCheckError:
    """:func:`as_stage_error` for a user exit; any other BaseException goes on (re-raised)."""
    if not is_user_exit(exc):
        raise exc
    return as_stage_error(exc, location)


@contextmanager
def no_process_exit() -> Iterator[None]:
    """``os._exit`` raises :class:`ProcessExitCalled` for the block instead of ending the
    process (xdist's own use of it, outside items, is untouched)."""
    original = os._exit

    def refuse(status: int) -> NoReturn:
        raise ProcessExitCalled(status)

    os._exit = refuse  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = original
