"""Torch's suggested fixes for refused dynamic dims, read from torch's real messages."""

from __future__ import annotations

import pytest
import torch

from pytest_exportcheck.capture.dynamic_shapes import case_fix, suggested_lines
from pytest_exportcheck.spec.dynamic import parse_dynamic


class UpToEight(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 8:
            return x * 2
        return x


class Pairs(torch.nn.Module):
    """view(-1, 2, ...): torch finds dx = 2*_dx, a root it introduces."""

    def forward(self, x):
        return x.view(-1, 2, x.shape[1]).sum(1)


def refusal(model: torch.nn.Module, rows: int, low: int) -> BaseException:
    dim = torch.export.Dim("dx", min=low, max=64)
    with pytest.raises(Exception) as info:
        torch.export.export(model, (torch.randn(rows, 3),), dynamic_shapes={"x": {0: dim}})
    return info.value


def spec(low: int):
    return parse_dynamic(
        {"dims": {"dx": {"min": low, "max": 64}}, "shapes": {"args[0]": {"0": "dx"}}}
    )


def test_torchs_closing_paragraph_is_not_quoted_as_a_fix() -> None:
    exc = refusal(UpToEight(), 4, 1)
    assert "The error above occurred" in str(exc)  # torch's message, as it is
    fixes = suggested_lines(str(exc))
    assert fixes == ("dx = Dim('dx', max=8)",)
    assert (
        case_fix(fixes, spec(1)) == "in the case (keeping the declared min): dx: {min: 1, max: 8}"
    )


def test_a_root_torch_introduces_for_a_derived_dim_keeps_the_declared_min() -> None:
    # torch: "_dx = Dim('_dx', max=32)" and "dx = 2*_dx" for dx declared [4, 64]; the
    # case line that keeps dx >= 4 is _dx >= 2 (not 0, as a bare copy of the max gives).
    exc = refusal(Pairs(), 6, 4)
    fixes = suggested_lines(str(exc))
    assert fixes == ("_dx = Dim('_dx', max=32)", "dx = 2*_dx")
    assert case_fix(fixes, spec(4)) == (
        "in the case (keeping the declared min): _dx: {min: 2, max: 32}; dx: {expr: 2*_dx}"
    )


def test_a_dim_torch_fixed_to_a_number_is_left_out_of_the_case() -> None:
    assert case_fix(("src_len = 7", "tgt_len = 5"), spec(1)) == (
        "in the case: leave src_len, tgt_len out of dynamic: (static)"
    )
