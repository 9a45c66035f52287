"""Tolerance policies on single leaves: what each accepts and what it says when it does not."""

from __future__ import annotations

import torch

from pytest_exportcheck.comparison.compare_values import compare_trees
from pytest_exportcheck.comparison.tolerance import Override, Tolerance


def only(problems: list[str]) -> str:
    assert len(problems) == 1, problems
    return problems[0]


def test_max_mismatch_is_a_fraction_of_the_elements() -> None:
    want, got = torch.zeros(4), torch.tensor([0.0, 0.0, 0.0, 1.0])
    assert compare_trees(want, got, tolerance=Tolerance(max_mismatch=0.25)) == []
    problem = only(compare_trees(want, got, tolerance=Tolerance(max_mismatch=0.2)))
    assert "1 / 4 elements outside tolerance" in problem
    assert "float32 default, 0.2 of elements allowed)" in problem


def test_cosine_judges_the_direction_of_the_whole_leaf() -> None:
    want = torch.tensor([1.0, 2.0, 3.0])
    assert compare_trees(want, want * 1.1, tolerance=Tolerance(policy="cosine")) == []
    problem = only(compare_trees(want, -want, tolerance=Tolerance(policy="cosine")))
    assert problem.endswith("; cosine similarity -1.000000 < 0.99 (policy cosine)")


def test_cosine_of_a_zero_leaf_is_undefined_unless_both_are_zero() -> None:
    zero = torch.zeros(3)
    assert compare_trees(zero, zero, tolerance=Tolerance(policy="cosine")) == []
    problem = only(compare_trees(zero, torch.ones(3), tolerance=Tolerance(policy="cosine")))
    assert "cosine similarity undefined (a zero vector)" in problem


def test_fp64_without_a_reference_says_allclose_decided() -> None:
    problem = only(compare_trees(torch.zeros(3), torch.ones(3), tolerance=Tolerance(policy="fp64")))
    assert problem.endswith(
        "; no fp64 reference (the model did not run in float64): allclose decided (policy fp64)"
    )


def test_fp64_compares_distances_to_the_reference() -> None:
    reference = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    eager = torch.tensor([1.1, 2.1, 3.1])
    close = torch.tensor([0.95, 2.05, 2.95])
    far = torch.tensor([2.0, 3.0, 4.0])
    fp64 = Tolerance(policy="fp64")
    assert compare_trees(eager, close, tolerance=fp64, reference=lambda: reference) == []
    problem = only(compare_trees(eager, far, tolerance=fp64, reference=lambda: reference))
    assert "vs the fp64 reference exported rmse 1 > 2 x eager rmse 0.1" in problem


def test_the_first_matching_override_wins() -> None:
    tolerance = Tolerance(
        overrides=(
            Override(dtype="float32", device="cpu", fields=(("atol", 1.0),)),
            Override(dtype="float32", fields=(("atol", 0.0),)),
        )
    )
    resolved = tolerance.resolve(torch.float32, torch.device("cpu"))
    assert resolved.atol == 1.0
    assert resolved.source == "override for float32 on cpu"
    assert tolerance.resolve(torch.float64, torch.device("cpu")) is tolerance
