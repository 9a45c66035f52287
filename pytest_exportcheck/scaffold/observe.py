"""The torch side of the scaffold: run a validated case once, through the plugin's own code.

Nothing here is a second implementation of a check's view: the model and
inputs come from :class:`Subject` (seeded, built as collection builds them),
each capture from the registry the plugin runs, and each observation is read
the way the check that compares it reads it — placeholders from the
normalized record (signature), module FQNs from ``unflatten`` in order
(hierarchy), buffer mutations from the path's records (mutation).
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import traceback
import warnings
from collections.abc import Iterator

from pytest_exportcheck.capture import capture, unavailable
from pytest_exportcheck.capture.export import ProgramRecord
from pytest_exportcheck.capture.record import CaptureRecord, DecompositionError
from pytest_exportcheck.containment.failures import (
    CaseError,
    EagerError,
    ExportCheckError,
    describe_exception,
)
from pytest_exportcheck.containment.stages import StageTimeout, stage, time_limit
from pytest_exportcheck.model.subject import Subject
from pytest_exportcheck.scaffold.errors import ScaffoldError
from pytest_exportcheck.scaffold.render import CaptureObservation
from pytest_exportcheck.spec.case import Case

EagerFacts = tuple[list[str], list[str], dict[str, tuple[str, ...]]]


def observe(
    case: Case, show_tracebacks: bool, timeout: float = 600.0
) -> tuple[list[CaptureObservation], EagerFacts]:
    """Each capture's observation, and eager's modules, mutated buffers and tensor aliases.

    A broken case or eager forward raises :class:`ScaffoldError` (there is
    nothing true to write down); a capture that raises, or runs past
    ``timeout``, is an observation too.
    """
    with contextlib.redirect_stdout(sys.stderr):  # stdout is the YAML's; a model may print
        return _observe(case, show_tracebacks, timeout)


def _observe(
    case: Case, show_tracebacks: bool, timeout: float
) -> tuple[list[CaptureObservation], EagerFacts]:
    def limit() -> contextlib.AbstractContextManager[None]:
        return time_limit(timeout, lambda where: f"still in the {where} stage after {timeout:g} s")

    try:
        with stage("case"), limit():
            subject = Subject(case)
    except CaseError as exc:
        raise ScaffoldError("case", _unlocated(exc.message, case)) from exc.__cause__
    except StageTimeout as exc:
        raise ScaffoldError("timeout", f"{exc.message} (--timeout)") from None
    try:
        with stage("eager"), limit():
            eager = subject.eager
    except EagerError as exc:
        raise ScaffoldError("eager", _unlocated(exc.message, case)) from exc.__cause__
    except StageTimeout as exc:
        raise ScaffoldError("timeout", f"{exc.message} (--timeout)") from None
    model = subject.pristine_model
    buffers = {name for name, _ in model.named_buffers(remove_duplicate=False)}
    facts: EagerFacts = (
        [name for name, _ in model.named_modules(remove_duplicate=False) if name],
        sorted(eager.mutated_state & buffers),
        dict(subject.tensor_groups),
    )
    observations = []
    for name in case.captures:
        try:
            with stage("capture"), limit():
                observations.append(_observe_capture(subject, name, show_tracebacks))
        except StageTimeout as exc:  # a hang is the capture's failure, as in the plugin
            failure = f"[timeout] {exc.message} (--timeout)"
            observations.append(CaptureObservation(name, failure=failure))
    return observations, facts


def _observe_capture(subject: Subject, name: str, show_tracebacks: bool) -> CaptureObservation:
    reason = unavailable(name)
    if reason is not None:
        return CaptureObservation(name, unavailable=reason, notes=(f"{name}: {reason}",))
    try:
        with quiet_torch(not show_tracebacks):
            record = capture(name, subject)
    except Exception as exc:
        # What torch printed and logged meanwhile (capture() keeps it with the error):
        # with --traceback it follows the traceback, else the warning counts its lines.
        printed = getattr(exc, "printed", "")
        if show_tracebacks:
            traceback.print_exception(exc, file=sys.stderr)
            if printed:
                print(f"torch printed or logged while capturing {name}:", file=sys.stderr)
                print(printed, file=sys.stderr)
        if isinstance(exc, ExportCheckError):
            failure = _unlocated(exc.render(), subject.case)
        else:  # not foreseen by the adapter: still the capture's failure, not ours
            failure = describe_exception(exc, context=f"[capture] {name} raised")
        refused = getattr(exc, "refused", ())
        lines = 0 if show_tracebacks else len(printed.splitlines())  # shown: not counted
        return CaptureObservation(name, failure=failure, refused=refused, printed_lines=lines)
    notes: list[str] = []
    with quiet_torch(not show_tracebacks):  # unflatten and run_decompositions talk too
        modules = _modules(record, notes)
        mutated_buffers = _mutated_buffers(record, notes)
    return CaptureObservation(
        name,
        placeholders=[
            {"name": p.name, "kind": p.kind, **({"target": p.target} if p.target else {})}
            for p in record.placeholders
        ],
        modules=modules,
        mutated_buffers=mutated_buffers,
        notes=tuple(notes),
    )


@contextlib.contextmanager
def quiet_torch(quiet: bool = True) -> Iterator[None]:
    """Keep torch's chatter off the terminal unless the user asked for detail.

    A failing export prints graph dumps and logs warnings; printed, they would
    bury the one paragraph that says what failed.
    """
    with contextlib.ExitStack() as stack:
        if quiet:
            stack.enter_context(warnings.catch_warnings())
            warnings.simplefilter("ignore")
            stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
            stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
            previous = logging.root.manager.disable
            logging.disable(logging.WARNING)
            stack.callback(logging.disable, previous)
        yield


def _modules(record: CaptureRecord, notes: list[str]) -> list[str] | None:
    """``unflatten(ep)``'s FQNs in order: exactly the list the hierarchy check compares."""
    if not isinstance(record, ProgramRecord):
        return None  # hierarchy is not applicable to flat graphs
    try:
        unflat = record.fresh_unflattened()
    except Exception as exc:
        notes.append(f"{record.capture}: unflatten raised {_headline(exc)}; no modules observed")
        return None
    return [name for name, _ in unflat.named_modules(remove_duplicate=False) if name]


def _mutated_buffers(record: CaptureRecord, notes: list[str]) -> list[str] | None:
    """The buffers the path's mutation records name; ``None`` if it keeps none."""
    try:
        recorded = record.mutations()
    except DecompositionError as exc:
        notes.append(f"{record.capture}: mutation records unreadable: {_headline(exc)}")
        return None
    return None if recorded is None else sorted(recorded.buffers)


def _headline(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else '(no message)'}"


def _unlocated(message: str, case: Case) -> str:
    """Drop the ``file:line:`` prefix: it names the scaffold's temporary case, not a real file."""
    for prefix in (f"{case.location}: ", f"{case.location} "):
        message = message.replace(prefix, "", 1)
    return message
