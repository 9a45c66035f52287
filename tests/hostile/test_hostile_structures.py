"""A model's own deep copy and outputs nested past Python's recursion limit: each is
named at its stage, never an ``[internal]`` traceback or the forward blamed."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from hostilekit import hostile_case, write_hostile


def test_a_deep_copy_that_is_not_independent_fails_its_case(hostile: pytest.Pytester) -> None:
    write_hostile(
        hostile,
        hostile_case(
            "itself", "{target: hostile.py:CopiesToItself}", checks="[parity]", captures="[export]"
        ),
        hostile_case(
            "shares", "{target: hostile.py:CopySharesLayer}", checks="[parity]", captures="[export]"
        ),
    )
    result = hostile.runpytest("--exportcheck")
    result.assert_outcomes(failed=2, passed=1)
    needs = "every compared run needs a copy of the model that shares nothing with it"
    result.stdout.fnmatch_lines(
        [
            "[[]case[]] cases/hostile.yaml:2: copy.deepcopy(model) returned the model itself "
            f"(CopiesToItself.__deepcopy__): {needs}*",
            "[[]case[]] cases/hostile.yaml:8: copy.deepcopy(model) kept the model's own "
            f"submodule `lin` as its `lin` (CopySharesLayer.__deepcopy__): {needs}*",
        ]
    )
    assert "[internal]" not in result.stdout.str()


@pytest.fixture
def default_recursion_limit() -> Iterator[None]:
    """Python's default recursion limit for the test: Inductor raises a process's to
    2000 for good once it compiles (``compile_fx``), as an earlier in-process test may
    have, and at 2000 the 200-deep output copies."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(before)


@pytest.mark.usefixtures("default_recursion_limit")
def test_an_output_nested_too_deep_is_named_at_its_stage(hostile: pytest.Pytester) -> None:
    write_hostile(
        hostile,
        hostile_case("d200", "{target: hostile.py:NestsOutput, kwargs: {depth: 200}}",
                     checks="[mutation]", captures="[export]"),
        hostile_case("d2000", "{target: hostile.py:NestsOutput, kwargs: {depth: 2000}}",
                     checks="[mutation]", captures="[export]"),
    )  # fmt: skip
    result = hostile.runpytest("--exportcheck")
    result.assert_outcomes(failed=2, passed=1)
    limit = "exceeds Python's recursion limit ([0-9]*)"
    result.stdout.fnmatch_lines(
        [
            # The program exists; copying it (as torch's own deepcopy(ep),
            # run_decompositions() and unflatten do) is what fails.
            "[[]mutation[]] cannot read mutation records: copying the program (copy.deepcopy) "
            f"{limit}: the output nests 200 deep*",
            # The forward returned: torch.export is what cannot walk its output.
            "[[]capture: other[]] cases/hostile.yaml:8: torch.export.export (non-strict) "
            f"raised: RecursionError: the output nests 2000 deep: walking it {limit}",
        ]
    )
    text = result.stdout.str()
    assert "[internal]" not in text
    assert "[eager]" not in text
