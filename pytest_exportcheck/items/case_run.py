"""Every item of one case run in-process, without pytest: results instead of reports.

This is the YAML items' run loop (``collect.py``'s ``CheckItem.runtest`` and
``session.py``'s caches) for one case: the same subjects, captures, stages,
seeding, time limit and exceptions, so every message is the one a YAML item
prints. Two callers: the Python API (``api/given.py``: the model and inputs are
the caller's objects) and the scaffold, which runs the case it wrote
(``scaffold/verify.py``: built from the target, as collection builds it).
"""

from __future__ import annotations

import time
from collections.abc import Container

from pytest_exportcheck.capture import CaptureRecord, capture
from pytest_exportcheck.comparison.compare_values import tracking_errors
from pytest_exportcheck.containment.failures import (
    CaptureError,
    CheckFailure,
    ExportCheckError,
    Failed,
    InternalError,
    Note,
    exception_text,
    failure_text,
    full_traceback,
)
from pytest_exportcheck.containment.item_guards import item_guards
from pytest_exportcheck.containment.stages import StageTimeout, stage
from pytest_exportcheck.containment.user_exits import user_exit_error
from pytest_exportcheck.items.gaps import gaps_of, strict_findings
from pytest_exportcheck.items.item_names import consistency_name, item_name
from pytest_exportcheck.items.item_results import ItemResult, Outcome
from pytest_exportcheck.items.item_run import (
    NotRunnable,
    SourceFor,
    check_record,
    compare_captures,
    record_for,
    skip_reason,
    timeout_message,
    unless_expected,
)
from pytest_exportcheck.items.reproductions import (
    Reproductions,
    RunItem,
    reproduction_line,
    with_reproduction,
)
from pytest_exportcheck.model.devices import free_memory, is_accelerator
from pytest_exportcheck.model.isolation import seeded
from pytest_exportcheck.model.subject import Subject
from pytest_exportcheck.spec import Case

Failure = ExportCheckError | StageTimeout


class CaseRun:
    """Every item of one case, run in collection order with caches for this run.

    A device's subject is built from the case's target, as collection builds it;
    the Python API gives its own (:meth:`new_subject`).
    """

    def __init__(
        self,
        case: Case,
        devices: list[str],
        timeout: float | None,
        timeout_source: str,
        *,
        report_cpu_moved: bool = False,
        strict_gaps: str | None = None,
        reproductions: Reproductions | None = None,
    ) -> None:
        self.case = case
        # repro=DIR: each finding's plain-torch script, written and run (reproductions.py)
        self.reproductions = reproductions
        # Which setting makes a gap fail its item, as --exportcheck-strict-gaps does
        # (gaps.py); None: a pass carries its gaps.
        self.strict_gaps = strict_gaps
        # The YAML collector makes no `moved` item off accelerators; a caller who
        # named `moved` explicitly is told why it did not run instead.
        self.report_cpu_moved = report_cpu_moved
        self.devices = devices
        self.timeout = timeout or 0.0
        self.timeout_source = timeout_source
        self._subjects: dict[str, Subject | Failed] = {}
        self._captures: dict[tuple[str, str], CaptureRecord | Failed] = {}

    def new_subject(self, device: str) -> Subject:
        """The case's model and inputs on ``device``; a raise is the items' case failure."""
        return Subject(self.case, device)

    def repro_item(self, name: str, check: str, capture_name: str, device: str) -> RunItem:
        """The item as its reproduction sees it (the Python API's adds its given model)."""
        nodeid = f"{self.case.location}::{self.case.name}::{name}"
        return RunItem(nodeid, self.case, capture_name, check, device)

    def run(self, only: Container[str] | None = None) -> list[ItemResult]:
        """Every item, or those named in ``only`` (the others are left out, not skipped)."""
        results: list[ItemResult] = []
        for device in self.devices:
            for capture_name in self.case.captures:
                for check in self.case.checks:
                    if check == "consistency":
                        continue
                    if (
                        check == "moved"
                        and not is_accelerator(device)
                        and not self.report_cpu_moved
                    ):
                        continue
                    if only is None or item_name(check, capture_name, device) in only:
                        results.append(self._item(check, capture_name, device))
            compared = "consistency" in self.case.checks and len(self.case.captures) > 1
            if compared and (only is None or consistency_name(device) in only):
                captures = "+".join(self.case.captures)
                results.append(self._item("consistency", captures, device))
            self._release(device)
        return results

    def _item(self, check: str, capture_name: str, device: str) -> ItemResult:
        consistency = check == "consistency"
        name = consistency_name(device) if consistency else item_name(check, capture_name, device)
        started = time.perf_counter()
        max_abs_err = None
        compared: int | None = None  # tensor pairs the check judged (None: it did not run)
        gaps: tuple[dict[str, str], ...] = ()  # a pass's notes (gaps.py)
        # With repro=DIR: the item as its reproduction saw it, and the verdict's line.
        repro = RunItem(name, self.case, capture_name, check, device)
        told: str | None = None

        def result(
            outcome: Outcome, message: str = "", headline: str = "", error: Failure | None = None
        ) -> ItemResult:
            seconds = round(time.perf_counter() - started, 4)
            stage_name = "" if error is None else str(getattr(error, "stage", ""))
            if told and outcome == "failed":
                message, headline = with_reproduction(message, headline, told)
            return ItemResult(
                name, check, capture_name, device, outcome, message, headline, seconds,
                max_abs_err, stage_name, gaps, compared,
                repro.properties.get("exportcheck_repro"),
                repro.properties.get("exportcheck_repro_outcome"),
            )  # fmt: skip

        if check == "moved" and not is_accelerator(device):
            return result(
                "skipped", "not applicable: moved compares an accelerator with its moved CPU export"
            )
        reason = skip_reason(self.case, check, capture_name, device)
        if reason is not None:
            return result("skipped", reason)
        source = SourceFor(self, name)
        try:
            guards = item_guards(self.timeout, self._describe_timeout, self.case.location)
            with seeded(self.case.seed), tracking_errors() as errors, guards:
                try:
                    if check == "consistency":
                        findings = compare_captures(self.case, device, source)
                    else:
                        record = record_for(check, capture_name, device, source)
                        findings = check_record(self.case, check, record)
                finally:
                    max_abs_err, compared = errors.max_abs_err, errors.compared
            if any(not isinstance(f, Note) for f in findings):
                raise CheckFailure(check, findings)
            found = gaps_of(check, findings)
            if found and self.strict_gaps is not None:
                # Raised here, so that an xfail of the check covers it as any finding.
                raise CheckFailure(check, strict_findings(found, self.strict_gaps))
            gaps = tuple(gap.to_json() for gap in found)
        except NotRunnable as skip:
            return result("skipped", skip.reason)
        except ExportCheckError as error:
            if self.reproductions is not None and isinstance(error, (CaptureError, CheckFailure)):
                repro = self.repro_item(name, check, capture_name, device)
                self.reproductions.reproduce(repro, error, self.timeout)
                told = reproduction_line(error)
            xfail = self.case.xfail_for(capture_name, check, device)
            error = unless_expected(xfail, error, self.case)
            if xfail is not None and isinstance(error, (CaptureError, CheckFailure)):
                return result("xfailed", xfail.reason, error.headline, error)
            return result(
                "failed", self._render(error, capture_name, device), error.headline, error
            )
        except StageTimeout as error:
            return result(
                "failed", self._render(error, capture_name, device), error.headline, error
            )
        except Exception as exc:
            first = f"{type(exc).__name__}: {exception_text(exc)}".splitlines()[0]
            error = InternalError(f"{self.case.location}: unexpected {first}")
            error.__cause__ = exc
            return result(
                "failed", self._render(error, capture_name, device), error.headline, error
            )
        xfail = self.case.xfail_for(capture_name, check, device)
        if xfail is not None and xfail.strict:
            headline = f"[XPASS(strict)] {xfail.reason}"
            message = f"{headline}\n{self.case.location}: {name} passed"
            if self.reproductions is not None:
                repro = self.repro_item(name, check, capture_name, device)
                told = self.reproductions.reproduce_xpass(repro, xfail, self.timeout)
                message += f"\n{told}" if told else ""
            return result("failed", message, headline)
        return result("passed")

    def capture_for(self, name: str, device: str, capture_name: str) -> CaptureRecord:
        subject = self.subject_for(name, device)
        key = (device, capture_name)
        cached = self._captures.get(key)
        if cached is None:
            try:
                with stage("capture"):
                    cached = capture(capture_name, subject)
            except (ExportCheckError, StageTimeout) as exc:
                cached = Failed(exc, name)
            except BaseException as exc:
                cached = Failed(user_exit_error(exc, self.case.location), name)
            self._captures[key] = cached
        if isinstance(cached, Failed):
            cached.raise_for(name)
        return cached

    def subject_for(self, name: str, device: str) -> Subject:
        cached = self._subjects.get(device)
        if cached is None:
            try:
                with stage("case"):
                    cached = self.new_subject(device)
                with stage("eager"):
                    cached.eager  # noqa: B018 - an eager forward that raises is a case error
            except (ExportCheckError, StageTimeout) as exc:
                cached = Failed(exc, name)
            except BaseException as exc:
                cached = Failed(user_exit_error(exc, self.case.location), name)
            self._subjects[device] = cached
        if isinstance(cached, Failed):
            cached.raise_for(name)
        return cached

    def _release(self, device: str) -> None:
        """Drop a device's subject and captures once its items ran (the CPU ones may be
        needed by ``moved`` on a later device, so they stay until the end)."""
        if not is_accelerator(device):
            return
        self._subjects.pop(device, None)
        for key in [k for k in self._captures if k[0] == device]:
            del self._captures[key]
        free_memory(device)

    def _describe_timeout(self, stage_name: str) -> str:
        return timeout_message(self.case, self.timeout, self.timeout_source, stage_name)

    def _render(self, error: Failure, capture_name: str, device: str) -> str:
        """The text ``CheckItem.repr_failure`` prints for this error (short traceback style)."""
        where = f"{self.case.location}: case {self.case.name}, {capture_name} on {device}"
        text = failure_text(error, where)
        if error.stage == "internal" and error.__cause__ is not None:  # a bug: its traceback too
            text += "\n\n" + full_traceback(error.__cause__)
        return text
