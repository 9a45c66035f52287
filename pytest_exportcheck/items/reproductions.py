"""``--exportcheck-repro=DIR``: for each failed item, a plain-torch script, written and run.

The script (``repro/``) is written under DIR for an item that failed, or failed as
its xfail expected, with a finding a script can reproduce; it is then run in a
fresh interpreter (``--exportcheck-repro-run=no`` to only write it) and its verdict
joins the failure: "reproduced in plain torch: DIR/…py", or, loudly, "not
reproduced outside the plugin: this verdict may be the plugin's own error". A
finding no script reproduces yet is counted as such. The counts come from the
reports, so under xdist the controller sums every worker's.

The Python API's items (``case_run.py``, without pytest) go through the same steps as a
:class:`RunItem`; a model given from Python has no target, so its scripts load it from
the file its call saved beside them (``repro/given.py``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from pytest_exportcheck.items.item_results import API_CALL_PROPERTY
from pytest_exportcheck.repro.confirm import (
    NO_VERDICT,
    NOT_REPRODUCED,
    NOT_RUN,
    NOT_WRITTEN,
    REPRODUCED,
    XPASS_GONE,
    XPASS_SHOWS,
    Confirmation,
    confirm,
)
from pytest_exportcheck.repro.given import SHAPES_NOT_WRITTEN, Given, NotSaved
from pytest_exportcheck.repro.kinds import kind_for
from pytest_exportcheck.repro.script import Finding, file_name, saved_file, write_script
from pytest_exportcheck.repro.source import UnwritableTarget

if TYPE_CHECKING:
    from pytest_exportcheck.containment.failures import ExportCheckError
    from pytest_exportcheck.spec import Case
    from pytest_exportcheck.spec.case import XfailSpec

REPRODUCTIONS = pytest.StashKey["Reproductions"]()
RAISING = ("capture", "lower")  # kinds whose finding is an exception torch raised
# Failures that are not findings about the export: no reproduction is owed.
NOT_FINDINGS = ("case", "eager", "internal", "timeout", "crashed", "?")


class Item(Protocol):
    """What a reproduction reads of an item: a ``CheckItem``, or a :class:`RunItem`."""

    nodeid: str
    case: Case
    capture: str
    check: str
    device: str

    def set_property(self, name: str, value: Any) -> None: ...


@dataclass
class RunItem:
    """An item of a run without pytest (``case_run.py``), as its reproduction sees it."""

    nodeid: str
    case: Case
    capture: str
    check: str
    device: str
    preserved: tuple[str, ...] = ()  # the FQNs preserve_signatures resolved to
    given: Given | None = None  # a model given from Python: its scripts load it
    # Writes that file, returning where its classes import from; raises NotSaved.
    save: Callable[[Path], tuple[str, ...]] | None = None
    properties: dict[str, Any] = field(default_factory=dict)  # exportcheck_repro*

    def set_property(self, name: str, value: Any) -> None:
        self.properties[name] = value


class Reproductions:
    """The run's reproductions: where they go, whether they run, what they said."""

    def __init__(self, directory: Path, *, run: bool, cwd: Path) -> None:
        self.directory = directory
        self.run = run
        self.cwd = cwd
        self.outcomes: Counter[str] = Counter()  # per failed item
        self.written: set[str] = set()  # the scripts, one per capture failure or finding
        # A capture's failure fails each of its checks: its script runs once.
        self._confirmed: dict[Path, Confirmation] = {}
        # A given model's pickle, written once for its case's scripts: where its classes
        # import from, by file.
        self._saved: dict[Path, tuple[str, ...]] = {}

    def reproduce(self, item: Item, error: ExportCheckError, seconds: float) -> None:
        """Write ``error``'s reproduction and run it; its verdict joins the error."""
        if error.stage in NOT_FINDINGS:
            return
        findings = tuple(getattr(error, "findings", ()))
        cause = error.__cause__
        raised = type(cause).__name__ if cause is not None else None
        ran = self._written_and_run(item, error.stage, error.render(), raised, seconds, findings)
        if ran is not None:
            path, confirmation = ran
            item.set_property("exportcheck_repro_outcome", confirmation.outcome)
            error.reproduction = confirmation.line(path)  # type: ignore[attr-defined]

    def reproduce_xpass(self, item: Item, xfail: XfailSpec, seconds: float) -> str | None:
        """An XPASS(strict): the script of the finding the xfail expects, run. Not
        reproduced confirms the pass in plain torch; reproduced says the pass may be
        the plugin's own error."""
        stage = xfail.stages[0] if xfail.stages else item.check
        expects = f"the xfail expects: {xfail.reason}"
        ran = self._written_and_run(item, stage, expects, None, seconds)
        if ran is None:
            return None
        path, confirmation = ran
        outcome = {NOT_REPRODUCED: XPASS_GONE, REPRODUCED: XPASS_SHOWS}.get(
            confirmation.outcome, confirmation.outcome
        )
        item.set_property("exportcheck_repro_outcome", outcome)
        if outcome == XPASS_GONE:
            return f"the xfail's finding is {XPASS_GONE}: {path}"
        if outcome == XPASS_SHOWS:
            why = "this pass may be the plugin's own error"
            return f"the xfail's finding {XPASS_SHOWS}: {why} ({path})"
        return confirmation.line(path)

    def _written_and_run(
        self,
        item: Item,
        stage: str | None,
        message: str,
        raised: str | None,
        seconds: float,
        findings: tuple[str, ...] = (),
    ) -> tuple[Path, Confirmation] | None:
        """The script of ``stage``'s finding, written once per file and run once; None
        where none is written or run (the item's outcome property then says why)."""
        kind, why = kind_for(item.case, item.capture, item.check, stage, findings)
        given = item.given if isinstance(item, RunItem) else None
        if kind == "shapes" and given is not None:
            kind, why = None, SHAPES_NOT_WRITTEN
        if kind is None:
            item.set_property("exportcheck_repro_outcome", f"{NOT_WRITTEN}: {why}")
            return None
        finding = Finding(
            nodeid=item.nodeid, case=item.case, capture=item.capture, check=item.check,
            device=item.device, kind=kind, message=message,
            error=raised if kind in RAISING else None, preserved=_preserved(item),
            findings=tuple(str(f) for f in findings), given=given,
            saved=getattr(getattr(item, "saved", None), "folder", None),
        )  # fmt: skip
        path = self.directory / file_name(finding)
        if path not in self._confirmed:
            try:
                if given is not None and isinstance(item, RunItem) and item.save is not None:
                    saved = saved_file(finding, self.directory)
                    if saved not in self._saved:  # before the first script that loads it
                        self._saved[saved] = item.save(saved)
                    finding = replace(finding, given=replace(given, paths=self._saved[saved]))
                write_script(finding, self.directory)
            except (UnwritableTarget, NotSaved) as exc:
                item.set_property("exportcheck_repro_outcome", f"{NOT_WRITTEN}: {exc}")
                return None
        item.set_property("exportcheck_repro", str(path))
        if not self.run:
            item.set_property("exportcheck_repro_outcome", NOT_RUN)
            return None
        if path not in self._confirmed:
            self._confirmed[path] = confirm(path, seconds=seconds, cwd=self.cwd)
        return path, self._confirmed[path]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        found = [dict(report.user_properties)]
        # The `exportcheck` fixture's items (api/check.py): each call's, as JSON.
        for name, value in report.user_properties:
            if name == API_CALL_PROPERTY:
                items = json.loads(value).get("items", [])
                found += [{f"exportcheck_{k}": v for k, v in item.items()} for item in items]
        for props in found:
            outcome = props.get("exportcheck_repro_outcome")
            if outcome is not None:
                self.outcomes[outcome.split(":")[0]] += 1
                if props.get("exportcheck_repro") is not None:
                    self.written.add(props["exportcheck_repro"])

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.outcomes:
            return
        counts = self.outcomes
        parts = [
            f"{counts[REPRODUCED]} reproduced in plain torch",
            f"{counts[NOT_REPRODUCED]} not reproduced outside the plugin",
            f"{counts[NO_VERDICT]} reached no verdict",
            f"{counts[NOT_RUN]} not run",
            f"{counts[NOT_WRITTEN]} with {NOT_WRITTEN}",
        ]
        if counts[XPASS_GONE] or counts[XPASS_SHOWS]:
            parts.append(
                f"XPASS(strict): {counts[XPASS_GONE]} {XPASS_GONE}, "
                f"{counts[XPASS_SHOWS]} {XPASS_SHOWS}"
            )
        terminalreporter.write_line(
            f"exportcheck reproductions: {len(self.written)} scripts under {self.directory}; "
            f"of {counts.total()} failures, " + ", ".join(parts)
        )
        if counts[NOT_REPRODUCED] or counts[XPASS_SHOWS]:
            terminalreporter.write_line(
                f"exportcheck: {counts[NOT_REPRODUCED] + counts[XPASS_SHOWS]} verdict(s) that "
                "plain torch contradicts may be the plugin's own error: run their scripts, "
                "and report them",
                red=True,
            )


def _preserved(item: Item) -> tuple[str, ...]:
    """The FQNs the case's ``preserve_signatures`` name in the item's model, as its
    capture was given them (the script names them, not the patterns)."""
    if not item.case.preserve_signatures:
        return ()
    if isinstance(item, RunItem):
        return item.preserved
    from pytest_exportcheck.model.preserved import preserved_names

    subject = item._session.subject_for(item, item.device)  # type: ignore[attr-defined]  # built: the capture ran
    return preserved_names(item.case, subject.pristine_model)


def reproduction_line(error: BaseException) -> str | None:
    """The verdict of ``error``'s reproduction, where one ran."""
    return getattr(error, "reproduction", None)


def with_reproduction(text: str, headline: str, told: str) -> tuple[str, str]:
    """A failure's text and headline (its text's first line) saying its reproduction's
    verdict: at the headline's end, and as the text's last line."""
    headline = f"{headline}; {told}"
    return "\n".join([headline, *text.splitlines()[1:], told]), headline
