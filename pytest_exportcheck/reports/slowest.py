"""The end of a run: the slowest cases, and where their time went.

A sweep of real models takes tens of minutes, and pytest's ``--durations`` names
items, while the time is a case's: the first item of a case builds its model and
runs eager, the first item of a capture makes it, and the rest reuse both. So the
items' durations (every phase, as the JSON report sums them) are summed per case
and split by what the items say they made (``items/time_spent.py``):

- ``build``: the model's construction and its eager run;
- ``capture <path>``: making each capture;
- ``<check>``: the rest of each check's items' time, over captures and devices.

Under xdist the sums are over every worker: time spent, not wall time. Only cases
over :data:`AT_LEAST_SECONDS` are listed, so a run of quick cases prints nothing.
The section comes from the reports alone, so the xdist controller (which imports
no torch) prints it as one process does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_exportcheck.items.time_spent import BUILD_PROPERTY, CAPTURED_PROPERTY, FIRST_PROPERTY

SHOWN = 10  # cases listed at most
# A case under this many seconds is not worth a line; a run with none prints nothing.
AT_LEAST_SECONDS = 1.0
SECTION = "exportcheck slowest cases"


@dataclass
class ItemTime:
    """One item's time, as its reports tell it."""

    case: str  # "cases/x.yaml::name"
    check: str
    seconds: float  # all phases
    build: float = 0.0
    captured: dict[str, float] = field(default_factory=dict)
    first: bool = False  # the first item of its process: its imports included


@dataclass
class CaseTime:
    case: str
    seconds: float
    build: float
    captures: dict[str, float]
    checks: dict[str, float]
    first: set[str] = field(default_factory=set)  # checks whose time holds a process's imports


def case_times(items: Iterable[ItemTime]) -> list[CaseTime]:
    """Per case, its items' seconds split into build, captures and checks; slowest first.

    A check's share is its items' seconds less what they spent building and capturing
    (never below zero: the made-it timers and pytest's phase timers are separate clocks).
    """
    totals: dict[str, float] = defaultdict(float)
    builds: dict[str, float] = defaultdict(float)
    captures: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    checks: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    first: dict[str, set[str]] = defaultdict(set)
    for item in items:
        if item.first:
            first[item.case].add(item.check)
        made = sum(item.captured.values())
        totals[item.case] += item.seconds
        builds[item.case] += item.build
        for path, seconds in item.captured.items():
            captures[item.case][path] += seconds
        checks[item.case][item.check] += max(0.0, item.seconds - item.build - made)
    found = [
        CaseTime(case, seconds, builds[case], dict(captures[case]), dict(checks[case]), first[case])
        for case, seconds in totals.items()
    ]
    return sorted(found, key=lambda c: (-c.seconds, c.case))


def render(
    cases: list[CaseTime], shown: int = SHOWN, at_least: float = AT_LEAST_SECONDS
) -> list[str]:
    """The section's lines: a heading line, then one line per case; none if no case is
    slow enough to list."""
    slow = [case for case in cases if case.seconds >= at_least][:shown]
    if not slow:
        return []
    lines = [
        f"the {len(slow)} slowest case(s) over {at_least:g} s, in seconds summed over their "
        "items (over every worker under -n); build: the model and its eager run"
    ]
    width = max(len(f"{case.seconds:.1f}") for case in slow)
    for case in slow:
        parts = [("build", case.build)]
        parts += [(f"capture {path}", s) for path, s in sorted(case.captures.items())]
        checks = sorted(case.checks.items(), key=lambda part: (-part[1], part[0]))
        parts += [(f"{name}*" if name in case.first else name, s) for name, s in checks]
        shown_parts = ", ".join(f"{name} {s:.1f}" for name, s in parts if round(s, 1) > 0)
        lines.append(f"{case.seconds:>{width}.1f} s  {case.case}: {shown_parts or 'no split'}")
    if any(case.first for case in slow):
        lines.append(
            "*: holds the first item of a process, and so the imports it was first to need"
        )
    return lines


def item_time(nodeid: str, seconds: float, properties: Mapping[str, Any]) -> ItemTime | None:
    """An item's time from its phases' seconds and user properties (None if it is not
    a YAML case's item: a broken case file's, or a test using the fixture)."""
    case, check = properties.get("exportcheck_case"), properties.get("exportcheck_check")
    if not case or not check:
        return None
    captured = properties.get(CAPTURED_PROPERTY)
    return ItemTime(
        case=f"{nodeid.split('::', 1)[0]}::{case}",
        check=str(check),
        seconds=seconds,
        build=_seconds(properties.get(BUILD_PROPERTY)),
        first=bool(properties.get(FIRST_PROPERTY)),
        captured={str(k): _seconds(v) for k, v in captured.items()}
        if isinstance(captured, dict)
        else {},
    )


def _seconds(value: Any) -> float:
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return 0.0


class SlowestCases:
    """Gathers item times from reports (the controller's, under xdist) and prints the
    section at the end. Registered apart from the report plugin (``hooks.py``): a
    section of its own, with nothing to share but the reports."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._seconds: dict[str, float] = defaultdict(float)  # node id -> all phases
        self._properties: dict[str, dict[str, Any]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        if "exportcheck_case" not in properties:
            return
        self._seconds[report.nodeid] += float(getattr(report, "duration", 0.0) or 0.0)
        self._properties.setdefault(report.nodeid, {}).update(properties)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.config.get_verbosity() < 0:  # -q: the counts only
            return
        items = (item_time(n, self._seconds[n], props) for n, props in self._properties.items())
        lines = render(case_times(item for item in items if item is not None))
        if lines:
            terminalreporter.section(SECTION)
            for line in lines:
                terminalreporter.line(line)
