"""What a check of a given model returns or raises: items, the report, the two errors.

Plain data, importing neither torch nor the checks: the ``exportcheck`` fixture
is registered in every pytest run, and ``api/given.py`` (which runs the items)
builds these without depending on the entry point in ``api/check.py``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pytest_exportcheck.items.gaps import Gap
from pytest_exportcheck.spec.errors import SpecError

if TYPE_CHECKING:
    from pytest_exportcheck.spec import Case

Outcome = Literal["passed", "failed", "skipped", "xfailed"]


class InvalidCase(SpecError, ValueError):
    """The call's arguments do not make a valid case; located at the caller's line.

    A :class:`SpecError` (the YAML loader's error, same wording) and a
    ``ValueError`` (what a Python caller expects for a bad argument).
    """


@dataclass(frozen=True)
class ItemResult:
    """One (check, capture, device) of a call, named as the YAML item would be."""

    name: str
    check: str
    capture: str
    device: str
    outcome: Outcome
    # The skip reason, or the failure as the plugin's item prints it.
    message: str = ""
    headline: str = ""
    seconds: float = 0.0
    max_abs_err: float | None = None
    # Where it failed or xfailed: the [stage] its message starts with (an xfail's `stage:`).
    stage: str = ""
    # On a pass: what its check did not verify, as {check, what, why} (gaps.py); under
    # strict gaps such an item fails instead, naming them.
    gaps: tuple[dict[str, str], ...] = ()
    # How many tensor pairs its check compared at a tolerance (0: no values, so no
    # max_abs_err); None where the check did not run.
    compared: int | None = None

    @property
    def gap_texts(self) -> list[str]:
        """Each gap as the terminal prints it: ``what: why``."""
        return [gap_text(gap) for gap in self.gaps]


def gap_text(gap: dict[str, str]) -> str:
    """``what: why``, as every surface of the plugin reads a gap (items/gaps.py)."""
    found = Gap.from_json(gap)
    return found.text() if found is not None else str(gap)


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
