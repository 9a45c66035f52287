"""A model that changes process-wide state fails its own case, naming the change; the
state is put back, so the good case after it (in the same process) passes."""

from __future__ import annotations

import os
import re
import signal
import time

import pytest
from hostilekit import alive, hostile_case, write_hostile


def changes(what: str, name: str = "changes") -> str:
    target = f"{{target: hostile.py:ChangesProcessState, kwargs: {{what: {what}}}}}"
    return hostile_case(name, target, captures="[export]", checks="[signature, parity]")


CHANGES = [
    ("dtype", "torch.get_default_dtype(): torch.float32 -> torch.float64"),
    # Eager runs forward more than once (a second run checks it is deterministic).
    ("hook", "torch.nn.modules.module._global_forward_hooks: 0 hook(s) -> * (_scale_outputs*)"),
]
CHANGE_IDS = ["default dtype", "global hook"]


@pytest.mark.parametrize(("what", "named"), CHANGES, ids=CHANGE_IDS)
def test_a_leaked_change_fails_every_item_of_its_case_and_no_other(
    hostile: pytest.Pytester, what: str, named: str
) -> None:
    write_hostile(hostile, changes(what))
    result = hostile.runpytest("--exportcheck", "-p", "no:xdist")
    result.assert_outcomes(failed=2, passed=1)
    result.stdout.fnmatch_lines(
        [
            "[[]case[]] cases/hostile.yaml:2: the model changed process-wide state and left it "
            f"changed: {named} (put back: the cases after it run as they would alone)",
        ]
    )


def test_under_xdist_each_leaked_change_is_put_back_before_the_next_case(
    hostile: pytest.Pytester,
) -> None:
    """One worker runs both cases that leak, then the good one: each fails naming its
    own change only, and the good case passes."""
    write_hostile(hostile, *(changes(what, f"changes{n}") for n, (what, _) in enumerate(CHANGES)))
    result = hostile.runpytest("--exportcheck", "-n", "1")
    result.assert_outcomes(failed=2 * len(CHANGES), passed=1)
    for number, (_, named) in enumerate(CHANGES):
        result.stdout.fnmatch_lines(
            [
                f"[[]case[]] cases/hostile.yaml:{2 + 6 * number}: the model changed "
                f"process-wide state and left it changed: {named} (put back: *",
            ]
        )


INNOCENT = """
import torch


def test_an_innocent_linear_after_the_cases():
    x, weight = torch.ones(1, 2), torch.ones(3, 2)
    assert torch.equal(torch.nn.functional.linear(x, weight), torch.full((1, 3), 2.0))
    assert type(torch.export).__name__ == "module"
"""


@pytest.mark.parametrize(
    ("what", "named"),
    [
        ("function mode", "torch's function mode stack: none -> _AddOneToLinear*"),
        ("dispatch mode", "torch's dispatch mode stack: none -> _AddOneToAddmm*"),
        ("linear", "torch.nn.functional.linear replaced by *_linear_plus_one (*hostile.py:*)"),
        ("torch.export", "torch.export replaced by *_ExportsIdentity*"),
    ],
)
def test_a_mode_left_entered_or_a_function_replaced_is_named_and_undone(
    hostile: pytest.Pytester, what: str, named: str
) -> None:
    write_hostile(hostile, changes(what))
    hostile.makepyfile(test_innocent=INNOCENT)
    result = hostile.runpytest("--exportcheck", "cases", "test_innocent.py", "-p", "no:xdist")
    result.assert_outcomes(failed=2, passed=2)  # the good case and the innocent test pass
    result.stdout.fnmatch_lines(
        [
            "[[]case[]] cases/hostile.yaml:2: the model changed process-wide state and left it "
            f"changed: {named}*(put back: the cases after it run as they would alone)",
        ]
    )


def test_a_thread_left_running_fails_its_case_and_the_run_still_ends(
    hostile: pytest.Pytester,
) -> None:
    # In its own process: the point is that the process exits.
    target = "{target: hostile.py:LeavesThread}"
    write_hostile(hostile, hostile_case("threads", target, captures="[export]", checks="[parity]"))
    result = hostile.runpytest_subprocess("--exportcheck", "-p", "no:xdist", timeout=120)
    result.assert_outcomes(failed=1, passed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "[[]case[]] cases/hostile.yaml:2: the model changed process-wide state and left it "
            "changed: * non-daemon thread(s) left running: 'never-ends'* (detached, so the run "
            "can end)*",
        ]
    )


def test_a_thread_torch_starts_is_not_the_cases_and_a_failing_export_keeps_its_error(
    hostile: pytest.Pytester,
) -> None:
    # Its own process: torch's prefetch pool starts its first worker in this case's export.
    target = "{target: hostile.py:TorchPoolThenFails}"
    write_hostile(hostile, hostile_case("pool", target, captures="[export]", checks="[parity]"))
    result = hostile.runpytest_subprocess("--exportcheck", "-p", "no:xdist", timeout=120)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        ["[[]capture*[]] cases/hostile.yaml:2: torch.export.export (non-strict) raised*"]
    )
    result.stdout.no_fnmatch_line("*left running*")


def test_a_child_process_left_running_is_named(hostile: pytest.Pytester) -> None:
    target = "{target: hostile.py:LeavesProcess, kwargs: {how: child}}"
    write_hostile(hostile, hostile_case("child", target, captures="[export]", checks="[parity]"))
    result = hostile.runpytest_subprocess("--exportcheck", "-p", "no:xdist", timeout=120)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        ["*left it changed: 1 child process(es) left running: pid * (sleep 300) (not stopped)*"]
    )
    for pid in re.findall(r"pid (\d+) \(sleep 300\)", result.stdout.str()):
        os.kill(int(pid), signal.SIGKILL)  # the test's own cleanup


def test_a_fork_returning_into_the_session_ends_and_the_session_runs_once(
    hostile: pytest.Pytester,
) -> None:
    target = "{target: hostile.py:LeavesProcess, kwargs: {how: fork}}"
    write_hostile(hostile, hostile_case("fork", target, captures="[export]", checks="[parity]"))
    result = hostile.runpytest_subprocess("--exportcheck", "-p", "no:xdist", timeout=120)
    result.assert_outcomes(failed=1, passed=1)
    assert result.stdout.str().count("exportcheck matrix") == 1  # one session's summary
    # Each fork says so as it ends (into the item's captured output, or stderr).
    said = _printed_once_the_copies_ended(hostile, result)
    assert "a process forked in the model's code (pid " in said
    assert "came back into the test session instead of exiting; it would run the rest" in said
    # The item fails in the parent whether the copy still runs or has ended by then.
    assert re.search(r"\d+ child process\(es\) (left running|ended but never waited for)", said)


def _printed_once_the_copies_ended(pytester: pytest.Pytester, result: pytest.RunResult) -> str:
    """What the run printed, read again once the copies still running at its end have
    ended: each says so as it ends, which on a busy machine can be after pytest did."""
    running = re.search(r"child process\(es\) left running: (.*)", result.stdout.str())
    copies = [int(pid) for pid in re.findall(r"pid (\d+) \(", running.group(1))] if running else []
    deadline = time.monotonic() + 60
    while any(map(alive, copies)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return "\n".join(
        (pytester.path / name).read_text(errors="replace") for name in ("stdout", "stderr")
    )
