"""The scaffold writes ``model.init: fan_in`` where parity is vacuous at the model's own init.

Issue 28, item 10: for a zero-initialized head the scaffold xfailed parity on every
capture instead of writing the ``model.init: fan_in`` its own message recommends: the
case was green with no working parity check. Now it runs the case again with
``init: fan_in``, keeps it when an item that was vacuous is not any more, and xfails
only what remains vacuous (an output constant by design, which no init changes).
"""

from __future__ import annotations

import pytest
import yaml

from pytest_exportcheck.__main__ import main

MODELS = """
import torch
from torch import nn


class ZeroHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.head = nn.Linear(8, 3)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


class ZerosByDesign(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Linear(4, 4)

    def forward(self, x):
        return self.scale(x) * 0
"""
TWO_CAPTURES = ["--capture", "export", "--capture", "export-strict"]


def scaffold(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    (pytester.path / "cases" / "heads.py").write_text(MODELS)
    assert main(["new", *argv]) == 0
    return capsys.readouterr().err


def written(pytester: pytest.Pytester, name: str) -> dict:
    text = (pytester.path / "cases" / f"{name}.yaml").read_text()
    return yaml.safe_load(text)["cases"][name]


def test_a_zero_initialized_head_gets_fan_in_not_an_xfail(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    err = scaffold(
        project, capsys, "cases/heads.py:ZeroHead", "--input", "2x4", *TWO_CAPTURES,
        "-o", "cases/zero_head.yaml",
    )  # fmt: skip
    assert "ran the case on cpu: 11 passed; wrote model.init fan_in, each marked REVIEW" in err
    case = written(project, "zero_head")
    assert case["model"]["init"] == "fan_in"
    assert "xfail" not in case
    text = (project.path / "cases" / "zero_head.yaml").read_text()
    assert (
        "      # REVIEW: parity[export-cpu], parity[export-strict-cpu] vacuous at the model's "
        "own init (output: all 6 elements are 0.0); with the parameters redrawn (fan_in) they "
        "carry signal, so parity can fail\n      init: fan_in\n"
    ) in text
    result = project.runpytest("--exportcheck", "-p", "no:xdist", "-k", "parity")
    result.assert_outcomes(passed=2)


def test_an_output_constant_by_design_stays_an_xfail_at_its_own_init(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    # fan_in was tried and changed nothing: the case goes back to the model's own init.
    err = scaffold(
        project, capsys, "cases/heads.py:ZerosByDesign", "--input", "2x4", "--capture", "export",
        "-o", "cases/zeros_by_design.yaml",
    )  # fmt: skip
    assert "ran the case on cpu: 4 passed, 1 xfailed; wrote 1 xfail(s)" in err
    case = written(project, "zeros_by_design")
    assert "init" not in case["model"]
    (xfail,) = case["xfail"]
    assert (xfail["checks"], xfail["stage"]) == (["parity"], "parity")
    assert xfail["reason"].startswith("scaffold: [parity] vacuous:")
    result = project.runpytest("--exportcheck", "-p", "no:xdist")
    result.assert_outcomes(passed=4, xfailed=1)
