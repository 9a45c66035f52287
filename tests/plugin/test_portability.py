"""Portability: a tensor ``.to(device)`` leaves behind fails ``[eager]`` naming it.

Shown on ``meta`` (every machine has it): meta takes some CPU operands silently
(``mm``), so without the watch these models pass every meta item and fail on
every GPU.
"""

from __future__ import annotations

import pytest
from casekit import write_cases

MODELS = """
import numpy
import torch
from torch import nn

TABLE = torch.arange(16.0).reshape(4, 4)  # made at import: on the CPU whatever the build


class GlobalTable(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = TABLE

    def forward(self, x):
        return x @ self.table


class Masks(nn.Module):
    def __init__(self):
        super().__init__()
        self.masks = [torch.ones(4, 4), torch.eye(4, device="cpu")]

    def forward(self, x):
        return (x @ self.masks[0]) @ self.masks[1]


class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(Masks())

    def forward(self, x):
        return self.block(x)


class DefaultBias(nn.Module):
    def forward(self, x, bias=torch.ones(4, 4)):
        return x @ bias


class MadeInForward(nn.Module):
    def forward(self, x):
        return x + torch.from_numpy(numpy.ones(4, dtype="float32")) * torch.ones(4)


class MadeInInit(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.arange(16.0).reshape(4, 4)  # built under the device: on it

    def forward(self, x):
        return x @ self.table


class MovesItsOwn(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = TABLE

    def forward(self, x):
        return x @ self.table.to(x.device)
"""

CASE = """
cases:
  {name}:
    description: portability
    model: {{target: portable.py:{target}}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    captures: [export]
"""


@pytest.fixture
def portable(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.mkdir("cases")
    (pytester.path / "cases" / "portable.py").write_text(MODELS)
    return pytester


def run(pytester: pytest.Pytester, target: str, devices: str = "meta") -> pytest.RunResult:
    write_cases(pytester, CASE.format(name=target.lower(), target=target))
    return pytester.runpytest("--exportcheck", "--exportcheck-devices", devices)


def test_a_plain_tensor_attribute_left_on_the_cpu_is_named(portable: pytest.Pytester) -> None:
    result = run(portable, "GlobalTable")
    result.assert_outcomes(failed=2, skipped=3)
    result.stdout.fnmatch_lines(
        [
            "*[[]eager[]] cases/main.yaml:2: the model is not portable to meta: model.table: a "
            "plain tensor attribute, still on cpu; register it as a buffer (register_buffer) to "
            "have it moved (it meets meta tensors in aten.mm). The eager forward on meta would "
            "raise on a real device"
        ]
    )


def test_the_same_model_passes_on_the_cpu(portable: pytest.Pytester) -> None:
    run(portable, "GlobalTable", devices="cpu").assert_outcomes(passed=5)


def test_a_tensor_in_a_list_of_a_submodule_is_named_by_its_path(
    portable: pytest.Pytester,
) -> None:
    result = run(portable, "Nested")
    result.assert_outcomes(failed=2, skipped=3)
    result.stdout.fnmatch_lines(
        [
            "*not portable to meta: model.block.0.masks[[]1[]]: a tensor in a list attribute, still on cpu*"
        ]
    )


def test_a_tensor_default_of_forward_is_named(portable: pytest.Pytester) -> None:
    result = run(portable, "DefaultBias")
    result.assert_outcomes(failed=2, skipped=3)
    result.stdout.fnmatch_lines(
        [
            "*not portable to meta: forward's default for 'bias': a tensor made when the class "
            "was defined, still on cpu; pass it in the case's inputs, or create it on the "
            "input's device*"
        ]
    )


def test_a_tensor_created_in_forward_is_named_with_the_op_that_made_it(
    portable: pytest.Pytester,
) -> None:
    result = run(portable, "MadeInForward")
    result.assert_outcomes(failed=2, skipped=3)
    result.stdout.fnmatch_lines(
        [
            "*not portable to meta: a tensor created in forward (torch.tensor or torch.from_numpy) "
            "is on cpu, not "
            "meta, when it meets meta tensors in aten.add.Tensor; create it on the input's device "
            "(device=x.device, or x.new_zeros(...)). The eager forward on meta raised "
            "RuntimeError: Tensor on device cpu is not on the expected device meta!"
        ]
    )


def test_a_tensor_init_creates_is_built_on_the_device(portable: pytest.Pytester) -> None:
    run(portable, "MadeInInit").assert_outcomes(passed=2, skipped=3)


def test_a_stray_tensor_forward_moves_itself_is_portable(portable: pytest.Pytester) -> None:
    run(portable, "MovesItsOwn").assert_outcomes(passed=2, skipped=3)
