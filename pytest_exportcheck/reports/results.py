"""pytest test reports → one result per exportcheck item.

An item produces up to three reports (setup, call, teardown), and under
pytest-xdist they reach the controller serialized: a failure's ``longrepr``
may then be a plain string (the plugin's own failure rendering) instead of an
object with a ``reprcrash``. Everything below therefore reads only what
survives serialization — outcome, ``longrepr``, ``wasxfail``, ``location``,
``duration`` and ``user_properties`` — so one process and xdist agree.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from pytest_exportcheck.items.gaps import GAPS_PROPERTY, from_property
from pytest_exportcheck.items.item_results import API_CALL_PROPERTY

# Every outcome an item can end with, in the order totals are shown.
OUTCOMES: tuple[str, ...] = (
    "passed",
    "failed",
    "error",
    "xfailed",
    "xpassed",
    "skipped",
    "not_applicable",
)
FAILING = frozenset({"failed", "error"})
PASSING = frozenset({"passed", "xpassed"})  # the outcomes a gap can qualify
NOT_APPLICABLE = "not applicable: "
PROPERTY_PREFIX = "exportcheck_"
_MAX_MESSAGE = 500
_N = TypeVar("_N", int, float)
_MAX_TEXT = 8000  # a failure's text in the report: its findings, not a 50-kB graph


@dataclass
class ItemResult:
    """What one item did, as the JSON report stores it (field order is the JSON's)."""

    nodeid: str
    case: str
    file: str
    line: int | None
    capture: str | None  # None for a broken case; "export+dynamo" for consistency
    check: str | None  # None for a broken case (the YAML did not load)
    device: str | None
    outcome: str
    stage: str | None = None
    message: str | None = None
    reason: str | None = None  # the xfail reason, for xfailed and xpassed items
    max_abs_err: float | None = None
    duration: float = 0.0
    capture_seconds: float | None = None
    observation: Any = None
    # recorded items: the torch minor whose recording was compared, and what differed
    # from it ([[kind, example], ...], see drift.py)
    recorded_against: str | None = None
    drift: list[list[str]] | None = None
    # what the item's check did not verify, on an item that passed ([{check, what, why}],
    # see gaps.py); None where it has none
    gaps: list[dict[str, str]] | None = None
    # what the comparison with the largest error was held to ("atol=1e-05, rtol=1.3e-06
    # (float32 default)")
    tolerance: str | None = None
    # a failure's (or expected failure's) whole text, bounded, and its `where:` line (the
    # first diverging submodule, localize.py)
    text: str | None = None
    where: str | None = None
    # the line of the case's xfail entry that applies to the item (for an XPASS(strict))
    xfail_line: int | None = None
    # how many tensor pairs the item's check compared at a tolerance: 0 where it compared
    # no values (max_abs_err and tolerance then null); None where not known (the check
    # did not run, or a report or fixture call that does not say)
    compared: int | None = None
    # --exportcheck-repro: the plain-torch reproduction written for a failure (or an
    # expected one) and what its run said (repro/confirm.py), or why none was written
    repro: str | None = None
    repro_outcome: str | None = None

    @property
    def with_gaps(self) -> bool:
        """Passed, but its check verified less than it says (gaps.py)."""
        return self.outcome in PASSING and bool(self.gaps)

    @property
    def broken(self) -> bool:
        """A case (or case file) that could not be loaded: no capture, no check."""
        return self.check is None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def first_line(text: str | None) -> str | None:
    """The first non-blank line, bounded: summaries must stay one line."""
    if not text:
        return None
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= _MAX_MESSAGE else line[: _MAX_MESSAGE - 1] + "…"
    return None


def skip_reason(longrepr: Any) -> str | None:
    """The reason of a skip report (pytest stores ``(path, line, "Skipped: reason")``)."""
    if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3:
        reason = str(longrepr[2])
        if reason == "Skipped":
            return ""
        return reason.removeprefix("Skipped: ")
    return None


def headline(longrepr: Any) -> str | None:
    """The one-line summary of a report's ``longrepr``, whatever form it reached us in.

    Skips give their reason; failures their ``reprcrash.message`` (the plugin's
    own ``[stage] ...`` headline, or pytest's ``AssertionError: ...``); a
    longrepr serialized to text by xdist gives its first line, which for the
    plugin's failures is that same headline.
    """
    if longrepr is None:
        return None
    reason = skip_reason(longrepr)
    if reason is not None:
        return first_line(reason)
    message = getattr(getattr(longrepr, "reprcrash", None), "message", None)
    return first_line(message if message else str(longrepr))


def _outcome_of(report: Any) -> str:
    """The outcome one phase's report says, before phases are combined."""
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.skipped:
        reason = skip_reason(report.longrepr) or ""
        return "not_applicable" if reason.startswith(NOT_APPLICABLE) else "skipped"
    return "failed" if report.failed else "passed"


def classify(phases: Mapping[str, Any]) -> tuple[str, Any] | None:
    """An item's outcome from its phase reports, and the report that decided it.

    A failing setup or teardown is an ``error`` (as pytest counts it); a
    crashed xdist worker reports phase ``???``, read as the call. None when
    the item never got past setup (an interrupted run).
    """
    setup = phases.get("setup")
    call = phases.get("call") or phases.get("???")
    teardown = phases.get("teardown")
    if setup is not None and setup.failed:
        return "error", setup
    if call is None:
        if setup is not None and setup.skipped:
            return _outcome_of(setup), setup
        return None
    outcome = _outcome_of(call)
    if teardown is not None and teardown.failed and outcome not in FAILING:
        return "error", teardown
    return outcome, call


def _json_property(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _float(value: Any) -> float | None:
    return _number(value, float)


def _int(value: Any) -> int | None:
    return _number(value, int)


def _number(value: Any, kind: type[_N]) -> _N | None:
    """A property's number, None where it has none (or not one)."""
    try:
        return None if value is None else kind(value)
    except (TypeError, ValueError):
        return None


def item_result(nodeid: str, phases: Mapping[str, Any]) -> ItemResult | None:
    """One item's result from its reports (None if it never ran)."""
    decided = classify(phases)
    if decided is None:
        return None
    outcome, report = decided
    props: dict[str, Any] = {}
    duration = 0.0
    location = None
    for phase in phases.values():
        props.update({name: value for name, value in phase.user_properties})
        duration += float(getattr(phase, "duration", 0.0) or 0.0)
        location = location or getattr(phase, "location", None)
    line = None
    if location and len(location) > 1 and location[1] is not None:
        line = int(location[1]) + 1
    reason = getattr(report, "wasxfail", None)
    message = reason if outcome == "xpassed" else headline(report.longrepr)
    text = failure_text(report.longrepr) if outcome in (*FAILING, "xfailed") else None
    compared = _int(props.get("exportcheck_compared"))
    return ItemResult(
        nodeid=nodeid,
        case=props.get("exportcheck_case") or nodeid.split("::")[-1],
        # The item's own location: a path may hold "::" itself (a directory "a::b").
        file=str(location[0]) if location else nodeid.split("::")[0],
        line=line,
        capture=props.get("exportcheck_capture"),
        check=props.get("exportcheck_check"),
        device=props.get("exportcheck_device"),
        outcome=outcome,
        stage=props.get("exportcheck_stage") if outcome in (*FAILING, "xfailed") else None,
        message=None if outcome == "passed" else message,
        reason=reason or None,
        max_abs_err=_float(props.get("exportcheck_max_abs_err")),
        duration=round(duration, 4),
        capture_seconds=_float(props.get("exportcheck_capture_seconds")),
        observation=_json_property(props.get("exportcheck_observation")),
        recorded_against=props.get("exportcheck_recorded_against"),
        drift=_json_property(props.get("exportcheck_drift")),
        gaps=_gaps(props.get(GAPS_PROPERTY)) if outcome in PASSING else None,
        tolerance=props.get("exportcheck_tolerance"),
        text=text,
        where=where_line(text),
        xfail_line=_int(props.get("exportcheck_xfail_line")),
        compared=None if outcome in ("skipped", "not_applicable") else compared,
        repro=props.get("exportcheck_repro"),
        repro_outcome=props.get("exportcheck_repro_outcome"),
    )


def failure_text(longrepr: Any) -> str | None:
    """A failure's whole text as the terminal shows it (the plugin's own rendering, or the
    string xdist sent), bounded: a report stays readable next to 1,500 items."""
    if longrepr is None or skip_reason(longrepr) is not None:
        return None
    text = str(longrepr).strip()
    if len(text) > _MAX_TEXT:
        text = text[: _MAX_TEXT - 1] + "…"
    return text or None


def where_line(text: str | None) -> str | None:
    """The ``where:`` line of a failure (``first diverging: act (Perturbed) — ...``)."""
    for line in (text or "").splitlines():
        if line.strip().startswith("where: "):
            return line.strip().removeprefix("where: ")
    return None


def _gaps(value: Any) -> list[dict[str, str]] | None:
    gaps = from_property(value)
    return [gap.to_json() for gap in gaps] if gaps else None


def fixture_results(
    nodeid: str, calls: list[Any], test_xfail: str | None = None
) -> list[ItemResult]:
    """The items of each ``exportcheck`` fixture call a test made, as YAML items are told.

    Node ids extend the test's: ``tests/test_m.py::test_resnet::ResNet::parity[export-cpu]``
    (a second call of the same case name gets ``ResNet#2``), so the matrix shows the
    case under the test file and ``--exportcheck-compare`` matches it run to run.
    ``test_xfail``: the reason of a test pytest counted as xfailed; its failing items are
    xfailed too, as pytest counts the test (a failure the user declared expected).
    """
    results = []
    seen: Counter[str] = Counter()
    for call in calls:
        payload = _json_property(call)
        if not isinstance(payload, dict):
            continue
        seen[payload["case"]] += 1
        case = payload["case"] + (f"#{seen[payload['case']]}" if seen[payload["case"]] > 1 else "")
        for item in payload.get("items", []):
            outcome = item["outcome"]
            message = item.get("message") or ""
            if outcome == "skipped" and message.startswith(NOT_APPLICABLE):
                outcome = "not_applicable"
            reason = message if outcome == "xfailed" else None
            if test_xfail is not None and outcome in FAILING:
                outcome, reason = "xfailed", f"the test is xfailed: {test_xfail}"
            results.append(
                ItemResult(
                    nodeid=f"{nodeid}::{case}::{item['name']}",
                    case=case,
                    file=nodeid.split("::")[0],
                    line=payload.get("line"),
                    capture=item["capture"],
                    check=item["check"],
                    device=item["device"],
                    outcome=outcome,
                    stage=(item.get("stage") or None) if outcome in (*FAILING, "xfailed") else None,
                    message=None
                    if outcome == "passed"
                    else first_line(item.get("headline") or message),
                    reason=reason,
                    max_abs_err=_float(item.get("max_abs_err")),
                    duration=round(float(item.get("seconds") or 0.0), 4),
                    compared=_int(item.get("compared")),
                    gaps=_gaps(item.get("gaps")) if outcome == "passed" else None,
                    repro=item.get("repro"),
                    repro_outcome=item.get("repro_outcome"),
                )
            )
    return results


class ResultCollector:
    """Test reports of exportcheck items as they arrive (from workers, under xdist)."""

    def __init__(self) -> None:
        self._phases: dict[str, dict[str, Any]] = {}
        self._fixture_calls: dict[str, list[Any]] = {}
        self._xfailed_tests: dict[str, str] = {}  # node id -> the xfail reason

    def add(self, report: Any) -> None:
        """Keep a report if it belongs to an exportcheck item (it carries our properties),
        and the fixture calls of any other test."""
        properties = list(getattr(report, "user_properties", ()))
        calls = [value for name, value in properties if name == API_CALL_PROPERTY]
        if calls:  # every phase carries the test's properties: the last has them all
            self._fixture_calls[report.nodeid] = calls
            if _outcome_of(report) == "xfailed":
                self._xfailed_tests[report.nodeid] = str(report.wasxfail)
            return
        if any(str(name).startswith(PROPERTY_PREFIX) for name, _ in properties):
            self._phases.setdefault(report.nodeid, {})[report.when] = report

    def results(self) -> list[ItemResult]:
        """Every item that ran, ordered by node id (deterministic under xdist too)."""
        found = [item_result(nodeid, phases) for nodeid, phases in self._phases.items()]
        for nodeid, calls in self._fixture_calls.items():
            found += fixture_results(nodeid, calls, self._xfailed_tests.get(nodeid))
        return sorted((r for r in found if r is not None), key=lambda r: r.nodeid)


def totals(outcomes: Iterable[str]) -> dict[str, int]:
    """``{"items": n, "passed": ..., ...}`` with every outcome present, zero or not."""
    counts = Counter(outcomes)
    return {"items": sum(counts.values()), **{name: counts.get(name, 0) for name in OUTCOMES}}


def describe_totals(counts: Mapping[str, int]) -> str:
    """``24 items: 9 passed, 12 failed, 2 not applicable`` (zero counts left out)."""
    parts = [f"{counts[name]} {name.replace('_', ' ')}" for name in OUTCOMES if counts.get(name)]
    items = counts.get("items", 0)
    noun = "item" if items == 1 else "items"
    return f"{items} {noun}: " + ", ".join(parts) if parts else f"{items} {noun}"
