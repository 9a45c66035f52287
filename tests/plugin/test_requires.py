"""`requires:` — cases for third-party models skip, naming what is missing, instead of failing."""

from __future__ import annotations

from importlib import metadata

import pytest
from casekit import MLP_CASE, write_cases


def _requiring(requirement: str) -> str:
    return MLP_CASE.replace("inputs:", f"requires: [{requirement!r}]\n    inputs:")


def test_a_missing_distribution_skips_every_item_naming_it(project: pytest.Pytester) -> None:
    write_cases(project, _requiring("no-such-distribution-xyz"))
    result = project.runpytest("--exportcheck", "-rs")
    result.assert_outcomes(skipped=5)
    result.stdout.fnmatch_lines(["*the case needs no-such-distribution-xyz (not installed)*"])


def test_a_too_old_distribution_skips_naming_the_installed_version(
    project: pytest.Pytester,
) -> None:
    write_cases(project, _requiring("pyyaml>=999"))
    result = project.runpytest("--exportcheck", "-rs")
    result.assert_outcomes(skipped=5)
    installed = metadata.version("pyyaml")
    result.stdout.fnmatch_lines([f"*the case needs pyyaml>=999; installed: pyyaml {installed}*"])


def test_a_met_requirement_runs_the_case(project: pytest.Pytester) -> None:
    write_cases(project, _requiring("pyyaml>=5"))
    project.runpytest("--exportcheck").assert_outcomes(passed=5)


def test_a_malformed_requirement_is_a_case_error_at_its_line(project: pytest.Pytester) -> None:
    write_cases(project, _requiring("transformers >>= 4"))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*cases/main.yaml:5*requires: 'transformers >>= 4' is not a requirement like*"]
    )
