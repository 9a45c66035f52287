"""What a check of a given model returns or raises: items, the report, the two errors.

Plain data, importing neither torch nor the checks: the ``exportcheck`` fixture
is registered in every pytest run, and ``api/given.py`` (which runs the items)
builds these without depending on the entry point in ``api/check.py``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_exportcheck.items.item_results import ItemResult, Outcome, gap_text
from pytest_exportcheck.spec.errors import SpecError

if TYPE_CHECKING:
    from pytest_exportcheck.spec import Case


class InvalidCase(SpecError, ValueError):
    """The call's arguments do not make a valid case; located at the caller's line.

    A :class:`SpecError` (the YAML loader's error, same wording) and a
    ``ValueError`` (what a Python caller expects for a bad argument).
    """


@dataclass(frozen=True)
class Report:
    """What a call ran: one :class:`ItemResult` per item, in the YAML collection order."""

    case: Case
    items: tuple[ItemResult, ...]

    def names(self, outcome: Outcome) -> list[str]:
        return [item.name for item in self.items if item.outcome == outcome]

    def to_json(self) -> dict[str, Any]:
        """What the ``exportcheck`` fixture leaves on the test's report (``user_properties``):
        plain JSON, so it survives xdist and the report plugin reads it without torch."""
        return {
            "case": self.case.name,
            "line": self.case.line,
            "items": [dataclasses.asdict(item) for item in self.items],
        }

    @property
    def passed(self) -> list[str]:
        return self.names("passed")

    @property
    def failed(self) -> list[str]:
        return self.names("failed")

    @property
    def skipped(self) -> list[str]:
        return self.names("skipped")

    @property
    def xfailed(self) -> list[str]:
        return self.names("xfailed")

    @property
    def ran(self) -> list[str]:
        """Items that ran (passed, failed or xfailed): empty means nothing was checked."""
        return [item.name for item in self.items if item.outcome != "skipped"]

    def __getitem__(self, name: str) -> ItemResult:
        for item in self.items:
            if item.name == name:
                return item
        raise KeyError(f"no item {name!r}; items: {', '.join(i.name for i in self.items)}")

    def __str__(self) -> str:
        """One line an item, as the terminal's matrix tells it: a pass with gaps says
        how many, and each gap follows on a line of its own, as ``what: why``."""
        lines = [f"exportcheck {self.case.name} ({self.case.location}):"]
        for item in self.items:
            detail = item.headline or (item.message.splitlines() or [""])[0]
            if item.gaps:
                detail = f"with {len(item.gaps)} gap(s): what the check did not verify"
            lines.append(f"  {item.outcome:8} {item.name}" + (f"  {detail}" if detail else ""))
            lines += [f"    - {gap_text(gap)}" for gap in item.gaps]
        return "\n".join(lines)


class ExportCheckFailed(AssertionError):
    """Every failing item of one call, each told as the plugin's item tells it."""

    def __init__(self, report: Report) -> None:
        self.report = report
        failed = [item for item in report.items if item.outcome == "failed"]
        more = f" (+{len(failed) - 1} more)" if len(failed) > 1 else ""
        # The first line is what pytest's short summary shows: make it the first headline.
        lines = [
            f"{len(failed)} of {len(report.ran)} exportcheck item(s) failed for "
            f"{report.case.name}: {failed[0].headline}{more}"
        ]
        for item in failed:
            lines += ["", f"--- {item.name} ---", item.message]
        super().__init__("\n".join(lines))
