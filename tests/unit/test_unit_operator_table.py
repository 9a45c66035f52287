"""Reusing torch's table of CompositeImplicitAutograd ops gives the programs torch gives,
and sees an operator registered after it was first derived."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from pytest_exportcheck.capture import operator_table
from pytest_exportcheck.capture.operator_table import reusing_cia_ops


class Mixed(nn.Module):
    """Ops that decompose (GELU, LayerNorm, dropout) beside a buffer mutation."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 8)
        self.norm = nn.LayerNorm(8)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.add_(1)
        return nn.functional.dropout(nn.functional.gelu(self.norm(self.lin(x))), 0.0)


def decomposed_code() -> tuple[str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(Mixed(), (torch.randn(2, 4),)).run_decompositions()
    return program.graph_module.code, str(program.graph_signature)


def test_the_reused_table_gives_the_same_decomposed_program() -> None:
    plain = decomposed_code()
    with reusing_cia_ops():
        first, again = decomposed_code(), decomposed_code()
    assert first == plain
    assert again == plain


def test_torch_is_given_back_its_own_function() -> None:
    import torch.export.exported_program as exported_program

    original = exported_program._collect_all_valid_cia_ops
    with reusing_cia_ops():
        assert exported_program._collect_all_valid_cia_ops is not original
    assert exported_program._collect_all_valid_cia_ops is original


def test_an_operator_registered_later_is_in_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(operator_table, "_cached", None)
    import torch.export.exported_program as exported_program

    with reusing_cia_ops():
        before = {op.name() for op in exported_program._collect_all_valid_cia_ops()}
        library = torch.library.Library("exportcheck_table_test", "DEF")
        library.define("double(Tensor x) -> Tensor")
        library.impl("double", lambda x: x * 2, "CompositeImplicitAutograd")
        after = {op.name() for op in exported_program._collect_all_valid_cia_ops()}
    assert "exportcheck_table_test::double" not in before
    assert "exportcheck_table_test::double" in after
