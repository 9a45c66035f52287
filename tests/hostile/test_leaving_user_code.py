"""A model that leaves by the back door fails its own case at the stage it left, once;
the process goes on, the good case beside it passes, and the run exits 1."""

from __future__ import annotations

import pytest
from hostilekit import hostile_case, write_hostile

ITEMS = {"captures": "[export]", "checks": "[signature, parity]"}


def leaves(how: str, name: str = "leaves") -> str:
    return hostile_case(name, f"{{target: hostile.py:Leaves, kwargs: {{how: {how}}}}}", **ITEMS)


EXITS = [
    ("sys.exit", "SystemExit: 3"),
    ("GeneratorExit", "GeneratorExit: closed"),
    ("BaseException", "OwnBaseException: a model's own BaseException"),
    ("unprintable", "Unprintable: <unprintable Unprintable object>"),
]


@pytest.mark.parametrize(("how", "shown"), EXITS)
def test_an_exit_from_forward_is_the_eager_stages_error_reported_once(
    hostile: pytest.Pytester, how: str, shown: str
) -> None:
    write_hostile(hostile, leaves(how))
    result = hostile.runpytest("--exportcheck", "-p", "no:xdist")
    result.assert_outcomes(failed=2, passed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            f"[[]eager[]] cases/hostile.yaml:2: the eager forward raised: {shown}",
            "raised from user code:",
            "*cases/hostile.py*in forward",
        ]
    )
    # The other item points at the full report; the model is not run again for it.
    result.stdout.fnmatch_lines(["(full report on cases/hostile.yaml::leaves::*)"])
    assert "Traceback" not in result.stdout.str()


def test_under_xdist_each_exit_is_its_own_cases_error_and_the_worker_goes_on(
    hostile: pytest.Pytester,
) -> None:
    """One worker meets every exit above in turn: each fails its own case's items, the
    worker outlives them all, and the good case after them passes."""
    write_hostile(hostile, *(leaves(how, f"leaves{n}") for n, (how, _) in enumerate(EXITS)))
    result = hostile.runpytest("--exportcheck", "-n", "1")
    result.assert_outcomes(failed=2 * len(EXITS), passed=1)
    for number, (_, shown) in enumerate(EXITS):
        result.stdout.fnmatch_lines(
            [f"[[]eager[]] cases/hostile.yaml:{2 + 6 * number}: the eager forward raised: {shown}"]
        )
    assert "Traceback" not in result.stdout.str()


def test_os_exit_in_forward_is_refused_and_the_run_reports_it(hostile: pytest.Pytester) -> None:
    # In its own process: were os._exit not refused, it would end the test run itself.
    # Unrefused, it stops the run mid-line with exit status 0: a false pass.
    write_hostile(hostile, leaves("os._exit"))
    result = hostile.runpytest_subprocess("--exportcheck", "-p", "no:xdist")
    result.assert_outcomes(failed=2, passed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "[[]eager[]] cases/hostile.yaml:2: the eager forward raised: ProcessExitCalled: "
            "os._exit(0) was called: it would end the test process on the spot*",
        ]
    )


def test_a_models_own_state_dict_runs_under_the_allocation_guard(hostile: pytest.Pytester) -> None:
    target = "{target: hostile.py:HugeStateDict}"
    write_hostile(hostile, hostile_case("huge", target, captures="[export]", checks="[hierarchy]"))
    result = hostile.runpytest("--exportcheck")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        ["- the model's own state_dict() raised: HugeTensorError: *1099511627776*"]
    )
    assert "[internal]" not in result.stdout.str()


def test_a_state_dict_that_cannot_allocate_is_the_models_error_not_internal(
    hostile: pytest.Pytester,
) -> None:
    target = "{target: hostile.py:StateDictCannotAllocate}"
    checks = "[signature, hierarchy]"
    write_hostile(hostile, hostile_case("sd", target, captures="[export]", checks=checks))
    result = hostile.runpytest("--exportcheck", "-p", "no:xdist")
    # The signature check reads persistence from the modules: it never calls state_dict().
    result.assert_outcomes(failed=1, passed=2)
    result.stdout.fnmatch_lines(
        ["*the model's own state_dict() raised: MemoryError: state_dict could not allocate*"]
    )
    assert "[internal]" not in result.stdout.str()


def test_a_dtype_mismatch_in_the_model_is_the_eager_stages_error(hostile: pytest.Pytester) -> None:
    target = "{target: hostile.py:MixedDtypes}"
    write_hostile(hostile, hostile_case("mixed", target, **ITEMS))
    result = hostile.runpytest("--exportcheck", "-p", "no:xdist")
    result.assert_outcomes(failed=2, passed=1)
    result.stdout.fnmatch_lines(
        ["[[]eager[]] cases/hostile.yaml:2: the eager forward raised: RuntimeError: mat1 and "
         "mat2 must have the same dtype*"]
    )  # fmt: skip
    assert "[internal]" not in result.stdout.str()
