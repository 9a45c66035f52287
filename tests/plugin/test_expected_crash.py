"""An xfail with `stage: crashed` expects a worker's death (a segfault in torch): the
crashed item is xfailed, still named as a crash; any other xfail leaves it a failure that
says what the xfail expected. One worker: its death, its replacement and the items after
it are what a crash under xdist is; a second worker adds nothing these tests read."""

from __future__ import annotations

import json

import pytest
from casekit import write_cases

SEGFAULTS = """
cases:
  segfaults:
    description: kills its process with SIGSEGV when parity runs it
    model: {{target: models.py:SegfaultsInParity}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    captures: [export]
    checks: [parity]
    xfail:
      reason: torch's kernel segfaults here
      {xfail}
"""


def test_a_crash_its_xfail_expects_is_xfailed_and_still_named_a_crash(
    project: pytest.Pytester,
) -> None:
    xfail = "stage: crashed\n      match: 'died in the parity stage .*killed by SIGSEGV'"
    write_cases(project, SEGFAULTS.format(xfail=xfail))
    result = project.runpytest(
        "--exportcheck", "-n", "1", "-rx", "--exportcheck-report=report.json"
    )
    result.assert_outcomes(xfailed=1)
    assert result.ret == 0
    out = result.stdout.str()
    assert "replacing crashed worker" in out  # the worker is still replaced
    result.stdout.fnmatch_lines(
        [
            "exportcheck: 1 item(s) killed their worker, as their xfail (stage crashed) "
            "expects; each cost a worker:",
            "  cases/main.yaml::segfaults::parity[[]export-cpu[]]: [[]crashed[]] "
            "cases/main.yaml:2: worker gw? died in the parity stage of this item "
            "(killed by SIGSEGV)",
            "*short test summary info*",
            "XFAIL cases/main.yaml::segfaults::parity[[]export-cpu[]] - torch's kernel "
            "segfaults here",
        ]
    )
    (item,) = json.loads((project.path / "report.json").read_text())["items"]
    assert (item["outcome"], item["stage"], item["reason"]) == (
        "xfailed", "crashed", "torch's kernel segfaults here"
    )  # fmt: skip
    assert "(killed by SIGSEGV)" in item["message"]


def test_a_crash_its_xfail_does_not_expect_fails_saying_what_it_expected(
    project: pytest.Pytester,
) -> None:
    # Another signal, and an xfail written for a finding of the same stage.
    signal = "stage: crashed\n      match: 'SIGKILL'"
    finding = "stage: parity\n      match: 'elements outside tolerance'"
    write_cases(
        project,
        SEGFAULTS.format(xfail=signal)
        + SEGFAULTS.format(xfail=finding).replace("cases:\n  segfaults:", "  finding:"),
    )
    result = project.runpytest("--exportcheck", "-n", "1")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines_random(
        [
            "*[[]crashed[]] expected xfail (stage crashed, match 'SIGKILL') at "
            "cases/main.yaml:9, got: [[]crashed[]] cases/main.yaml:2: worker gw? died in "
            "the parity stage of this item (killed by SIGSEGV)*",
            "*[[]crashed[]] expected xfail (stage parity, match 'elements outside tolerance'; "
            "a crash is expected only by an xfail with stage crashed) at cases/main.yaml:20, "
            "got: [[]crashed[]] cases/main.yaml:13: worker gw? died in the parity stage*",
        ]
    )


def test_strict_and_non_strict_differ_where_the_expected_crash_does_not_come(
    project: pytest.Pytester,
) -> None:
    text = SEGFAULTS.replace("SegfaultsInParity", "Mlp")
    strict = text.format(xfail="stage: crashed")
    lenient = text.format(xfail="stage: crashed\n      strict: false")
    write_cases(project, strict + lenient.replace("cases:\n  segfaults:", "  lenient:"))
    # No crash comes, so no worker is needed to see it not come: one process.
    result = project.runpytest("--exportcheck", "-p", "no:xdist")
    # strict: the crash is gone, so is the reason for the xfail; non-strict: xpassed
    result.assert_outcomes(failed=1, xpassed=1)
    result.stdout.fnmatch_lines(["*segfaults::parity*XPASS(strict)*"])


def test_the_items_a_crash_condemns_are_xfailed_by_the_same_xfail(
    project: pytest.Pytester,
) -> None:
    text = """
cases:
  aborts:
    description: kills its process in eager
    model: {target: models.py:AbortsInForward}
    inputs: {args: [{shape: [2, 4]}]}
    captures: [export, export-strict]
    xfail: {reason: eager aborts, stage: crashed, match: SIGABRT}
"""
    write_cases(project, text)
    result = project.runpytest("--exportcheck", "-n", "1", "-rx")
    # The item that crashed and those not run after it ("... on cpu (by SIGABRT, ...)").
    result.assert_outcomes(xfailed=11)
    assert result.ret == 0
