"""child_inputs: what an unflattened child's graph takes beyond the call eager made."""

from __future__ import annotations

import torch
from torch import nn
from torch.export import Dim, export, unflatten

from pytest_exportcheck.checks.child_inputs import MAX_ERROR, graph_inputs, short_error


class Flatten(nn.Module):
    def forward(self, x):
        return x.reshape(x.shape[0], -1)


class FlatNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.flat = Flatten()

    def forward(self, x):
        return self.flat(x) * 2


def test_a_size_the_parent_reads_is_named() -> None:
    x = torch.randn(4, 3, 8)
    program = export(FlatNet(), (x,), dynamic_shapes=({0: Dim("b", min=2, max=16)},))
    child = unflatten(program).flat
    assert graph_inputs(child, ((x,), {}), program) == (
        "(sym_size_int_1, x); besides eager's arguments it takes a size its parent reads "
        "(sym_size_int_1)"
    )


def test_inputs_it_cannot_tell_apart_are_said_so() -> None:
    graph = torch.fx.Graph()
    a, b = graph.placeholder("mul"), graph.placeholder("x")
    graph.output(graph.call_function(torch.add, (a, b)))
    child = torch.fx.GraphModule(nn.Module(), graph)
    child.arg_names = ["mul", "x"]
    assert graph_inputs(child, ((torch.ones(2),), {}), None) == (
        "(mul, x): 2 inputs where eager passes 1, and which are not eager's cannot be told "
        "(no size or lifted state among them)"
    )
    assert graph_inputs(child, ((torch.ones(2), torch.ones(2)), {}), None) == "(mul, x)"


def test_an_error_s_first_line_is_capped() -> None:
    said = short_error(RuntimeError("x" * 500), "x" * 500)
    assert said.startswith("RuntimeError: xxx") and said.endswith("…")
    assert len(said) == len("RuntimeError: ") + MAX_ERROR
