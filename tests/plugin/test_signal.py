"""Parity that could not fail: tiny outputs compared at their scale, constant ones vacuous.

The wrong programs here are made by the model itself: under export it negates
or scales its output (``torch.compiler.is_compiling()`` is true while tracing),
as a broken decomposition would.
"""

from __future__ import annotations

import pytest
from casekit import write_cases

MODELS = '''
import torch
from torch import nn


def exporting():
    probe = getattr(torch.compiler, "is_exporting", None) or torch.compiler.is_compiling
    return probe()


class Tiny(nn.Module):
    """Outputs of 1e-8, as mobilenet_v2's at random initialization."""

    def __init__(self, exported_factor=1.0):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.factor = exported_factor

    def forward(self, x):
        out = self.lin(x) * 1e-8
        return out * self.factor if exporting() else out


class JustAboveAtol(nn.Module):
    """Outputs of largest magnitude 1.65e-5, as efficientnet_v2_s's at random
    initialization: just above float32's atol 1e-5, so atol is most of the output."""

    def __init__(self, exported_factor=1.0):
        super().__init__()
        self.body = nn.Linear(4, 16)
        self.head = nn.Linear(16, 4)
        self.factor = exported_factor

    def forward(self, x):
        out = self.head(torch.tanh(self.body(x)))
        out = out / out.abs().max() * 1.65e-5
        return out * self.factor if exporting() else out


class ZeroHead(nn.Module):
    """A body with signal and a zero-initialized head, as vit_b_16's."""

    def __init__(self, exported_factor=1.0):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.head = nn.Linear(8, 3)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)
        self.factor = exported_factor

    def forward(self, x):
        out = self.head(torch.relu(self.body(x)))
        return out * self.factor + 1.0 if exporting() and self.factor != 1.0 else out


class BodyDiffers(nn.Module):
    """The head hides it (zero weights); the body is where the program is wrong."""

    def __init__(self):
        super().__init__()
        self.body = Perturbed()
        self.head = nn.Linear(4, 3)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, x):
        return self.head(self.body(x))


class Perturbed(nn.Module):
    def forward(self, x):
        return x + 1.0 if exporting() else x
'''

CASE = """
cases:
  {name}:
    description: signal
    model: {{target: signal.py:{target}, kwargs: {kwargs}}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    captures: [export]
    checks: [parity]
"""


@pytest.fixture
def signal(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.mkdir("cases")
    (pytester.path / "cases" / "signal.py").write_text(MODELS)
    return pytester


def run(
    pytester: pytest.Pytester, target: str, kwargs: str = "{}", extra: str = ""
) -> pytest.RunResult:
    write_cases(pytester, CASE.format(name=target.lower(), target=target, kwargs=kwargs) + extra)
    return pytester.runpytest("--exportcheck")


def test_tiny_outputs_of_a_right_program_pass(signal: pytest.Pytester) -> None:
    run(signal, "Tiny").assert_outcomes(passed=1)


@pytest.mark.parametrize("factor", [-1.0, 1000.0])
def test_a_negated_or_scaled_tiny_output_fails_at_its_scale(
    signal: pytest.Pytester, factor: float
) -> None:
    result = run(signal, "Tiny", f"{{exported_factor: {factor}}}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- output: 8 / 8 elements outside tolerance (atol=*, rtol=1.3e-06, float32 default, "
            "at the output's scale: max |eager| * < 1000 x atol 1e-05)*"
        ]
    )


def test_an_output_just_above_atol_honestly_exported_passes(signal: pytest.Pytester) -> None:
    run(signal, "JustAboveAtol").assert_outcomes(passed=1)


@pytest.mark.parametrize("factor", [0.5, -1.0])
def test_an_output_just_above_atol_is_compared_at_its_scale(
    signal: pytest.Pytester, factor: float
) -> None:
    """Against atol 1e-5, 0.5 * out (errors up to 8.3e-6) would pass: atol is the output's size."""
    result = run(signal, "JustAboveAtol", f"{{exported_factor: {factor}}}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- output: * / 8 elements outside tolerance (atol=1.65e-08, rtol=1.3e-06, float32 "
            "default, at the output's scale: max |eager| 1.65e-05 < 1000 x atol 1e-05)*"
        ]
    )


def test_a_zero_head_is_vacuous_even_when_its_body_agrees(signal: pytest.Pytester) -> None:
    result = run(signal, "ZeroHead")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- vacuous: no output of eager carries signal (output: all 6 elements are 0.0); the "
            "one submodule output that does agrees, but the root's own ops are unchecked. "
            "Parity cannot fail on these outputs: set `model.init: fan_in`*"
        ]
    )


def test_a_divergence_inside_is_named_when_the_output_cannot_tell(
    signal: pytest.Pytester,
) -> None:
    result = run(signal, "BodyDiffers")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- no output of eager carries signal (output: all 6 elements are 0.0); inside the "
            "model, body (Perturbed) differs: body output: 8 / 8 elements outside tolerance*"
        ]
    )


def test_redrawn_parameters_give_the_output_signal(signal: pytest.Pytester) -> None:
    init = "    model: {target: signal.py:ZeroHead, init: fan_in}\n"
    write_cases(
        signal,
        CASE.format(name="zerohead", target="ZeroHead", kwargs="{}").replace(
            "    model: {target: signal.py:ZeroHead, kwargs: {}}\n", init
        ),
    )
    signal.runpytest("--exportcheck").assert_outcomes(passed=1)


def test_redrawn_parameters_catch_the_wrong_head(signal: pytest.Pytester) -> None:
    write_cases(
        signal,
        CASE.format(name="zerohead", target="ZeroHead", kwargs="{exported_factor: -1.0}").replace(
            "kwargs: {exported_factor: -1.0}}", "kwargs: {exported_factor: -1.0}, init: fan_in}"
        ),
    )
    result = signal.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*- output: * elements outside tolerance*"])
