"""shapes says what is true of a size a program refuses: eager refuses it too, the dim
declared no range, or the program could not be made at all (torch.export.save raised).

Each comes from a model that really does it, on torch's real export.
"""

from __future__ import annotations

from fnmatch import fnmatchcase as fnmatch
from pathlib import Path

import pytest
from casekit import write_cases

from pytest_exportcheck.capture import capture
from pytest_exportcheck.checks.shapes import check_shapes
from pytest_exportcheck.containment.failures import Info
from pytest_exportcheck.model.subject import Subject
from pytest_exportcheck.spec import load_case_file

MODELS = '''
import torch
from torch import nn
from torch.utils import _pytree as pytree


class Conv(nn.Module):
    """A kernel of 3 over the sequence: eager raises on a sequence shorter than 3."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(2, 2, 3)

    def forward(self, x):
        return self.conv(x)


class PairsView(nn.Module):
    """view(batch, -1, 2): export guards x.size(1) // 2 != 1, eager computes pairs=1."""

    def forward(self, x):
        return x.view(x.shape[0], -1, 2).sum(-1)


class Out:
    def __init__(self, y):
        self.y = y


# No serialized_type_name: torch.export.save refuses every program that returns an Out.
pytree.register_pytree_node(Out, lambda o: ([o.y], None), lambda leaves, _: Out(leaves[0]))


class ReturnsOut(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        return Out(self.lin(x))
'''


def case(model: str, shape: str, shapes: str, dims: str = "") -> str:
    return f"""
cases:
  it:
    description: a message read
    model: {{target: shaped.py:{model}}}
    inputs: {{args: [{{shape: {shape}}}]}}
    captures: [export]
    dynamic:
{dims}      shapes:
        args[0]: {shapes}
"""


def run_shapes(pytester: pytest.Pytester) -> pytest.RunResult:
    (pytester.path / "cases" / "shaped.py").write_text(MODELS)
    return pytester.runpytest("--exportcheck", "-k", "shapes", "-p", "no:logging", "-rA")


def test_a_range_narrowed_to_what_eager_runs_is_told_not_failed(tmp_path: Path) -> None:
    # Dim.DYNAMIC(min=1, max=16) reaches torch; the kernel of 3 narrows it to [3, 16]. Eager
    # raises at 1 and 2 too: the program is right, the case declares sizes no model runs.
    # An Info shows on no passing item, so the check's findings are read here.
    (tmp_path / "shaped.py").write_text(MODELS)
    (tmp_path / "cases.yaml").write_text(
        case("Conv", "[2, 2, 8]", "{2: {dynamic: {min: 1, max: 16}}}")
    )
    (entry,) = load_case_file(tmp_path / "cases.yaml")
    findings = check_shapes(entry.case, capture("export", Subject(entry.case, "cpu")))
    assert [f for f in findings if not isinstance(f, Info)] == [], findings
    assert any(
        fnmatch(
            told,
            "note: dynamic (args[[]0[]] dim 2) is declared Dim.DYNAMIC(min=1, max=16), but "
            "export narrowed it to [[]3, 16[]]: eager raises at args[[]0[]] dim 2=1 and 2 too "
            "(RuntimeError: Calculated padded input size per channel: *): the case declares "
            "sizes the model cannot run, and the program refuses them as eager does",
        )
        for told in findings
    ), findings


def test_a_size_a_marker_without_a_range_allows_is_not_called_declared(
    project: pytest.Pytester,
) -> None:
    # Dim.AUTO: torch records [2, inf] and refuses 2, which eager computes.
    write_cases(project, case("PairsView", "[2, 6]", "{1: auto}"))
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "- at args[[]0[]] dim 1=2 (min): ep.module(), decomposed, saved and loaded refused "
            "args[[]0[]] dim 1=2, which the dim's spec allows (no range declared: Dim.AUTO, "
            "torch recorded [[]2, inf[]]): AssertionError: Guard failed: x.size()[[]1[]] // 2 != 1",
        ]
    )
    result.stdout.no_fnmatch_line("*inside the declared range*")


def test_a_program_that_cannot_be_saved_is_a_save_failure_not_a_refused_size(
    project: pytest.Pytester,
) -> None:
    dims = "      dims: {batch: {min: 2, max: 8}}\n"
    write_cases(project, case("ReturnsOut", "[3, 2]", "{0: batch}", dims))
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "- saved and loaded could not be made, so no size ran it: SerializationError: "
            "torch.export.save raised: NotImplementedError: No registered serialization name *",
        ]
    )
    result.stdout.no_fnmatch_line("*refused a size*")
