"""A crash a case's xfail expects: ``stage: crashed``, judged on the xdist controller.

An xdist worker that dies leaves only its breadcrumb (``containment/crashes.py``), and
the controller, which loads no cases, reports the item from it. So before an item runs
its worker writes the item's xfail into the breadcrumb (:func:`for_breadcrumb`: reason,
strict, stage, match, and the line it is written at), and the controller judges the
crash by it (:func:`judge`) as a worker judges a failure (``item_run.unless_expected``):

* a crash is expected only by an xfail whose ``stage`` names ``crashed``: an xfail
  written for a finding (``stage: parity``), or for any failure (no ``stage``), never
  hides a process that died;
* its ``match``, if any, is searched in the crash's text (``worker gw3 died in the
  lowered-aoti stage of this item (killed by SIGSEGV); ...``), which names the stage
  the worker was in and the signal that ended it;
* an expected crash is reported as pytest reports an xfail (skipped, with
  ``wasxfail``) and keeps its ``[crashed]`` text and stage, so the summary and the
  reports still show the crash and what it cost (a new worker); an unexpected one
  fails, naming what the xfail expected.

In one process a crash ends the session itself (``containment/supervisor.py``): the
items after it never run and no report is written, so no xfail can make that run pass;
the supervising parent fails it as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from pytest_exportcheck.spec.case import XfailSpec

if TYPE_CHECKING:
    from pytest_exportcheck.spec import Case

CRASHED = "crashed"  # the stage of a crashed item (its report's exportcheck_stage)


def expects_crashes(xfail: XfailSpec) -> bool:
    """Whether ``xfail`` is written for a crash (its ``stage`` names ``crashed``)."""
    return xfail.stages is not None and CRASHED in xfail.stages


def xfail_marker(xfail: XfailSpec) -> pytest.MarkDecorator:
    """pytest's xfail for an item. Only export's failures can be expected: a broken case
    or eager forward fails even under an xfail written for export. An item not run
    because its case or capture killed a worker (``WorkerCrash``) is expected by an xfail
    written for crashes only (its ``match`` then searched in the "not run" message)."""
    from pytest_exportcheck.containment.crashes import WorkerCrash
    from pytest_exportcheck.containment.failures import CaptureError, CheckFailure

    raises: tuple[type[Exception], ...] = (CaptureError, CheckFailure)
    if expects_crashes(xfail):
        raises += (WorkerCrash,)
    return pytest.mark.xfail(reason=xfail.reason, strict=xfail.strict, raises=raises)


def for_breadcrumb(xfail: XfailSpec | None, case: Case) -> dict[str, Any] | None:
    """The item's xfail as its worker writes it into the breadcrumb (plain JSON)."""
    if xfail is None:
        return None
    return {
        "reason": xfail.reason,
        "strict": xfail.strict,
        "stages": list(xfail.stages) if xfail.stages is not None else None,
        "match": xfail.match,
        "at": case.at(xfail.line) if xfail.line is not None else None,
    }


@dataclass(frozen=True)
class Verdict:
    """How the controller reports a crashed item."""

    text: str  # the report's longrepr: the crash, or what the xfail expected and the crash
    wasxfail: str | None = None  # the xfail's reason where it expects this crash


def judge(written: dict[str, Any] | None, crash_text: str) -> Verdict:
    """``crash_text`` (``[crashed] ...``) judged by the xfail its worker wrote, if any."""
    if written is None:
        return Verdict(crash_text)
    stages = written.get("stages")
    xfail = XfailSpec(
        reason=str(written.get("reason", "")),
        strict=bool(written.get("strict", True)),
        stages=tuple(stages) if stages is not None else None,
        match=written.get("match"),
    )
    if expects_crashes(xfail) and xfail.expects(CRASHED, crash_text):
        return Verdict(crash_text, wasxfail=xfail.reason)
    expected = xfail.describe() or "any failure"
    if not expects_crashes(xfail):
        expected += "; a crash is expected only by an xfail with stage crashed"
    where = f" at {written['at']}" if written.get("at") else ""
    return Verdict(f"[{CRASHED}] expected xfail ({expected}){where}, got: {crash_text}")


def expected_crash_lines(crashes: list[tuple[str, str]]) -> list[str]:
    """The summary's lines for crashes their xfail expected, ``(nodeid, crash text)``:
    each still cost a worker, and an xfailed item is otherwise one letter in a row."""
    if not crashes:
        return []
    lines = [
        f"exportcheck: {len(crashes)} item(s) killed their worker, as their xfail "
        "(stage crashed) expects; each cost a worker:"
    ]
    # The crash's first clause: where, which stage, which signal (not the advice after).
    lines += [f"  {nodeid}: {text.split('; ')[0]}" for nodeid, text in crashes[:10]]
    if len(crashes) > 10:
        lines.append(f"  and {len(crashes) - 10} more")
    return lines
