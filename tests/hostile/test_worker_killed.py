"""A worker the kernel kills (SIGKILL, as its out-of-memory killer does) is named as
such with its last measured memory, and the rest of the capture it died on is not sent
to the next worker to die on."""

from __future__ import annotations

import pytest
from hostilekit import hostile_case, write_hostile


def test_a_killed_worker_is_named_and_its_capture_is_not_run_again(
    hostile: pytest.Pytester,
) -> None:
    target = "{target: hostile.py:KilledInMutationCheck}"
    case = hostile_case("killed", target, captures="[export]", checks="[mutation, parity]")
    write_hostile(hostile, case)
    result = hostile.runpytest("--exportcheck", "-n", "2")
    result.stdout.fnmatch_lines(
        [
            "*[[]crashed[]] cases/hostile.yaml:2: worker gw? died in the mutation stage of this "
            "item (killed by SIGKILL, likely the kernel's out-of-memory killer); its peak "
            "memory when last measured: * MiB; an out-of-memory kill leaves no traceback*; "
            "the export capture's other items on cpu are not run*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*[[]crashed[]] not run: an item of the export capture on cpu "
            "(cases/hostile.yaml::killed::mutation[[]export-cpu[]]) got worker gw? killed, "
            "likely for memory*",
        ]
    )
    assert result.stdout.str().count("replacing crashed worker") == 1
    result.assert_outcomes(passed=1, failed=2)


def test_with_no_restarts_left_the_crash_says_the_run_stops_and_the_unrun_are_listed(
    hostile: pytest.Pytester,
) -> None:
    target = "{target: hostile.py:Aborts}"
    many = "".join(
        hostile_case(f"good{i}", "{target: hostile.py:Good}", captures="[export]",
                     checks="[signature, parity]")
        for i in range(4)
    )  # fmt: skip
    write_hostile(hostile, hostile_case("aborts", target, captures="[export]"), many)
    result = hostile.runpytest("--exportcheck", "-n", "2", "--max-worker-restart", "0")
    result.stdout.fnmatch_lines(
        [
            "*[[]crashed[]] cases/hostile.yaml:2: worker gw? died in the * stage of this item*; "
            "xdist's --max-worker-restart is used up, so no new worker is started: the run "
            "stops, and the items it did not run are listed at its end",
        ]
    )
    assert "the rest of the run goes on" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        ["exportcheck: the run stopped at a crashed worker (--max-worker-restart used up): "
         "* item(s) not run: cases/hostile.yaml::*"]
    )  # fmt: skip
