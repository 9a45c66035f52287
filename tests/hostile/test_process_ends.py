"""A model that ends or replaces its process where no Python code runs after it
(``posix._exit``, libc's ``exit()``, ``os.execv``, all with status 0) cannot be stopped,
but the run cannot pass: in one process a supervising parent fails it, naming the
item; under xdist the item is ``[crashed]`` and the rest of the run goes on."""

from __future__ import annotations

import sys

import pytest
from hostilekit import hostile_case, write_hostile

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork, exec")

WAYS = ["posix._exit", "libc exit", "execv"]


def ends(how: str) -> str:
    target = f"{{target: hostile.py:EndsProcess, kwargs: {{how: {how}}}}}"
    return hostile_case("ends", target, captures="[export]", checks="[parity]")


@pytest.mark.parametrize("how", WAYS)
def test_in_one_process_the_run_fails_naming_the_item(
    hostile: pytest.Pytester, one_process: tuple[str, ...], how: str
) -> None:
    write_hostile(hostile, ends(how))
    result = hostile.runpytest_subprocess(*one_process)
    assert result.ret == 1  # the process the model ended said 0
    result.stderr.fnmatch_lines(
        [
            "exportcheck: the test process ended while running "
            "cases/hostile.yaml::ends::parity[[]export-cpu[]] (exit status 0) without "
            "reaching the end of the run*",
        ]
    )
    result.stdout.fnmatch_lines(["exportcheck: supervised: a parent process fails the run*"])


def test_under_xdist_each_item_crashed_and_the_run_goes_on(hostile: pytest.Pytester) -> None:
    """Every way of ending the process in one xdist run: each ends its worker, whose
    item fails naming it; a worker replaces it and the good case passes."""
    write_hostile(
        hostile, *(ends(how).replace("  ends:", f"  ends{n}:") for n, how in enumerate(WAYS))
    )
    result = hostile.runpytest_subprocess("--exportcheck", "-n", "2")
    assert result.ret == 1
    result.assert_outcomes(failed=len(WAYS), passed=1)
    for number in range(len(WAYS)):
        result.stdout.fnmatch_lines([f"*cases/hostile.yaml::ends{number}::parity[[]export-cpu[]]*"])
    assert "supervised" not in result.stdout.str()


def test_without_supervision_the_header_says_what_is_not_guarded(
    hostile: pytest.Pytester,
) -> None:
    write_hostile(hostile, ends("posix._exit"))
    hostile.makeini("[pytest]\nexportcheck_supervise = false\n")
    result = hostile.runpytest_subprocess("--exportcheck", "-p", "no:xdist")
    result.stdout.fnmatch_lines(
        [
            "exportcheck: not supervised (exportcheck_supervise = false): a model that ends "
            "the process ends the run"
        ]
    )
    assert result.ret == 0  # what supervision is for: the false pass it prevents
    assert "exportcheck: end of run" not in result.stdout.str()  # it did not end


UNGUARDED = (
    "exportcheck: end of run, not supervised ({}): nothing guarded this process's exit, so "
    "a run that stops before printing this line did not end, whatever its exit status"
)


def test_a_session_inside_another_is_never_run_again(hostile: pytest.Pytester) -> None:
    # Inline, inside this test run (itself started from the command line): a child
    # started here with this process's command line would run this whole test run.
    write_hostile(hostile)
    result = hostile.runpytest("--exportcheck", "-p", "no:xdist")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["exportcheck: not supervised (pytest.main() called in-process)*"])
    assert result.stdout.lines[-1] == UNGUARDED.format("pytest.main() called in-process")
