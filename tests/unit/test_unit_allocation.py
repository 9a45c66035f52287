"""Huge tensors are refused before torch allocates them; everything else is untouched."""

from __future__ import annotations

import pytest
import torch

from pytest_exportcheck.containment.allocation import HugeTensorError, refusing_huge_tensors


@pytest.mark.parametrize(
    "allocate",
    [
        lambda: torch.empty(100, 101),
        lambda: torch.zeros(10_001),
        lambda: torch.randn((50, 201)),
        lambda: torch.ones(3).new_empty((100, 101)),
        lambda: torch.nn.Linear(100, 101),
    ],
    ids=["empty", "zeros", "randn", "new_empty", "Linear"],
)
def test_a_tensor_over_the_limit_is_refused_naming_its_shape(allocate) -> None:
    with refusing_huge_tensors(10_000), pytest.raises(HugeTensorError) as refused:
        allocate()
    assert "is over the limit of 10000 (the exportcheck_max_elements ini option)" in str(
        refused.value
    )


def test_the_message_names_the_shape_the_count_and_the_op() -> None:
    with refusing_huge_tensors(10), pytest.raises(HugeTensorError) as refused:
        torch.zeros(4, 5)
    assert str(refused.value).startswith(
        "a tensor of shape [4, 5] (20 elements, aten.zeros.default) is over the limit of 10"
    )


def test_tensors_within_the_limit_and_views_of_any_size_pass() -> None:
    with refusing_huge_tensors(10_000):
        small = torch.nn.Linear(10, 10)
        view = torch.ones(2, 1).expand(2, 1_000_000)  # a view allocates nothing
    assert small.weight.shape == (10, 10)
    assert view.shape == (2, 1_000_000)


def test_no_limit_refuses_nothing() -> None:
    with refusing_huge_tensors(None):
        assert torch.zeros(200, 200).numel() == 40_000
