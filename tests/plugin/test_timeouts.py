"""A hang fails its item as [timeout], naming the stage it hung in; the run goes on."""

from __future__ import annotations

import pytest
from casekit import MLP_CASE, write_cases

HANGS = """
cases:
  hangs:
    description: never returns
    model: {{target: models.py:{model}}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    timeout: 0.5
  fine:
    description: a plain MLP
    model: {{target: models.py:Mlp}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
"""


def test_a_hanging_eager_forward_times_out_in_the_eager_stage(
    project: pytest.Pytester, dist: list[str]
) -> None:
    write_cases(project, HANGS.format(model="HangsInForward"))
    result = project.runpytest("--exportcheck", *dist)
    result.assert_outcomes(passed=5, failed=5)
    result.stdout.fnmatch_lines(
        [
            "*[[]timeout[]] cases/main.yaml:2: still in the eager stage after 0.5 s "
            "(the case's timeout); stopped, the rest of the run goes on"
        ]
    )


def test_a_hanging_export_times_out_in_the_capture_stage_once(project: pytest.Pytester) -> None:
    write_cases(project, HANGS.format(model="HangsWhileExported"))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(passed=5, failed=5)
    out = result.stdout.str()
    assert out.count("still in the capture stage after 0.5 s") >= 4
    # the capture is remembered as failed: the other items point at the full report
    assert out.count("(full report on cases/main.yaml::hangs::signature[export-cpu])") == 4


def test_the_ini_option_sets_the_default_limit(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("Mlp", "HangsInForward"))
    project.makeini("[pytest]\nexportcheck_timeout = 0.5\n")
    result = project.runpytest("--exportcheck", "-k", "signature")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*still in the eager stage after 0.5 s (exportcheck_timeout)*"])


def test_a_timeout_is_not_absorbed_by_an_xfail(project: pytest.Pytester) -> None:
    write_cases(
        project,
        HANGS.format(model="HangsWhileExported").replace(
            "    timeout: 0.5\n", "    timeout: 0.5\n    xfail: {reason: export fails}\n"
        ),
    )
    result = project.runpytest("--exportcheck", "-k", "hangs and signature")
    result.assert_outcomes(failed=1)


def test_a_bad_timeout_is_a_usage_error(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    result = project.runpytest("--exportcheck", "--exportcheck-timeout", "soon")
    result.stderr.fnmatch_lines(["*exportcheck_timeout must be a number of seconds *, not 'soon'"])


def test_a_model_file_that_hangs_in_its_import_times_out_in_the_case_stage(
    project: pytest.Pytester,
) -> None:
    # The case's own file, not a library: its import is stopped at the limit, not waited for.
    (project.path / "cases" / "hangs_on_import.py").write_text(
        "import time\n\nwhile True:\n    time.sleep(0.01)\n"
    )
    write_cases(
        project, HANGS.format(model="Mlp").replace("models.py:Mlp", "hangs_on_import.py:Net", 1)
    )
    result = project.runpytest("--exportcheck", "-k", "signature")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*[[]timeout[]] cases/main.yaml:2: still in the case stage after 0.5 s (the case's timeout)*"
        ]
    )
    assert result.duration < 20  # stopped at its limit, not after the deferrals' 30 s
