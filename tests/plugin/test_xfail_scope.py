"""An xfail with `stage:` and `match:` absorbs the failure it was written for, and only that."""

from __future__ import annotations

import pytest
from casekit import write_cases

# PythonCounter's Python-side count is baked into the graph: mutation fails with
# "... eager mutated {} ..." wording that the matches below look for.
CASE = """
cases:
  counter:
    description: python-side state baked into the graph
    model: {{target: models.py:PythonCounter}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    checks: [mutation]
    xfail:
      reason: python-side state is baked into the graph
      {scope}
"""


def run(pytester: pytest.Pytester, scope: str) -> pytest.RunResult:
    write_cases(pytester, CASE.format(scope=scope))
    return pytester.runpytest("--exportcheck", "-rxX")


def test_the_failure_it_expects_is_absorbed(project: pytest.Pytester) -> None:
    result = run(project, "stage: mutation\n      match: 'outside tolerance'")
    result.assert_outcomes(xfailed=1)


def test_a_failure_of_another_stage_is_not_absorbed(project: pytest.Pytester) -> None:
    result = run(project, "stage: capture")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "[[]mutation[]] expected xfail (stage capture) at cases/main.yaml:8, got: "
            "[[]mutation[]] *",
        ]
    )


def test_a_failure_the_match_does_not_find_is_not_absorbed(project: pytest.Pytester) -> None:
    result = run(project, "stage: mutation\n      match: 'view size is not compatible'")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "[[]mutation[]] expected xfail (stage mutation, match 'view size is not "
            "compatible') at cases/main.yaml:8, got: [[]mutation[]] after step 2/3: output: *",
        ]
    )


def test_a_match_that_is_no_regular_expression_is_a_case_error(project: pytest.Pytester) -> None:
    result = run(project, "match: 'view size ('")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["[[]case[]] cases/main.yaml:9: xfail match 'view size (' is not a regular expression*"]
    )


def test_an_xfail_over_several_checks_may_name_their_stages(project: pytest.Pytester) -> None:
    result = run(project, "stage: [parity, mutation]\n      match: outside tolerance")
    result.assert_outcomes(xfailed=1)
    refused = run(project, "stage: [parity, capture]")
    refused.stdout.fnmatch_lines(["*expected xfail (stage parity or capture) at *, got: *"])
