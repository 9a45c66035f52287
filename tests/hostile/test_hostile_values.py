"""Values the run cannot use are refused where they are written, naming the value and
the range allowed; never an internal error, never a silent "no limit"."""

from __future__ import annotations

import pytest
from hostilekit import hostile_case, write_hostile

GOOD_MODEL = "{target: hostile.py:Good}"


@pytest.mark.parametrize(
    ("setting", "refused"),
    [
        (
            "seed: 4294967296",
            "cases.bad.seed: 4294967296 is greater than the maximum of 4294967295",
        ),
        ("timeout: .inf", "cases.bad.timeout: inf is greater than the maximum of 86400"),
        ("timeout: 1.0e+300", "cases.bad.timeout: 1e+300 is greater than the maximum of 86400"),
        ("timeout: .nan", "timeout is nan: a setting must be a finite number"),
        (
            "expect: {parity: {atol: .nan}}",
            "expect.parity.atol is nan: a setting must be a finite number",
        ),
    ],
    ids=["seed past numpy's range", "infinite timeout", "huge timeout", "nan timeout", "nan atol"],
)
def test_a_setting_out_of_range_fails_its_case_at_its_line(
    hostile: pytest.Pytester, setting: str, refused: str
) -> None:
    key, value = setting.split(": ", 1)
    write_hostile(hostile, hostile_case("bad", GOOD_MODEL, **{key: value}))
    result = hostile.runpytest("--exportcheck")
    result.assert_outcomes(failed=1, passed=1)
    # At the line of the setting itself (the case opens on line 2).
    result.stdout.fnmatch_lines([f"[[]case[]] cases/hostile.yaml:6: {refused}"])


@pytest.mark.parametrize("value", ["inf", "nan", "-5", "1e9"])
def test_a_timeout_option_out_of_range_is_a_usage_error(
    hostile: pytest.Pytester, value: str
) -> None:
    write_hostile(hostile)
    result = hostile.runpytest("--exportcheck", f"--exportcheck-timeout={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --exportcheck-timeout / exportcheck_timeout must be a number of seconds "
            f"from 0 (no limit) to 86400, not '{value}'"
        ]
    )
