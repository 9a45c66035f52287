"""sized_leaves: which outputs a captured graph builds from sizes alone, and whether it
computes their shape (read from the graph, on the four ways torch captures)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch import nn
from torch.export import Dim

from pytest_exportcheck.checks.signal import no_signal, shape_signal
from pytest_exportcheck.checks.sized import SizedLeaf, sized_leaves
from pytest_exportcheck.comparison.compare_values import Tolerance
from pytest_exportcheck.containment.failures import Info


class Outputs(nn.Module):
    """Leaves: a zero head (reads its weight), zeros_like(x) (reads x's shape only),
    zeros of x.item() rows (an unbacked size), relu(x) * 0 (reads x's values)."""

    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(4, 3)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, x, n):
        rows = n.item()
        torch._check(rows >= 0)
        torch._check(rows <= 8)
        return self.head(x), torch.zeros_like(x), torch.zeros(rows, 2), torch.relu(x) * 0


ARGS = (torch.randn(3, 4), torch.tensor(5))


def exported(strict: bool, dynamic: bool) -> SimpleNamespace:
    shapes = {"x": {0: Dim("batch", min=2)}, "n": None} if dynamic else None
    ep = torch.export.export(Outputs(), ARGS, dynamic_shapes=shapes, strict=strict)
    return SimpleNamespace(graph_module=ep.graph_module, program=ep)


@pytest.mark.parametrize("strict", [False, True])
def test_export_reads_what_each_output_is_built_from(strict: bool) -> None:
    found = sized_leaves(exported(strict, dynamic=True), Outputs()(*ARGS))
    assert set(found) == {1, 2}  # not the head, not relu(x) * 0
    assert found[1].symbolic and found[1].shape.endswith(", 4]")
    assert found[2] == SizedLeaf(shape="[u0, 2]", symbolic=True)


def test_a_static_capture_holds_the_shape_fixed() -> None:
    found = sized_leaves(exported(False, dynamic=False), Outputs()(*ARGS))
    assert found[1] == SizedLeaf(shape="[3, 4]", symbolic=False)
    assert found[2].symbolic  # an unbacked size is computed even in a static capture


def test_dynamo_graph_capture_is_read_by_position() -> None:
    from torch._dynamo.functional_export import dynamo_graph_capture_for_export

    torch._dynamo.reset()
    gm = dynamo_graph_capture_for_export(Outputs())(*ARGS)
    found = sized_leaves(SimpleNamespace(graph_module=gm), Outputs()(*ARGS))
    assert set(found) == {1, 2}


def test_outputs_that_do_not_match_the_graph_give_no_evidence() -> None:
    record = exported(False, dynamic=True)
    assert sized_leaves(record, (torch.zeros(2),)) == {}
    assert sized_leaves(SimpleNamespace(graph_module=None), torch.zeros(2)) == {}


def test_a_constant_with_a_computed_shape_carries_signal_and_is_told_not_a_gap() -> None:
    # Its values and its shape are both compared: nothing is left unverified, so it is
    # context (an Info), and the text names no check: parity and lowered say the same.
    output = (torch.zeros(5, 2),)
    sized = {0: SizedLeaf(shape="[u0, 2]", symbolic=True)}
    assert no_signal(output, Tolerance()) == "output[0]: all 10 elements are 0.0"
    assert no_signal(output, Tolerance(), sized) is None
    (note,) = shape_signal(output, Tolerance(), sized)
    assert isinstance(note, Info)
    assert note == (
        "note: output[0]: all 10 elements are 0.0, built from sizes alone: its shape "
        "[u0, 2], which the program computes from its inputs, is what is compared, not its "
        "values"
    )


def test_a_constant_with_a_fixed_shape_stays_without_signal() -> None:
    output = torch.zeros(6)
    sized = {0: SizedLeaf(shape="[6]", symbolic=False)}
    assert no_signal(output, Tolerance(), sized) == (
        "output: all 6 elements are 0.0, built from sizes alone, its shape [6] fixed in the program"
    )
    assert shape_signal(output, Tolerance(), sized) == []


def test_a_leaf_with_values_needs_no_note() -> None:
    output = torch.arange(4.0)
    assert shape_signal(output, Tolerance(), {0: SizedLeaf("[s0]", True)}) == []


class FixedAndFollowing(nn.Module):
    def forward(self, x):
        return torch.zeros(3, 5), torch.zeros(x.shape[0] * 2)


def subject_of(model: nn.Module, *args: torch.Tensor) -> SimpleNamespace:
    return SimpleNamespace(
        model_copy=lambda: model, inputs_copy=lambda: (tuple(a.clone() for a in args), {})
    )


def test_free_dims_tells_a_static_shape_that_follows_the_inputs() -> None:
    from pytest_exportcheck.checks.sized import free_dims

    model, x = FixedAndFollowing(), torch.randn(3, 2)
    static = torch.export.export(model, (x,))
    sized = sized_leaves(
        SimpleNamespace(graph_module=static.graph_module, program=static), model(x)
    )
    assert sized == {0: SizedLeaf("[3, 5]", False), 1: SizedLeaf("[6]", False)}
    found = free_dims(subject_of(model, x), model(x), sized)
    assert found[0] == SizedLeaf("[3, 5]", False)
    assert found[1].symbolic and found[1].shape == "[6]" and found[1].follows.startswith("[2*s")
    (note,) = shape_signal(model(x), Tolerance(), found)
    assert isinstance(note, Info)
    assert "its shape [6], fixed in this program but following the inputs ([2*s" in note


def test_free_dims_without_such_a_program_leaves_the_shape_fixed() -> None:
    from pytest_exportcheck.checks.sized import free_dims

    def refuse() -> nn.Module:
        raise RuntimeError("no model")

    sized = {0: SizedLeaf("[6]", False)}
    subject = SimpleNamespace(model_copy=refuse, inputs_copy=lambda: ((torch.randn(3, 2),), {}))
    assert free_dims(subject, torch.zeros(6), sized) == sized
