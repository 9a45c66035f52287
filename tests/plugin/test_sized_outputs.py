"""Outputs constant by design whose shape follows the input are not vacuous (issue 28, item 1).

ExportDB's ``constrain_as_size_example`` returns ``torch.zeros((x.item(), 5))`` and
``dynamic_shape_constructor`` ``torch.zeros(x.shape[0] * 2)``: zeros on purpose, the
point is the shape (``ep.module()(torch.tensor(2)).shape == (2, 5)``). Where the
program computes that shape (a symbolic dim in its graph), or a static program
holds a shape that an export with every input dim free computes, a wrong one
fails the shape comparison: parity can fail, and the item passes. An output constant *and*
fixed in shape still fails as vacuous, and so does a zero head whose shape follows a
dynamic batch (its values are the point: it reads its weight).
"""

from __future__ import annotations

import pytest
from casekit import write_cases

MODELS = '''
import torch
from torch import nn


def exporting():
    return torch.compiler.is_exporting()


class NonzeroRows(nn.Module):
    """Zeros with a row per positive element of x: an unbacked (nonzero) size."""

    def __init__(self, exported_extra=0):
        super().__init__()
        self.extra = exported_extra

    def forward(self, x):
        rows = torch.nonzero(x > 0).shape[0]
        return torch.zeros(rows + self.extra if exporting() else rows, 3)


class FixedZeros(nn.Module):
    def forward(self, x):
        return torch.zeros(3, 5)


class ZeroHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 3)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, x):
        return self.head(x)
'''

EXPORTDB = """
cases:
  {name}:
    description: ExportDB {name}, zeros whose shape is the point
    model: {{target: "torch._export.db.examples.{name}:{cls}"}}
    inputs: {{args: [{arg}]}}
    captures: [export, export-strict, dynamo, dynamo-legacy]
    checks: [parity]
{extra}"""

OWN = """
cases:
  {name}:
    description: sized
    model: {{target: sized.py:{target}, kwargs: {kwargs}}}
    inputs: {{args: [{arg}]}}
    captures: [{captures}]
    checks: [parity]
{extra}"""

BATCH = """    dynamic:
      dims: {batch: {min: 2, max: 16}}
      shapes: {"args[0]": {0: batch}}
"""


@pytest.fixture
def sized(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.mkdir("cases")
    (pytester.path / "cases" / "sized.py").write_text(MODELS)
    return pytester


def own(
    pytester: pytest.Pytester,
    target: str,
    *,
    kwargs: str = "{}",
    arg: str = "{shape: [4, 4]}",
    captures: str = "export",
    extra: str = "",
) -> pytest.RunResult:
    name = target.lower()
    text = OWN.format(
        name=name, target=target, kwargs=kwargs, arg=arg, captures=captures, extra=extra
    )
    write_cases(pytester, text)
    return pytester.runpytest("--exportcheck", "-p", "no:xdist")


def test_constrain_as_size_example_is_not_vacuous(sized: pytest.Pytester) -> None:
    text = EXPORTDB.format(
        name="constrain_as_size_example",
        cls="ConstrainAsSizeExample",
        arg="{data: 4, dtype: int64}",
        extra="",
    )
    write_cases(sized, text)
    result = sized.runpytest("--exportcheck", "-p", "no:xdist")
    result.assert_outcomes(passed=4)
    result.stdout.no_fnmatch_line("*vacuous: *")


def test_dynamic_shape_constructor_with_a_dynamic_dim_is_not_vacuous(
    sized: pytest.Pytester,
) -> None:
    extra = BATCH.replace("batch: {min: 2, max: 16}", "batch: {min: 2, max: 16}")
    text = EXPORTDB.format(
        name="dynamic_shape_constructor",
        cls="DynamicShapeConstructor",
        arg="{shape: [3, 2]}",
        extra=extra,
    ).replace("[export, export-strict, dynamo, dynamo-legacy]", "[export, export-strict]")
    write_cases(sized, text)
    result = sized.runpytest("--exportcheck", "-p", "no:xdist")
    result.assert_outcomes(passed=2)


def test_dynamic_shape_constructor_static_is_not_vacuous(sized: pytest.Pytester) -> None:
    """Static, the program holds zeros(6), but an export with the input's dims free
    computes zeros(2*s0): the shape follows the input, and a wrong one fails.

    (The dynamo path is left out: the graph module torch 2.13's
    dynamo_graph_capture_for_export makes of this model raises ``NameError: name
    '_fn_args' is not defined`` when called, in plain torch too.)
    """
    text = EXPORTDB.format(
        name="dynamic_shape_constructor",
        cls="DynamicShapeConstructor",
        arg="{shape: [3, 2]}",
        extra="",
    ).replace(
        "[export, export-strict, dynamo, dynamo-legacy]", "[export, export-strict, dynamo-legacy]"
    )
    write_cases(sized, text)
    result = sized.runpytest("--exportcheck", "-p", "no:xdist")
    result.assert_outcomes(passed=3)
    result.stdout.no_fnmatch_line("*vacuous: *")


def test_an_unbacked_size_is_compared_and_noted(sized: pytest.Pytester) -> None:
    for captures in ("export", "export-strict", "dynamo", "dynamo-legacy"):
        own(sized, "NonzeroRows", captures=captures).assert_outcomes(passed=1)


def test_a_wrong_unbacked_size_fails_the_shape_comparison(sized: pytest.Pytester) -> None:
    result = own(sized, "NonzeroRows", kwargs="{exported_extra: 1}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*- output: shape eager [[]*, 3[]] != ep.module() [[]*, 3[]]*"])
    result.stdout.no_fnmatch_line("*vacuous: *")


def test_constant_zeros_of_a_fixed_shape_stay_vacuous(sized: pytest.Pytester) -> None:
    result = own(sized, "FixedZeros")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- vacuous: *(output: all 15 elements are 0.0, built from sizes alone, its shape "
            "[[]3, 5[]] fixed in the program); *where it follows an input dim, declare that dim "
            "dynamic (`dynamic:`), else xfail parity (nothing to compare)"
        ]
    )


def test_a_zero_head_on_a_dynamic_batch_stays_vacuous(sized: pytest.Pytester) -> None:
    """Its shape follows the batch, but it reads its weight: values are the point. At
    each size, shapes says so as lowered does (``signal.not_judged``), a gap."""
    write_cases(
        sized,
        OWN.format(
            name="zerohead", target="ZeroHead", kwargs="{}", arg="{shape: [4, 4]}",
            captures="export, export-strict", extra=BATCH,
        ).replace("checks: [parity]", "checks: [parity, shapes]"),
    )  # fmt: skip
    result = sized.runpytest("--exportcheck", "-p", "no:xdist")
    result.assert_outcomes(failed=2, passed=2)
    result.stdout.fnmatch_lines(["*- vacuous: *(output: all 12 elements are 0.0)*model.init*"])
    result.stdout.fnmatch_lines(
        [
            "      outputs at batch=2 (min) not judged: no output of eager carries signal "
            "(output: all 6 elements are 0.0), so a wrong program would agree with it as well"
        ]
    )


def test_a_constant_whose_shape_is_compared_is_no_gap_in_any_check(sized: pytest.Pytester) -> None:
    """Zeros of an unbacked length (NonzeroRows) and of a length following a dynamic
    batch (dynamic_shape_constructor): parity, shapes and the lowered program compare the
    shape, which a wrong program gets wrong. Before, each said it differently, as a gap:
    parity "parity compared its shape [u0, 3]", lowered "outputs not judged: ... a wrong
    program lowered to saved would agree with it", shapes "no eager output carries
    signal" at every size."""
    text = EXPORTDB.format(
        name="dynamic_shape_constructor",
        cls="DynamicShapeConstructor",
        arg="{shape: [3, 2]}",
        extra=BATCH + "    lower: [saved]\n",
    )
    text = text.replace("[export, export-strict, dynamo, dynamo-legacy]", "[export]")
    text = text.replace("checks: [parity]", "checks: [parity, shapes]")
    text += OWN.format(
        name="nonzero", target="NonzeroRows", kwargs="{}", arg="{shape: [4, 4]}",
        captures="export", extra="    lower: [saved]\n",
    ).replace("cases:\n", "")  # fmt: skip
    write_cases(sized, text)
    result = sized.runpytest("--exportcheck", "-p", "no:xdist", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["  dynamic_shape_constructor  ...", "  nonzero * . ."])
    result.stdout.no_fnmatch_line("*passing item* with *gap*")
