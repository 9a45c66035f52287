"""Torch's suggested fixes for refused dynamic dims, read from torch's real messages."""

from __future__ import annotations

import pytest
import torch

from pytest_exportcheck.capture.dynamic_shapes import suggested_fix
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
    shown = suggested_fix(exc, spec(1))
    assert shown == (
        "torch suggests: dx = Dim('dx', max=8); "
        "in the case (keeping the declared min): dx: {min: 1, max: 8}"
    )


def test_a_root_torch_introduces_for_a_derived_dim_keeps_the_declared_min() -> None:
    # torch: "_dx = Dim('_dx', max=32)" and "dx = 2*_dx" for dx declared [4, 64]; the
    # case line that keeps dx >= 4 is _dx >= 2 (not 0, as a bare copy of the max gives).
    exc = refusal(Pairs(), 6, 4)
    shown = suggested_fix(exc, spec(4))
    assert shown == (
        "torch suggests: _dx = Dim('_dx', max=32); dx = 2*_dx; "
        "in the case (keeping the declared min): _dx: {min: 2, max: 32}; dx: {expr: 2*_dx}"
    )
