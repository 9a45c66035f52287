"""Tolerance policies chosen in the case: fp64 arbitration, cosine, allowed mismatch, overrides."""

from __future__ import annotations

import pytest
from casekit import write_cases

BF16 = """
cases:
  compounding:
    description: eager rounds thirty times in bfloat16, the export once
    model: {{target: models.py:Compounding, kwargs: {{factor: {factor}}}}}
    inputs: {{args: [{{shape: [64, 64], dtype: bfloat16}}]}}
    checks: [parity]
    expect:
      parity: {parity}
"""


def run(pytester: pytest.Pytester, factor: float, parity: str) -> pytest.RunResult:
    write_cases(pytester, BF16.format(factor=factor, parity=parity))
    return pytester.runpytest("--exportcheck")


def test_plain_allclose_fails_on_bf16_noise_alone(project: pytest.Pytester) -> None:
    result = run(project, 1.01, "{policy: allclose}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*output: * / 4096 elements outside tolerance (atol=1e-05, rtol=0.016, bfloat16 default)*"]
    )
    result.stdout.no_fnmatch_line("*fp64 reference*")


def test_the_default_policy_lets_fp64_arbitrate_bf16_noise(project: pytest.Pytester) -> None:
    run(project, 1.01, "{}").assert_outcomes(passed=1)


def test_the_default_policy_fails_a_real_error_with_both_distances(
    project: pytest.Pytester,
) -> None:
    result = run(project, 1.02, "{}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*output: * / 4096 elements outside tolerance (atol=1e-05, rtol=0.016, bfloat16 "
            "default)*; vs the fp64 reference ep.module() rmse 0.4* > 2 x eager rmse 0.04* + "
            "1e-06 (policy auto)*"
        ]
    )


def test_fp64_arbitration_passes_the_noise(project: pytest.Pytester) -> None:
    run(project, 1.01, "{policy: fp64}").assert_outcomes(passed=1)


def test_fp64_arbitration_still_fails_a_real_error(project: pytest.Pytester) -> None:
    result = run(project, 1.02, "{policy: fp64}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*; vs the fp64 reference ep.module() rmse 0.4* > 2 x eager rmse 0.04* + 1e-06 "
            "(policy fp64)*"
        ]
    )


def test_the_fp64_multiplier_is_the_case_s(project: pytest.Pytester) -> None:
    # The export is ~20x closer to the truth than eager: a multiplier of 0.01 fails it.
    result = run(project, 1.01, "{policy: fp64, fp64_multiplier: 0.01}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*> 0.01 x eager rmse*(policy fp64)*"])


def test_cosine_accepts_noise_and_rejects_a_wrong_direction(project: pytest.Pytester) -> None:
    run(project, 1.01, "{policy: cosine, cosine: 0.999}").assert_outcomes(passed=1)
    result = run(project, 1.01, "{policy: cosine, cosine: 0.9999999}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*; cosine similarity 0.99* < 1 (policy cosine)*"])


def test_an_allowed_mismatch_fraction(project: pytest.Pytester) -> None:
    run(project, 1.01, "{max_mismatch: 0.99}").assert_outcomes(passed=1)
    result = run(project, 1.01, "{policy: allclose, max_mismatch: 0.01}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*bfloat16 default, 0.01 of elements allowed)*"])


def test_an_override_applies_to_its_dtype_only(project: pytest.Pytester) -> None:
    strict = "{policy: allclose, overrides: [{dtype: %s, policy: fp64}]}"
    run(project, 1.01, strict % "bfloat16").assert_outcomes(passed=1)
    result = run(project, 1.01, strict % "float16")
    result.assert_outcomes(failed=1)


def test_an_override_applies_to_its_device(project: pytest.Pytester) -> None:
    strict = "{policy: allclose, overrides: [{device: %s, policy: fp64}]}"
    run(project, 1.01, strict % "cpu").assert_outcomes(passed=1)
    run(project, 1.01, strict % "cuda").assert_outcomes(failed=1)


def test_an_override_may_turn_arbitration_off(project: pytest.Pytester) -> None:
    result = run(project, 1.01, "{overrides: [{dtype: bfloat16, policy: allclose}]}")
    result.assert_outcomes(failed=1)
    result.stdout.no_fnmatch_line("*fp64 reference*")
