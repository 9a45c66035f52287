"""A time limit holds whatever the model does about it: an item that ran past it fails
``[timeout]``, saying what the model did, and the good case beside it passes."""

from __future__ import annotations

import pytest
from hostilekit import hostile_case, write_hostile


def defeats(how: str) -> str:
    target = f"{{target: hostile.py:DefeatsTimeLimit, kwargs: {{how: {how}, seconds: 1.5}}}}"
    return hostile_case("defeats", target, captures="[export]", checks="[parity]", timeout="1")


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("swallow", "the model caught the time limit's exception * time(s)*"),
        ("replace handler", "the model replaced the SIGALRM handler*"),
        ("cancel timer", "the model cancelled the SIGALRM timer*"),
    ],
    ids=["swallowed", "handler replaced", "timer cancelled"],
)
def test_a_defeated_time_limit_still_fails_the_item(
    hostile: pytest.Pytester, how: str, said: str
) -> None:
    write_hostile(hostile, defeats(how))
    # In a process of its own: a limit that fires again lands wherever the run is, torch's
    # internals included, and may leave torch's state behind for the tests after it.
    result = hostile.runpytest_subprocess("--exportcheck", "-p", "no:xdist")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        [f"[[]timeout[]] cases/hostile.yaml:2: still in the eager stage after 1 s *; {said}"]
    )


def forever() -> str:
    target = "{target: hostile.py:DefeatsTimeLimit, kwargs: {how: swallow, seconds: 100000}}"
    return hostile_case("forever", target, captures="[export]", checks="[parity]", timeout="1")


# The same ten refires, every 0.2 s rather than every second: 2 s of waiting, not 10.
REFIRING_FAST = """
from pytest_exportcheck.containment import stages

stages.REFIRE_SECONDS = 0.2
"""


def write_forever(hostile: pytest.Pytester) -> None:
    write_hostile(hostile, forever())
    (hostile.path / "cases" / "conftest.py").write_text(REFIRING_FAST)


ENDED = (
    "[[]timeout[]] cases/hostile.yaml:2: still in the eager stage after 1 s (the case's "
    "timeout); the model caught the time limit's exception 10 time(s) and went on, * s in all"
)


def test_a_limit_swallowed_forever_ends_the_run_naming_the_item(hostile: pytest.Pytester) -> None:
    # A loop catching every BaseException: the limit and ten refires, then the process ends.
    write_forever(hostile)
    result = hostile.runpytest_subprocess("--exportcheck", "-p", "no:xdist", timeout=60)
    assert result.ret == 1
    result.stderr.fnmatch_lines(
        [
            "exportcheck: the run ended while running cases/hostile.yaml::forever::"
            f"parity[[]export-cpu[]]: {ENDED}; the process running it is ended"
        ]
    )


def test_a_limit_swallowed_forever_under_xdist_costs_a_worker_not_the_run(
    hostile: pytest.Pytester,
) -> None:
    write_forever(hostile)
    result = hostile.runpytest_subprocess("--exportcheck", "-n", "2", timeout=90)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        [f"*died in the eager stage of this item (ended on purpose: {ENDED})*"]
    )


API_ALARMS = """
import signal
import time

import torch

from pytest_exportcheck.api import check_model


def test_tiny_timeouts_leave_no_alarm_armed():
    for timeout in (1e-9, 1e-6, 1e-3):
        try:
            check_model(torch.nn.Linear(2, 2), (torch.randn(1, 2),), timeout=timeout)
        except Exception:
            pass  # the item failed [timeout]: what it should do
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL


def test_a_plain_test_after_them_is_not_interrupted():
    time.sleep(1.5)  # past any refire interval a leftover timer would fire at


def test_the_callers_alarm_is_put_back_less_the_time_taken():
    fired = []
    handler = lambda signum, frame: fired.append(signum)  # noqa: E731
    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 30.0)
    try:
        check_model(torch.nn.Linear(2, 2), (torch.randn(1, 2),), timeout=20)
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert signal.getsignal(signal.SIGALRM) is handler
        assert 0 < left < 30.0 and not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
"""


def test_the_python_apis_time_limit_restores_the_alarm_it_found(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_api_alarms=API_ALARMS)
    result = pytester.runpytest_subprocess("-p", "no:xdist", timeout=120)
    result.assert_outcomes(passed=3)
    assert result.ret == 0
