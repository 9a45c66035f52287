"""A time limit holds whatever the model does about it: an item that ran past it fails
``[timeout]``, saying what the model did, and the good case beside it passes."""

from __future__ import annotations

import pytest
from hostilekit import hostile_case, write_hostile


def defeats(how: str) -> str:
    target = f"{{target: hostile.py:DefeatsTimeLimit, kwargs: {{how: {how}}}}}"
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
