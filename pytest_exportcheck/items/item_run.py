"""How one item runs, with or without pytest: why it is skipped, and the check it makes.

Two callers run items: the YAML items (``collect.py``, with the session's
caches shared across a whole run) and the Python API (``api/given.py``, with
caches for one call). Both ask the same questions in the same order through
this module, so a model checked either way is skipped, gated and reported in
the same words. What differs is only where subjects and captures come from: a
:class:`Source`, which builds them once and memoizes failures as
:class:`Failed`, so the item that met a failure reports it in full and the
others point at it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from pytest_exportcheck.containment.stages import STOPPED, stage

if TYPE_CHECKING:
    from pytest_exportcheck.capture import CaptureRecord
    from pytest_exportcheck.checks.consistency import CaptureSummary
    from pytest_exportcheck.containment.failures import ExportCheckError
    from pytest_exportcheck.items.capture_summaries import LeftOut
    from pytest_exportcheck.model.subject import Subject
    from pytest_exportcheck.spec import Case
    from pytest_exportcheck.spec.case import XfailSpec


class Source(Protocol):
    """Where an item's subject and captures come from (built once, failures memoized)."""

    def subject(self, device: str) -> Subject: ...

    def capture(self, device: str, name: str) -> CaptureRecord: ...


class Caches(Protocol):
    """Subjects and captures cached for many items; a failure is memoized under the
    item that met it (a node id, or an item name of the Python API)."""

    def subject_for(self, item: Any, device: str) -> Subject: ...

    def capture_for(self, item: Any, device: str, name: str) -> CaptureRecord: ...


class SourceFor:
    """The :class:`Source` of one item: ``caches`` seen from ``item``."""

    def __init__(self, caches: Caches, item: Any) -> None:
        self.caches = caches
        self.item = item

    def subject(self, device: str) -> Subject:
        return self.caches.subject_for(self.item, device)

    def capture(self, device: str, name: str) -> CaptureRecord:
        return self.caches.capture_for(self.item, device, name)


class NotRunnable(Exception):
    """The item cannot say anything here; it is skipped with ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def dynamic_not_applicable(capture_name: str) -> str | None:
    """Why a capture path is not run for a case with dynamic dims: it would capture the
    example's static shapes, which is not the program the case describes."""
    from pytest_exportcheck.capture import static_only

    why = static_only(capture_name)
    return None if why is None else f"{why}, so it cannot honour the case's dynamic dims"


def skip_reason(case: Case, check: str, capture: str, device: str) -> str | None:
    """Why an item is skipped before anything is built, or None if it runs.

    In this order: the case's ``torch:`` and ``requires:``, a check that means
    nothing for this capture or device ("not applicable: ..."), a device this
    machine lacks, a capture path (or ``move_to_device_pass``) the installed
    torch lacks. ``consistency`` compares what there is: captures torch lacks
    are left out of it, not a reason to skip it.
    """
    from pytest_exportcheck.capture import unavailable
    from pytest_exportcheck.checks import not_applicable
    from pytest_exportcheck.model.devices import unavailable_reason
    from pytest_exportcheck.spec import compat
    from pytest_exportcheck.spec.compat import moved_unavailable
    from pytest_exportcheck.spec.requirements import unmet

    if case.requires_torch and not compat.satisfies(case.requires_torch):
        return f"the case needs torch {case.requires_torch}; installed: {compat.torch_version()}"
    reason = unmet(case.requires)
    if reason is not None:
        return reason
    reason = not_applicable(check, capture, device)
    if reason is None and case.dynamic is not None and check != "consistency":
        reason = dynamic_not_applicable(capture)
    if reason is not None:
        return f"not applicable: {reason}"
    reason = unavailable_reason(device)
    if reason is None and check != "consistency":
        reason = unavailable(capture)
        if reason is None and check == "moved":
            reason = moved_unavailable()
    return reason


def record_for(check: str, capture: str, device: str, source: Source) -> CaptureRecord:
    """The capture an item checks; a ``moved`` item gets the CPU capture moved to its device."""
    if check != "moved":
        return source.capture(device, capture)
    from pytest_exportcheck.capture.moved import move_capture

    # One item per move, so a failure to move is reported in full by that item. The
    # device's subject is asked first: a case that cannot build there fails as itself.
    source.subject(device)
    return move_capture(source.capture("cpu", capture), device)


def check_record(case: Case, check: str, record: CaptureRecord) -> list[str]:
    """Run one check on one capture; a value check first needs eager fit to compare with."""
    from pytest_exportcheck.checks import CHECKS, VALUE_CHECKS

    if check in VALUE_CHECKS:
        with stage("eager"):
            unsound = record.subject.unsound  # see soundness.py
        if unsound is not None:
            raise unsound
    with stage(check):
        return CHECKS[check](case, record)


def compare_captures(
    case: Case,
    device: str,
    source: Source,
    handed_on: Callable[[str], CaptureSummary | LeftOut | None] | None = None,
) -> list[str]:
    """The ``consistency`` check: every capture of the case on ``device``, compared.

    Captures that failed or that torch lacks are left out, with why (their own
    items report them); with fewer than two left there is nothing to compare.
    ``handed_on(capture)`` gives the summary another xdist worker wrote of a
    capture (``capture_summaries.py``); the others are captured here.
    """
    from pytest_exportcheck.capture import unavailable
    from pytest_exportcheck.checks.consistency import (
        CaptureSummary,
        check_consistency,
        summarize,
    )
    from pytest_exportcheck.containment.crashes import WorkerCrash
    from pytest_exportcheck.containment.failures import CaptureError
    from pytest_exportcheck.items.capture_summaries import LeftOut

    subject = source.subject(device)  # a broken case or eager fails the item itself
    made: dict[str, CaptureSummary | CaptureRecord] = {}
    left_out: dict[str, str] = {}
    for name in case.captures:
        reason = unavailable(name)
        if reason is None and case.dynamic is not None:
            reason = dynamic_not_applicable(capture_name=name)
        summary = handed_on(name) if handed_on is not None and reason is None else None
        if isinstance(summary, LeftOut):
            reason = summary.why
        if reason is not None:
            left_out[name] = reason
            continue
        try:
            made[name] = summary or source.capture(device, name)
        except (CaptureError, WorkerCrash) as exc:
            left_out[name] = exc.headline
    if len(made) < 2 and not (made and case.names_step("retrace")):  # a retrace compares with one
        why = "; ".join(f"{capture}: {reason}" for capture, reason in left_out.items())
        raise NotRunnable(f"fewer than two captures to compare ({why})")
    with stage("consistency"):
        summaries = {
            name: m if isinstance(m, CaptureSummary) else summarize(case, m)
            for name, m in made.items()
        }
        return check_consistency(case, summaries, left_out, subject)


def unless_expected(
    xfail: XfailSpec | None, error: ExportCheckError, case: Case
) -> ExportCheckError:
    """``error``, or, where an xfail with ``stage:``/``match:`` expects another failure,
    one that no xfail absorbs: an xfail written for one cause must not hide another."""
    from pytest_exportcheck.containment.failures import UnexpectedFailure

    if xfail is None or xfail.expects(error.stage, error.match_text()):
        return error
    where = f" at {case.at(xfail.line)}" if xfail.line else ""
    return UnexpectedFailure(error, f"expected xfail ({xfail.describe()}){where}, got")


def timeout_message(case: Case, seconds: float, source: str, stage_name: str) -> str:
    """The ``[timeout]`` message: where the item was when its ``seconds`` ran out."""
    return (
        f"{case.location}: still in the {stage_name} stage after {seconds:g} s ({source}); "
        + STOPPED
    )
