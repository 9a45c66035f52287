"""The items of a case: one check of one capture on one device (:class:`CheckItem`),
and the comparison of a case's captures with each other (:class:`ConsistencyItem`).

Collected by ``collect.py``; how an item runs is ``item_run.py``.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from pytest_exportcheck.items.failure_repr import FailureRepr
from pytest_exportcheck.spec import Case

if TYPE_CHECKING:
    from pytest_exportcheck.containment.failures import ExportCheckError


class CheckItem(pytest.Item):
    """One check of one capture of one case on one device."""

    def __init__(self, *, case: Case, capture: str, check: str, device: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.capture = capture
        self.check = check
        self.device = device
        self.add_marker(pytest.mark.exportcheck)
        xfail = case.xfail_for(capture, check, device)
        if xfail is not None:  # export's failures only, or a crash (expected_crashes.py)
            from pytest_exportcheck.items.expected_crashes import xfail_marker

            self.add_marker(xfail_marker(xfail))
        if xfail is not None and xfail.line is not None:  # where a CI annotation points
            self.user_properties.append(("exportcheck_xfail_line", xfail.line))
        self.user_properties += [
            ("exportcheck_case", case.name),
            ("exportcheck_capture", capture),
            ("exportcheck_check", check),
            ("exportcheck_device", device),
        ]

    def subject_key(self, device: str | None = None) -> tuple[str, ...]:
        return (str(self.case.path), self.case.name, device or self.device)

    def capture_key(self, device: str | None = None) -> tuple[str, ...]:
        return (*self.subject_key(device), self.capture)

    def needs(self) -> list[tuple[str, ...]]:
        """The cached subjects and captures this item uses (released after their last user)."""
        keys = [self.subject_key(), self.capture_key()]
        if self.check == "moved":  # the CPU export, moved to this item's device
            keys += [self.subject_key("cpu"), self.capture_key("cpu")]
        return keys

    def runtest(self) -> None:
        from pytest_exportcheck.items.time_spent import mark_if_first

        mark_if_first(self)
        from pytest_exportcheck.comparison.compare_values import tracking_errors
        from pytest_exportcheck.containment.failures import (
            CheckFailure,
            ExportCheckError,
            Failed,
            InternalError,
            Note,
            exception_text,
        )
        from pytest_exportcheck.containment.item_guards import item_guards
        from pytest_exportcheck.containment.process_state import LeakedState
        from pytest_exportcheck.items.expected_crashes import for_breadcrumb
        from pytest_exportcheck.items.gaps import gaps_on_pass
        from pytest_exportcheck.items.item_run import NotRunnable, skip_reason
        from pytest_exportcheck.model.isolation import seeded

        reason = skip_reason(self.case, self.check, self.capture, self.device)
        if reason is not None:
            _skip_here(reason)
        # Under xdist: where this worker is, should the model kill it (crashes.py), and
        # the xfail the controller judges the crash by (expected_crashes.py).
        unit = self.capture_key() if self.check != "consistency" else None
        xfail = self.case.xfail_for(self.capture, self.check, self.device)
        self._session.breadcrumb.start(
            self.nodeid, self.case.location, self.user_properties, unit,
            for_breadcrumb(xfail, self.case),
        )  # fmt: skip
        try:
            # One fork of the RNG per item: runs inside reseed freely, and the
            # user's own tests in this session get their RNG state back.
            guards = item_guards(
                self._seconds_allowed(), self._describe_timeout, self.case.location
            )
            with seeded(self.case.seed), tracking_errors() as errors, guards:
                try:
                    leaked = self._session.leaked_state.get(self.case.location)
                    if leaked is not None:  # an earlier item of the case changed it
                        leaked.raise_for(self.nodeid)
                    findings = self._check()
                finally:
                    # How many tensor pairs the check judged: 0 says it compared no
                    # values, so the reports show no tolerance for it (probes excluded).
                    self.set_property("exportcheck_compared", errors.compared)
                    if errors.max_abs_err is not None:
                        self.set_property("exportcheck_max_abs_err", errors.max_abs_err)
                        self.set_property("exportcheck_tolerance", errors.tolerance)
        except NotRunnable as exc:
            _skip_here(exc.reason)
        except ExportCheckError as exc:
            if isinstance(exc, LeakedState):  # the case's other items fail with it
                self._session.leaked_state.setdefault(self.case.location, Failed(exc, self.nodeid))
            self._reproduce(exc)
            raise self._as_xfail_expects(exc) from exc.__cause__
        except Exception as exc:
            message = f"{type(exc).__name__}: {exception_text(exc)}".splitlines()[0]
            raise InternalError(f"{self.case.location}: unexpected {message}") from exc
        if any(not isinstance(f, Note) for f in findings):
            failure = CheckFailure(self.check, findings)
            self._reproduce(failure)
            raise self._as_xfail_expects(failure)
        strict = gaps_on_pass(self, findings)  # a pass's notes are its gaps (gaps.py)
        if strict is not None:
            raise self._as_xfail_expects(strict)
        xfail = self.case.xfail_for(self.capture, self.check, self.device)
        reproductions = self._session.reproductions
        if xfail is not None and xfail.strict and reproductions is not None:
            self._xpassed = reproductions.reproduce_xpass(self, xfail, self._seconds_allowed())

    def _reproduce(self, error: ExportCheckError) -> None:
        """--exportcheck-repro: a finding's plain-torch script, written and run."""
        from pytest_exportcheck.containment.failures import CaptureError, CheckFailure

        reproductions = self._session.reproductions
        if reproductions is not None and isinstance(error, (CaptureError, CheckFailure)):
            reproductions.reproduce(self, error, self._seconds_allowed())

    def _as_xfail_expects(self, error: ExportCheckError) -> ExportCheckError:
        from pytest_exportcheck.items.item_run import unless_expected

        xfail = self.case.xfail_for(self.capture, self.check, self.device)
        return unless_expected(xfail, error, self.case)

    def _seconds_allowed(self) -> float:
        """Seconds this item may take: the case's ``timeout``, else the option / ini value."""
        if self.case.timeout is not None:
            return float(self.case.timeout)
        return float(self._session.timeout)

    def _describe_timeout(self, stage: str) -> str:
        from pytest_exportcheck.items.item_run import timeout_message

        source = "the case's timeout" if self.case.timeout is not None else "exportcheck_timeout"
        return timeout_message(self.case, self._seconds_allowed(), source, stage)

    def _check(self) -> list[str]:
        from pytest_exportcheck.checks import VALUE_CHECKS
        from pytest_exportcheck.containment.failures import CaptureError
        from pytest_exportcheck.containment.stages import stage
        from pytest_exportcheck.items.item_run import check_record, record_for

        breadcrumb = self._session.breadcrumb
        try:
            record = record_for(
                self.check, self.capture, self.device, self._session.source_for(self)
            )
        except CaptureError as exc:
            if self.check == "recorded":  # a capture that raises is an observation too
                self._recorded_failure(exc)
            raise
        self.set_property("exportcheck_capture_seconds", round(record.seconds, 4))
        programs = self.config.pluginmanager.get_plugin("exportcheck-programs")
        if programs is not None and self.check != "moved":  # --exportcheck-save-programs
            programs.save(self.case, record, self.device)
        if self.check in VALUE_CHECKS:
            # Eager's soundness runs eager again (cached on the subject): a crash
            # there condemns the case, as one in building eager does.
            with stage("eager"), breadcrumb.at("eager", self.subject_key()):
                record.subject.unsound  # noqa: B018
        with breadcrumb.at(self.check):
            if self.check == "recorded":
                with stage(self.check):
                    return self._recorded(record)
            return check_record(self.case, self.check, record)

    def _recorded(self, record: Any) -> list[str]:
        from pytest_exportcheck.checks.recorded import observe

        found = self._compare_recorded(observe(record))
        if isinstance(found, str):
            _skip_here(found)
        return found.findings if found is not None else []

    def _recorded_failure(self, error: Any) -> None:
        """A capture that raised: recorded as such (so a torch that fixes or breaks it shows
        as a change); the item itself still fails, or xfails, with the capture's error."""
        from pytest_exportcheck.checks.recorded import observe_failure

        with contextlib.suppress(Exception):  # the capture's own error is what to report
            self._compare_recorded(observe_failure(error))  # nothing recorded: no skip either

    def _compare_recorded(self, observation: dict[str, Any]) -> Any:
        from pytest_exportcheck.checks.recorded import record_or_compare

        store = self._session.recordings
        return record_or_compare(store, self.case, self.capture, observation, self.set_property)

    def teardown(self) -> None:
        self._session.release(self)

    @property
    def _session(self) -> Any:
        return self.config.pluginmanager.get_plugin("exportcheck-session")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        from pytest_exportcheck.containment.failures import (
            ExportCheckError,
            failure_text,
            full_traceback,
            printed_while_capturing,
        )
        from pytest_exportcheck.containment.stages import StageTimeout
        from pytest_exportcheck.items.reproductions import reproduction_line, with_reproduction

        error = excinfo.value
        if not isinstance(error, (ExportCheckError, StageTimeout)):
            return super().repr_failure(excinfo, style=style)
        self.set_property("exportcheck_stage", error.stage)
        where = f"{self.case.location}: case {self.case.name}, {self.capture} on {self.device}"
        text = failure_text(error, where)
        if error.stage not in ("case", "eager", "internal"):  # what an xfail could expect
            from pytest_exportcheck.spec.versions import unmet_xfail_note

            note = unmet_xfail_note(self.case, self.capture, self.check, self.device, error.stage)
            text += f"\n{note}" if note else ""
        show_traceback = (
            error.stage == "internal"
            or self.config.get_verbosity() >= 2
            or self.config.getoption("exportcheck_tb") == "long"
        )
        if show_traceback and error.__cause__ is not None:
            text += "\n\n" + full_traceback(error.__cause__)
        text += printed_while_capturing(error, show=show_traceback)
        if show_traceback and error.stage in ("signature", "hierarchy", "recorded"):
            text += self._graph_evidence(error.render())
        headline = error.headline
        told = reproduction_line(error)
        if told is not None:  # its first line is the headline (failure_text)
            text, headline = with_reproduction(text, headline, told)
        return FailureRepr(text, headline=headline)

    def xpass_note(self) -> str:
        """For an XPASS(strict): the ``torch:`` condition that gave this item its xfail."""
        from pytest_exportcheck.spec.versions import passing_xfail_note

        xfail = self.case.xfail_for(self.capture, self.check, self.device)
        note = passing_xfail_note(xfail, self.case) if xfail else ""
        told = getattr(self, "_xpassed", None)  # --exportcheck-repro: the xfail's finding
        return "\n".join(part for part in (note, told) if part)

    def _graph_evidence(self, findings: str) -> str:
        from pytest_exportcheck.checks.evidence import graph_excerpt
        from pytest_exportcheck.items.item_run import record_for

        try:
            source = self._session.source_for(self)
            excerpt = graph_excerpt(
                record_for(self.check, self.capture, self.device, source), findings
            )
        except Exception:  # evidence is a courtesy; the failure itself is already told
            return ""
        if excerpt is None:
            return ""
        heading = f"graph excerpt ({self.capture}: the nodes named above and their users):"
        return f"\n\n{heading}\n{excerpt}"

    def set_property(self, name: str, value: object) -> None:
        """Set a junit property once (pytest may call runtest and repr_failure again)."""
        self.user_properties[:] = [p for p in self.user_properties if p[0] != name]
        self.user_properties.append((name, value))

    def reportinfo(self) -> tuple[Any, int, str]:
        return self.path, self.case.line - 1, f"{self.case.name}::{self.name}"


class ConsistencyItem(CheckItem):
    """The captures of one case on one device, compared with each other."""

    def needs(self) -> list[tuple[str, ...]]:
        return [
            self.subject_key(),
            *((*self.subject_key(), capture) for capture in self.case.captures),
        ]

    def _check(self) -> list[str]:
        from pytest_exportcheck.items.item_run import compare_captures

        summaries = self._session.summaries  # another worker's captures (xdist), or None
        handed_on = None
        if summaries is not None:
            key = self.subject_key()
            handed_on = lambda capture: summaries.read((*key, capture))  # noqa: E731
        with self._session.breadcrumb.at(self.check):
            return compare_captures(
                self.case, self.device, self._session.source_for(self), handed_on
            )


def _skip_here(reason: str) -> NoReturn:
    """Skip, reported at the case's location rather than at this line of the plugin."""
    raise pytest.skip.Exception(reason, _use_item_location=True)
