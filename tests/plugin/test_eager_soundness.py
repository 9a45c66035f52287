"""Eager must be fit to be the reference: NaN/Inf, RNG dependence and non-determinism fail
the value checks as [eager], saying what was seen; structure checks still run."""

from __future__ import annotations

import pytest
from casekit import write_cases

CASE = """
cases:
  subject:
    description: eager unfit as a reference
    model: {{target: models.py:{model}{mode}}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    checks: [signature, parity, mutation]
{expect}"""


def case(model: str, mode: str = "", expect: str = "") -> str:
    return CASE.format(model=model, mode=f", mode: {mode}" if mode else "", expect=expect)


def test_a_nan_output_fails_the_value_checks_counting_the_nans(
    project: pytest.Pytester,
) -> None:
    write_cases(project, case("LogOfInput"))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(passed=1, failed=2)  # signature does not look at values
    result.stdout.fnmatch_lines(
        [
            "*[[]eager[]] cases/main.yaml:2: eager output holds non-finite values: "
            "output: * NaN of 8 elements. NaN matches NaN, so the value checks would pass "
            "on garbage*"
        ]
    )


def test_declared_non_finite_outputs_are_compared_as_they_are(project: pytest.Pytester) -> None:
    expect = "    expect: {parity: {allow_nonfinite: true}}\n"
    write_cases(project, case("LogOfInput", expect=expect))
    project.runpytest("--exportcheck").assert_outcomes(passed=3)


def test_dropout_left_active_fails_as_rng_dependent_naming_the_mode(
    project: pytest.Pytester,
) -> None:
    write_cases(project, case("DropoutMlp", mode="train"))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*[[]eager[]] cases/main.yaml:2: eager output depends on the RNG: calls under "
            "seeds 0 and 1 differ (output: *). Dropout or another random op is active "
            "(the case builds it in train mode)*expect.parity.random: true*"
        ]
    )


def test_the_same_model_in_eval_mode_passes(project: pytest.Pytester) -> None:
    write_cases(project, case("DropoutMlp"))
    project.runpytest("--exportcheck").assert_outcomes(passed=3)


def test_a_declared_random_forward_is_compared_under_one_seed(project: pytest.Pytester) -> None:
    expect = "    expect: {parity: {random: true}}\n"
    write_cases(project, case("DropoutMlp", mode="train", expect=expect))
    project.runpytest("--exportcheck").assert_outcomes(passed=3)


def test_an_output_no_seed_fixes_fails_as_not_deterministic(project: pytest.Pytester) -> None:
    expect = "    expect: {parity: {random: true}}\n"  # even a declared random forward
    write_cases(project, case("CountsItsCalls", expect=expect))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*[[]eager[]] cases/main.yaml:2: eager is not deterministic: two calls under the "
            "same seed on fresh copies differ beyond the case's tolerance (output: *"
        ]
    )
