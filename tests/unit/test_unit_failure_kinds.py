"""What export refused, classified from the exceptions torch really raises."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pytest_exportcheck.containment.failures import (
    CaptureError,
    capture_error,
    capture_failure_kind,
)


class DataDependentBranch(nn.Module):
    def forward(self, x):
        return x + 1 if x.sum() > 0 else x - 1


class UnknownOutput(nn.Module):
    def forward(self, x):
        class Box:
            pass

        return Box()


class InspectsTheStack(nn.Module):
    def forward(self, x):
        import inspect

        return x * len(inspect.stack())


def export_error(model: nn.Module, *, strict: bool) -> BaseException:
    with pytest.raises(Exception) as info:
        torch.export.export(model, (torch.randn(3),), strict=strict)
    return info.value


@pytest.mark.parametrize("strict", [False, True])
def test_a_branch_on_tensor_values_is_a_data_dependent_guard(strict: bool) -> None:
    error = export_error(DataDependentBranch(), strict=strict)
    assert capture_failure_kind(error) == "data-dependent guard"


def test_an_output_that_is_no_pytree_is_an_output_type_problem() -> None:
    error = export_error(UnknownOutput(), strict=False)
    assert capture_failure_kind(error) == "pytree / output type"


def test_what_dynamo_cannot_trace_is_an_unsupported_construct() -> None:
    error = export_error(InspectsTheStack(), strict=True)
    assert capture_failure_kind(error) == "unsupported construct"


def test_a_constraint_violation_is_named_by_its_class() -> None:
    class ConstraintViolationError(RuntimeError):
        pass

    assert capture_failure_kind(ConstraintViolationError("x")) == "constraint violation"


def test_anything_else_is_other() -> None:
    assert capture_failure_kind(ValueError("no")) == "other"


def test_the_kind_is_found_along_the_chain_of_causes() -> None:
    try:
        try:
            raise export_error(DataDependentBranch(), strict=False)
        except Exception as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert capture_failure_kind(outer) == "data-dependent guard"


def test_the_headline_names_stage_and_kind_and_dependents_keep_it() -> None:
    error = capture_error(ValueError("boom"), "cases/a.yaml:3: export raised")
    assert isinstance(error, CaptureError)
    assert error.headline == "[capture: other] cases/a.yaml:3: export raised: ValueError: boom"
    pointer = error.as_dependency("cases/a.yaml::a::signature[export-cpu]")
    assert isinstance(pointer, CaptureError)
    assert pointer.headline.startswith("[capture: other] ")
