"""A model that kills its xdist worker fails its case as [crashed]; the run goes on."""

from __future__ import annotations

import json

import pytest
from casekit import write_cases

CRASHES = """
cases:
  crashes:
    description: kills the process it runs in
    model: {{target: models.py:{model}}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    captures: [{captures}]
  fine:
    description: a plain MLP
    model: {{target: models.py:Mlp}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
"""


def test_a_crash_in_eager_fails_the_item_naming_the_stage_and_the_case_line(
    project: pytest.Pytester,
) -> None:
    write_cases(project, CRASHES.format(model="AbortsInForward", captures="export"))
    result = project.runpytest("--exportcheck", "-n", "2", "--exportcheck-report=report.json")
    result.stdout.fnmatch_lines(
        [
            "*[[]crashed[]] cases/main.yaml:2: worker gw? died in the eager stage of this item*"
            "the case's other items on cpu are not run; the rest of the run goes on",
        ]
    )
    result.assert_outcomes(passed=5, failed=5)
    # ... and so say the matrix and the JSON report
    result.stdout.fnmatch_lines(["  crashes *FFFFF", "10 items: 5 passed, 5 failed"])
    items = json.loads((project.path / "report.json").read_text())["items"]
    crashed = [i for i in items if i["outcome"] == "failed"]
    assert {i["stage"] for i in crashed} == {"crashed"}
    assert {(i["file"], i["line"]) for i in crashed} == {("cases/main.yaml", 2)}


def test_the_rest_of_a_crashed_case_fails_at_once_without_killing_more_workers(
    project: pytest.Pytester,
) -> None:
    write_cases(project, CRASHES.format(model="AbortsInForward", captures="export, export-strict"))
    result = project.runpytest("--exportcheck", "-n", "2")
    out = result.stdout.str()
    # export and export-strict are two units: at most one worker each, never a retry loop
    assert 1 <= out.count("replacing crashed worker") <= 2
    assert "maximum crashed workers reached" not in out
    result.stdout.fnmatch_lines(
        ["*[[]crashed[]] not run: this case killed worker gw? in the eager stage on cpu*"]
    )
    result.assert_outcomes(passed=5, failed=11)


def test_a_crash_in_a_capture_condemns_only_that_capture(project: pytest.Pytester) -> None:
    write_cases(project, CRASHES.format(model="AbortsWhileExported", captures="export"))
    result = project.runpytest("--exportcheck", "-n", "2")
    result.stdout.fnmatch_lines(
        [
            "*[[]crashed[]] cases/main.yaml:2: worker gw? died in the capture stage of this item*"
            "the export capture's other items on cpu are not run*",
            "*[[]crashed[]] not run: the export capture killed worker gw? in the capture stage*",
        ]
    )
    assert result.stdout.str().count("replacing crashed worker") == 1
    result.assert_outcomes(passed=5, failed=5)
