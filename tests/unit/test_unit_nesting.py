"""Nesting depths measured without recursion, and the words that name a RecursionError's cause."""

from __future__ import annotations

import sys
from collections import namedtuple
from pathlib import Path

import torch
from torch import nn
from torch.utils import _pytree as pytree

from pytest_exportcheck.model.nesting import (
    deep_nesting,
    nesting_depth,
    recursion_in,
    spec_depth,
    with_nesting,
)

Pair = namedtuple("Pair", "a b")


def nested(depth: int) -> object:
    out: object = torch.ones(1)
    for _ in range(depth):
        out = (out,)
    return out


def test_nesting_depth_counts_pytree_containers() -> None:
    assert nesting_depth(torch.ones(1)) == 0
    assert nesting_depth((torch.ones(1),)) == 1
    assert nesting_depth({"a": [1, Pair(2, (3,))]}) == 4


def test_depths_past_the_recursion_limit_are_measured() -> None:
    depth = 3 * sys.getrecursionlimit()
    assert nesting_depth(nested(depth)) == depth
    # The spec is built level by level: pytree's own flatten would recurse.
    spec = pytree.tree_flatten(nested(100))[1]
    for _ in range(depth - 100):
        spec = pytree.TreeSpec(tuple, None, [spec])
    assert spec_depth(spec) == depth


def test_a_shallow_structure_is_never_named_as_the_cause() -> None:
    assert deep_nesting(5, 2) is None
    assert deep_nesting(200, 2) == "the output nests 200 deep"
    assert deep_nesting(3, 300) == "the inputs nest 300 deep"


def test_the_first_line_says_what_is_too_deep() -> None:
    message = "where: raised: RecursionError: maximum recursion depth exceeded\nmore"
    assert with_nesting(message, "the output nests 2000 deep") == (
        "where: raised: RecursionError: the output nests 2000 deep: walking it exceeds "
        f"Python's recursion limit ({sys.getrecursionlimit()})\nmore"
    )


def test_a_recursion_error_is_found_under_the_error_raised_from_it() -> None:
    try:
        try:
            raise RecursionError("deep")
        except RecursionError as inner:
            raise ValueError("wrapped") from inner
    except ValueError as outer:
        assert isinstance(recursion_in(outer), RecursionError)
    assert recursion_in(ValueError("flat")) is None


class NestsOutput(nn.Module):
    def forward(self, x):
        return nested_output(x, 3 * sys.getrecursionlimit())


def nested_output(x: torch.Tensor, depth: int) -> object:
    out: object = x * 2
    for _ in range(depth):
        out = (out,)
    return out


def test_an_output_too_deep_to_compare_makes_eager_unfit_as_the_reference() -> None:
    # The forward returns; eager's observation keeps the output, and the value checks'
    # comparisons (pytree, recursive) cannot walk it: said, not an internal error.
    from pytest_exportcheck.api import make_case
    from pytest_exportcheck.api.given import GivenSubject

    case, _ = make_case(NestsOutput(), path=Path(__file__), line=1)
    subject = GivenSubject(case, "cpu", NestsOutput(), ((torch.randn(2),), {}))
    assert nesting_depth(subject.eager.output) == 3 * sys.getrecursionlimit()
    unsound = subject.unsound
    assert unsound is not None
    assert unsound.stage == "eager"
    assert (
        "comparing eager's output (torch's pytree) exceeds Python's recursion limit "
        f"({sys.getrecursionlimit()}): the output nests {3 * sys.getrecursionlimit()} deep, "
        "so no value check can compare a program with it"
    ) in unsound.message
