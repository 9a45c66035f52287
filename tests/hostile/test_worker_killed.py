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
