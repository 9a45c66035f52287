"""What can go wrong with a case, by stage, and how each is told to the user.

Stages, in the order a case meets them:

* ``case``    — the YAML case, its model target or its inputs cannot be built;
* ``eager``   — the eager model's own forward raises (the case is wrong, not export);
* ``capture`` — torch.export (or another capture path) raises;
* ``<check>`` — a check (signature, hierarchy, mutation, parity, moved) found a difference;
* ``internal`` — an exception the plugin did not foresee (reported with its traceback).
"""

from __future__ import annotations

import linecache
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from pytest_exportcheck.containment.stages import StageTimeout

_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])  # the package, above containment/
_MESSAGE_LINES = 12


class ExportCheckWarning(UserWarning):
    """Something a check could not verify; shown in pytest's warnings summary."""


class ExportCheckError(Exception):
    """Base of every failure the plugin reports itself (instead of a raw traceback)."""

    stage = "?"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def headline(self) -> str:
        """One line for summaries (short test summary, junit ``message``)."""
        return f"[{self.stage}] {self.message.splitlines()[0]}"

    def render(self) -> str:
        return f"[{self.stage}] {self.message}"

    def match_text(self) -> str:
        """What an xfail's ``match:`` searches: the whole failure, also on the items
        that only point at it (their message is its headline)."""
        return getattr(self, "_full_text", None) or self.render()

    def as_dependency(self, first_reported_by: str) -> ExportCheckError:
        """The same failure, for the other items it stops: headline and a pointer.

        Same class, so an ``xfail`` scoped to capture failures still applies.
        """
        pointer = type(self)(
            f"{self.message.splitlines()[0]}\n(full report on {first_reported_by})"
        )
        pointer.__cause__ = self.__cause__
        pointer._full_text = self.match_text()
        return pointer


class CaseError(ExportCheckError):
    stage = "case"


class EagerError(ExportCheckError):
    stage = "eager"


class CaptureError(ExportCheckError):
    """A capture call raised; ``kind`` says what export refused (see ``capture_failure_kind``)."""

    stage = "capture"

    def __init__(self, message: str, kind: str = "other", refused: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.kind = kind
        # what torch printed to stderr, and logged, while capturing (-vv shows it)
        self.printed = ""
        # one line per dynamic dim torch refused: its reason and its suggested fix
        self.refused = refused

    @property
    def headline(self) -> str:
        return f"[{self.stage}: {self.kind}] {self.message.splitlines()[0]}"

    def render(self) -> str:
        return f"[{self.stage}: {self.kind}] {self.message}"

    def as_dependency(self, first_reported_by: str) -> ExportCheckError:
        pointer = CaptureError(
            f"{self.message.splitlines()[0]}\n(full report on {first_reported_by})", self.kind
        )
        pointer.__cause__ = self.__cause__
        pointer._full_text = self.match_text()
        return pointer


# What export refused, by the exception classes (and wording) torch raises for
# it; matched by name across the chain of causes, so no torch import and no
# version table: an unknown class is "other".
CAPTURE_FAILURE_KINDS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "data-dependent guard",
        (
            "GuardOnDataDependentSymNode",
            "DataDependentOutputException",
            "PendingUnbackedSymbolNotFound",
        ),
        ("data-dependent", "dynamic control flow"),
    ),
    (
        "constraint violation",
        ("ConstraintViolationError",),
        ("constraint violation", "constraints violated", "specialized it to be a constant"),
    ),
    (
        "pytree / output type",
        ("TreeSpecError",),
        ("pytree", "which is not a known type", "not a supported output", "unsupported output"),
    ),
    ("unsupported construct", ("Unsupported", "UncapturedHigherOrderOpError"), ()),
)


def capture_error(exc: BaseException, context: str) -> CaptureError:
    """A capture call's exception as a CaptureError: headline, user frame and kind."""
    return CaptureError(describe_exception(exc, context=context), capture_failure_kind(exc))


def capture_failure_kind(exc: BaseException) -> str:
    """``data-dependent guard``, ``constraint violation``, ``pytree / output type``,
    ``unsupported construct`` or ``other``: what a user must change differs for each."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    names = {cls.__name__ for error in chain for cls in type(error).__mro__}
    text = " ".join(exception_text(error).lower() for error in chain)
    for kind, classes, words in CAPTURE_FAILURE_KINDS:
        if names & set(classes) or any(word in text for word in words):
            return kind
    return "other"


class InternalError(ExportCheckError):
    """An exception the plugin did not expect: a bug of ours, or an unforeseen model."""

    stage = "internal"


class Note(str):
    """What a check could not verify, or context for its findings (where outputs diverge):
    shown with the findings, not counted as one. On an item that passes, a note is a gap
    (``gaps.py``): reported and counted as such. Write it ``what: why``."""


class Info(Note):
    """A note that is context only, never a gap: it says something the check did verify
    (a program that accepts a size outside the range and agrees with eager there)."""


class CheckFailure(ExportCheckError):
    """A check's findings; ``stage`` is the check's name."""

    def __init__(self, check: str, findings: list[str]) -> None:
        self.stage = check
        notes = [f for f in findings if isinstance(f, Note)]
        self.findings = [f for f in findings if not isinstance(f, Note)]
        count = f"{len(self.findings)} finding{'s' if len(self.findings) != 1 else ''}"
        body = "\n".join(f"- {_indent_continuation(f)}" for f in self.findings)
        body += "".join(f"\n  {_indent_continuation(n)}" for n in notes)
        super().__init__(f"{check} check failed ({count}):\n{body}")

    @property
    def headline(self) -> str:
        first = self.findings[0].splitlines()[0]
        more = f" (+{len(self.findings) - 1} more)" if len(self.findings) > 1 else ""
        return f"[{self.stage}] {first}{more}"


class UnexpectedFailure(ExportCheckError):
    """A failure under an xfail that expects another one (``stage:``/``match:``).

    Not a CaptureError or CheckFailure, so pytest's xfail (``raises=``) does not absorb it.
    """

    def __init__(self, error: ExportCheckError, expected: str) -> None:
        self.stage = error.stage
        self.original = error
        super().__init__(f"{expected}: {error.render()}")

    @property
    def headline(self) -> str:
        return f"[{self.stage}] {self.message.split(': ', 1)[0]}: {self.original.headline}"

    def render(self) -> str:
        return self.message


def _indent_continuation(text: str) -> str:
    return text.replace("\n", "\n  ")


@dataclass(frozen=True)
class UserFrame:
    filename: str
    lineno: int
    name: str

    def render(self) -> str:
        source = linecache.getline(self.filename, self.lineno).strip()
        where = f'File "{_short(self.filename)}", line {self.lineno}, in {self.name}'
        return f"{where}\n    {source}" if source else where


def describe_exception(exc: BaseException, *, context: str) -> str:
    """First lines of ``exc`` plus the innermost frame of user code that raised it.

    Export errors are often hundreds of lines of Dynamo internals; what a user
    acts on is the exception's headline and the line of *their* model.
    """
    lines = [line for line in exception_text(exc).strip().splitlines() if line.strip()]
    shown = lines[:_MESSAGE_LINES]
    if len(lines) > _MESSAGE_LINES:
        shown.append(f"... ({len(lines) - _MESSAGE_LINES} more lines; run with -vv for all)")
    text = f"{context}: {type(exc).__name__}: " + ("\n".join(shown) or "(no message)")
    frame = innermost_user_frame(exc.__traceback__)
    if frame is not None:
        text += f"\nraised from user code:\n  {frame.render()}"
    return text


def exception_text(exc: BaseException) -> str:
    """``str(exc)``, or ``<unprintable X object>`` where the exception's ``__str__`` raises
    (as the traceback module shows it): a model's broken exception must not break the
    message that reports it."""
    try:
        return str(exc)
    except Exception:  # __str__ is user code: anything may come out of it
        return f"<unprintable {type(exc).__name__} object>"


def with_user_frame(text: str, exc: BaseException) -> str:
    """``text`` plus the user-code frame at the root of ``exc``'s chain of causes."""
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    frame = innermost_user_frame(root.__traceback__)
    return f"{text}\nraised from user code:\n  {frame.render()}" if frame is not None else text


def innermost_user_frame(tb: TracebackType | None) -> UserFrame | None:
    """The deepest traceback frame outside torch, this plugin, pytest and the stdlib."""
    found = None
    for frame, lineno in traceback.walk_tb(tb):
        filename = frame.f_code.co_filename
        if is_user_file(filename):
            found = UserFrame(filename, lineno, frame.f_code.co_name)
    return found


def is_user_file(filename: str) -> bool:
    """Whether ``filename`` is the user's code: not torch, pytest, this plugin nor the stdlib."""
    if filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    if path.startswith(_STDLIB) and not path.startswith(_STDLIB_SITE):
        return False
    return not any(path.startswith(root) for root in _library_roots())


_STDLIB = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
_STDLIB_SITE = os.path.join(_STDLIB, "site-packages")


def _library_roots() -> list[str]:
    """Packages whose frames are never "user code": torch, pytest and this plugin."""
    roots = [_PACKAGE_DIR + os.sep]
    for name in ("torch", "_pytest", "pluggy", "sympy"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            roots.append(os.path.dirname(os.path.abspath(module.__file__)) + os.sep)
    return roots


def _short(filename: str) -> str:
    try:
        return os.path.relpath(filename)
    except ValueError:
        return filename


def failure_text(error: Any, where: str) -> str:
    """Headline, where, then the rest of the message (its first line is the headline).

    The headline comes first because under xdist the report reaches the
    controller as text, and summaries read its first line.
    """
    from pytest_exportcheck.containment.memory_limit import note_for

    body = error.render()
    first, _, rest = body.partition("\n")
    if first == error.headline:
        body = rest
    return "\n".join(part for part in (error.headline, where, body, note_for(error)) if part)


def full_traceback(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)).rstrip()


def printed_while_capturing(error: Any, *, show: bool) -> str:
    """What torch printed to stderr, and logged, while a failed capture ran: its text when
    ``show`` (-vv, --exportcheck-tb long), else its line count; empty when there was none."""
    printed = getattr(error, "printed", "")
    if not printed:
        return ""
    lines = len(printed.splitlines())
    if show:
        return f"\n\ntorch printed or logged while capturing ({lines} lines):\n{printed}"
    return f"\n(torch printed or logged {lines} lines while capturing; -vv shows them)"


class Failed:
    """A memoized failure of a stage, and the item that reported it in full."""

    def __init__(self, error: ExportCheckError | StageTimeout, reported_by: str) -> None:
        self.error = error
        self.reported_by = reported_by

    def raise_for(self, item: str) -> NoReturn:
        """The full error for the item that met it first; a one-line pointer for the others."""
        if self.reported_by == item:
            raise self.error
        raise self.error.as_dependency(self.reported_by)
